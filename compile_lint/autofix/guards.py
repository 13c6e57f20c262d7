"""Fix builder: move a statement out of the compiled graph by running it only eagerly."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from compile_lint.autofix.builders import spell
from compile_lint.rules.base import FixPlan

if TYPE_CHECKING:
    from compile_lint.linter.context import FileContext

GUARD_PREDICATE = "torch.compiler.is_compiling"


def statement_of_call(context: "FileContext", call: cst.Call) -> Optional[cst.SimpleStatementLine]:
    """The line `call` makes up on its own (`print(x)` as a statement), else None.

    Calls inside expressions, lines with several `;`-separated statements and one-line
    suites (`if a: print(x)`) are left alone: guarding them would change more than the call.
    """
    expr = context.parent(call)
    if not isinstance(expr, cst.Expr) or expr.value is not call:
        return None
    line = context.parent(expr)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    return line


def eager_only_guard(context: "FileContext", call: cst.Call, what: str) -> Optional[FixPlan]:
    """Wrap the statement `call` forms in `if not torch.compiler.is_compiling():`.

    Unsafe: under torch.compile the statement no longer runs (no message is printed or
    logged); eager runs are unchanged. Returns None when the call is not a statement.
    """
    line = statement_of_call(context, call)
    if line is None:
        return None
    predicate, imports = spell(context, GUARD_PREDICATE)
    guard = cst.If(
        test=cst.parse_expression(f"not {predicate}()"),
        body=cst.IndentedBlock(body=[line.with_changes(leading_lines=())]),
        leading_lines=line.leading_lines,
    )
    return FixPlan(
        [(line, guard)],
        f"Run the {what} only eagerly: `if not {predicate}():`",
        "unsafe",
        imports,
    )

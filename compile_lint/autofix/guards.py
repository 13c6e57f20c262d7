"""Fix builder: move a statement out of the compiled graph by running it only eagerly."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from compile_lint.autofix.builders import spell
from compile_lint.rules.base import FixPlan

if TYPE_CHECKING:
    from compile_lint.linter.context import FileContext

GUARD_PREDICATE = "torch.compiler.is_compiling"


class StatementCalls:
    """Rule mixin: remembers the calls that make up a whole line (`print(x)` as a statement).

    Lines are seen before the calls inside them, so a rule's `visit_Call` can ask
    `self.statement_of(call)` without building a parent map of the whole module.
    Calls inside expressions, lines with several `;`-separated statements and one-line
    suites (`if a: print(x)`) have no statement: guarding them would change more than the call.
    """

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) == 1 and isinstance(node.body[0], cst.Expr) and isinstance(node.body[0].value, cst.Call):
            self.__dict__.setdefault("_statement_calls", {})[node.body[0].value] = node

    def statement_of(self, call: cst.Call) -> Optional[cst.SimpleStatementLine]:
        """The line `call` forms on its own, or None."""
        return self.__dict__.get("_statement_calls", {}).get(call)


def eager_only_guard(
    context: "FileContext", line: Optional[cst.SimpleStatementLine], what: str
) -> Optional[FixPlan]:
    """Wrap `line` in `if not torch.compiler.is_compiling():`; None when there is no line.

    Unsafe: under torch.compile the statement no longer runs (no message is printed or
    logged); eager runs are unchanged.
    """
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

"""Helpers rules share to build fixes: spelling torch names, purity checks, eager-only guards."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from compile_lint.analysis.file.eager_branches import is_compiling_helper
from compile_lint.analysis.syntax.walk import visit
from compile_lint.fixes.plan import FixPlan

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


def runtime_imports(context: "FileContext") -> frozenset[str]:
    """The names the module imports when it runs (not under `if TYPE_CHECKING:`), found once per file."""
    return context.imports.module_level


def spell(context: "FileContext", qualified: str) -> tuple[str, tuple[str, ...]]:
    """How to write `qualified` (e.g. "torch.where") in this file, and imports it needs.

    Only an import the module makes when it runs counts: one under `if TYPE_CHECKING:` or in
    some function binds nothing where the fix's code runs (transformers' import_utils.py).
    """
    local = context.imports.local_name_for(qualified)
    if local is not None and local.split(".")[0] in runtime_imports(context):
        return local, ()
    module = qualified.split(".")[0]
    return qualified, (module,)


_IMPURE_BUILTINS = frozenset({"print", "input", "open", "exec", "eval", "setattr", "delattr", "next"})


def is_side_effect_free(context: "FileContext", expr: cst.BaseExpression) -> bool:
    """True when evaluating `expr` an extra time cannot change program state.

    Conservative: in-place tensor methods (`add_`), walrus, await/yield, and impure
    builtins disqualify; calls of submodules and torch functions are taken as pure.
    """
    impure = False

    class _Check(cst.CSTVisitor):
        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            nonlocal impure
            impure = True

        def visit_Await(self, node: cst.Await) -> None:
            nonlocal impure
            impure = True

        def visit_Yield(self, node: cst.Yield) -> None:
            nonlocal impure
            impure = True

        def visit_Call(self, node: cst.Call) -> None:
            nonlocal impure
            func = node.func
            if isinstance(func, cst.Attribute):
                name = func.attr.value
                if name.endswith("_") and not name.endswith("__"):
                    impure = True
                if name in ("append", "extend", "pop", "insert", "update", "setdefault", "clear",
                            "remove", "copy_", "register_buffer", "item", "tolist", "numpy"):
                    impure = True
            qualified = context.qualname(func) or ""
            if qualified.startswith("builtins.") and qualified[9:] in _IMPURE_BUILTINS:
                impure = True
            if qualified.startswith(("random.", "numpy.random.", "time.", "logging.")):
                impure = True

    visit(expr, _Check())
    return not impure


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
    """Wrap `line` in `if not torch.compiler.is_compiling():`; None when there is no line,
    or when an is-compiling test already confines it to eager or to compiled runs.

    Unsafe: under torch.compile the statement no longer runs (no message is printed or
    logged); eager runs are unchanged.
    """
    if line is None or gated_by_compile_test(context, line):
        return None
    predicate, imports = guard_predicate(context)
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


def guard_predicate(context: "FileContext") -> tuple[str, tuple[str, ...]]:
    """How to call is-compiling in this file, and the imports that needs.

    A file that already imports an is-compiling helper (transformers'
    `is_torchdynamo_compiling`, `from torch.compiler import is_compiling`) is guarded with
    it, as its authors write; else `torch.compiler.is_compiling`, spelled as torch is imported.
    """
    module_level = runtime_imports(context)  # found once per file: this is asked once per finding
    for local, qualified in context.imports.names.items():
        if local in module_level and local != qualified and is_compiling_helper(qualified):
            return local, ()
    return spell(context, GUARD_PREDICATE)


def inside(context: "FileContext", node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
    """True when `node` is `ancestor` or lies within it."""
    current: Optional[cst.CSTNode] = node
    while current is not None:
        if current is ancestor:
            return True
        current = context.parent(current)
    return False


def gated_by_compile_test(context: "FileContext", node: cst.CSTNode) -> bool:
    """True when `node` sits in code an is-compiling test already confines to eager runs or to
    compiled ones: a `not is_compiling()` guard there is redundant, or makes the code dead."""
    regions = context.regions
    gated = regions.compile_only | regions.eager_only
    if not gated:
        return False
    current: Optional[cst.CSTNode] = node
    while current is not None:
        if current in gated:
            return True
        current = context.parent(current)
    return False


def compile_only_message(context: "FileContext", node: cst.CSTNode, what: str,
                         setting: Optional[str] = None) -> Optional[str]:
    """The message for a `what` (print, log call, warning) in a branch only compiled runs take,
    where the usual advice, an eager-only guard, would never run it; None elsewhere.

    `setting`, a Dynamo config line that makes this call compile (measured on torch 2.13),
    is the step where there is one; else the call can only be split off on purpose.
    """
    if not gated_by_compile_test(context, node):
        return None
    step = (f"set `{setting}`, which compiles it" if setting
            else "move it into a `@torch.compiler.disable` helper (the graph splits there, as now)")
    return (
        f"this {what} runs only under torch.compile (an is-compiling test sends eager runs elsewhere) "
        f"and breaks the graph there; guarding it with `not is_compiling()` would make it dead code: drop it, "
        f"or {step}"
    )

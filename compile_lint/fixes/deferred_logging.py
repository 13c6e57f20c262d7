"""Deferred logging: `print`, `warnings.warn` and `logging.info(...)` run after the graph instead of breaking it.

Measured on torch 2.13 CPU (benchmarks/config_fix_calibration.py, "reorderable_logging_functions"):
with the callable added to `torch._dynamo.config.reorderable_logging_functions` the default
compile has no break and the call runs once the graph has run, with the values the graph
computed. Dynamo takes `print`, `warnings.warn` and `logging`'s module functions, never a
`logging.Logger` method (bound or not: "logging.Logger method not supported"), and only
arguments that are tensors, constants and formatted strings: `x.shape`, a number read with
`.item()` or a warning category (`warnings.warn(msg, UserWarning)`) break as before. A
tensor printed and then changed in place prints its final value (`y.add_(100)` after
`print(y)` shows y + 100), so the fix is refused where anything is updated in place after
the call (in a loop: anywhere in the function), or a printed tensor is passed on to a call
that is not a torch function.

Where the call reads only constants and tensors so kept, the fix adds the callable to the
setting right before the file's compile call (fixes/settings.py); otherwise (no compile call
in the file, an argument Dynamo refuses, a tensor changed afterwards) the rules fall back on
the eager-only guard (`if not torch.compiler.is_compiling():`), under which compiled runs
skip the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.fixes.guards import compile_only_message, eager_only_guard, inside, runtime_imports
from compile_lint.fixes.plan import FixPlan
from compile_lint.fixes.settings import Setting, file_sets, reorderable, setting_fix

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

# The callables Dynamo reorders (qualified name), measured on torch 2.13.
DEFERRABLE = frozenset({"builtins.print", "warnings.warn"} | {
    f"logging.{level}" for level in ("debug", "info", "warning", "error", "critical", "exception")})


@dataclass(frozen=True)
class Deferral:
    """What the setting does for one call: it compiles already (the file sets it), a fix, or why not."""

    compiles: bool = False
    fix: Optional[FixPlan] = None
    reason: Optional[str] = None


def deferral(context: FileContext, call: cst.Call) -> Deferral:
    """Whether `call` can run after the graph through `reorderable_logging_functions`, and the fix that sets it."""
    qualified = context.qualname(call.func) or ""
    if qualified not in DEFERRABLE:
        return Deferral(reason="Dynamo reorders only print, warnings.warn and logging's module functions")
    problem = _argument_problem(context, call) or _changed_after(context, call) or _not_at_top(context, call)
    if problem is not None:
        return Deferral(reason=problem)
    setting = _setting(context, call)
    if file_sets(context, setting):
        return Deferral(compiles=True)
    fix, reason = setting_fix(context, setting)
    return Deferral(fix=fix, reason=reason)


def report_deferrable(rule, call: cst.Call, what: str, setting_line: Optional[str]) -> None:
    """Report a print, log call or warning (`what`) with its fix: the call deferred after the graph where
    Dynamo takes it and nothing changes what it reads, else the eager-only guard; nothing where the
    file defers it already.

    `rule` is the reporting rule (a `StatementCalls` rule, for the guard's line); `setting_line` the
    setting a message names for a call only compiled runs make (None: none compiles it).
    """
    context = rule.context
    deferred = deferral(context, call)
    if deferred.compiles:
        return
    fix = deferred.fix or eager_only_guard(context, rule.statement_of(call), what)
    message = compile_only_message(context, call, what, setting_line)
    if message is None and deferred.fix is not None:
        message = f"{rule.message.split('; ')[0]}; {deferred.fix.message[0].lower()}{deferred.fix.message[1:]}"
    rule.report(call, message=message, fix=fix)


def _setting(context: FileContext, call: cst.Call) -> Setting:
    """The setting for the callable as this file spells it at the top level (`print`, `warnings.warn`, `warn`)."""
    return reorderable(cst.Module([]).code_for_node(call.func))


def _not_at_top(context: FileContext, call: cst.Call) -> Optional[str]:
    """Why the setting, at the top level, could not name the callable as the call does (`warnings` imported
    inside the function), or None."""
    head = call.func
    while isinstance(head, cst.Attribute):
        head = head.value
    if not isinstance(head, cst.Name) or head.value == "print" or head.value in runtime_imports(context):
        return None
    return f"`{head.value}` is not imported at the top of the file, where the setting goes"


def _argument_problem(context: FileContext, call: cst.Call) -> Optional[str]:
    """Why Dynamo would not reorder `call` with these arguments, or None."""
    for arg in call.args:
        if arg.star:
            return "an argument is unpacked (`*args`), which Dynamo does not reorder"
        problem = _value_problem(context, arg.value)
        if problem is not None:
            return problem
    return None


def _value_problem(context: FileContext, value: cst.BaseExpression) -> Optional[str]:
    if isinstance(value, (cst.SimpleString, cst.Integer, cst.Float, cst.ConcatenatedString)):
        return None
    if isinstance(value, cst.Name) and value.value in ("True", "False", "None"):
        return None
    if isinstance(value, cst.FormattedString):
        for part in value.parts:
            if isinstance(part, cst.FormattedStringExpression):
                problem = _value_problem(context, part.expression)
                if problem is not None:
                    return problem
        return None
    if isinstance(value, (cst.Tuple, cst.List)):
        for element in value.elements:
            problem = _value_problem(context, element.value)
            if problem is not None:
                return problem
        return None
    if context.kind(value) is Kind.TENSOR:
        return None
    code = cst.Module([]).code_for_node(value)
    return f"`{code[:40]}` is neither a tensor nor a constant, which Dynamo does not reorder"


def _changed_after(context: FileContext, call: cst.Call) -> Optional[str]:
    """Why the values the call prints may change before it runs after the graph: an in-place update after it
    (anywhere when the call is in a loop), or a printed tensor passed to a call that is not torch's."""
    function = context.function
    if function is None:
        return None
    statement = _statement(context, call)
    printed = {node.value for node in iter_nodes(call) if isinstance(node, cst.Name)}
    in_loop = _in_loop(context, call, function)
    seen = in_loop
    for node in iter_nodes(function.body):
        if node is statement:
            seen = True
            continue
        if not seen or inside(context, node, statement):
            continue
        problem = _in_place(context, node, printed)
        if problem is not None:
            return problem
    return None


def _in_place(context: FileContext, node: cst.CSTNode, printed: set[str]) -> Optional[str]:
    """An update in place (`y.add_(1)`, `y[i] = v`, `y += 1`, `out=`/`inplace=True`), or a printed
    tensor handed to a non-torch call: what it is, or None."""
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and not func.attr.value.endswith("__"):
            return f"`{func.attr.value}` updates a tensor in place after the call, which would print the new value"
        if any(arg.keyword is not None and arg.keyword.value in ("out", "inplace") for arg in node.args):
            return "a call after it writes into a tensor (`out=`, `inplace=`), which would print the new value"
        qualified = context.qualname(func) or ""
        passed = {arg.value.value for arg in node.args if isinstance(arg.value, cst.Name)} & printed
        if passed and not qualified.startswith("torch.") and not qualified.startswith("builtins."):
            return f"`{sorted(passed)[0]}` is passed on to a call that may change it before the deferred call runs"
    if isinstance(node, cst.AugAssign) and context.kind(node.target).tensorish:
        return "a tensor is updated in place (`+=`) after the call, which would print the new value"
    if isinstance(node, cst.AssignTarget) and isinstance(node.target, cst.Subscript):
        return "a tensor is written into (`y[i] = v`) after the call, which would print the new value"
    return None


def _statement(context: FileContext, node: cst.CSTNode) -> cst.CSTNode:
    current = node
    while not isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        parent = context.parent(current)
        if parent is None:
            return current
        current = parent
    return current


def _in_loop(context: FileContext, node: cst.CSTNode, function: cst.FunctionDef) -> bool:
    current = context.parent(node)
    while current is not None and current is not function:
        if isinstance(current, (cst.For, cst.While)):
            return True
        current = context.parent(current)
    return False

"""Checks: `if c: raise E(msg)` and `assert c, msg` -> `torch._assert_async` under compile, the original eagerly."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.fixes.branches.blocks import BranchFix, block_lines, no_fix, only_statement, parenthesised
from compile_lint.fixes.branches.conditions import (
    TensorCondition,
    converted_tensors,
    operand_evidence,
    tensor_condition,
)
from compile_lint.fixes.branches.torch_calls import TorchCalls, compiling_predicate
from compile_lint.fixes.plan import FixPlan

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


def ends_in_failure(node: cst.If, only: object, lines: Sequence[cst.CSTNode]) -> bool:
    """A shape's matcher: no `else`, and the branch's last line is a `raise` or a `torch._assert(...)`
    (`check` makes sure of the rest)."""
    last = only_statement(lines[-1]) if lines else None
    return node.orelse is None and (isinstance(last, cst.Raise) or isinstance(last, cst.Expr) and isinstance(
        last.value, cst.Call) and cst.Module([]).code_for_node(last.value.func) == "torch._assert")


def check(context: FileContext, node: cst.If, condition: TensorCondition, _only: object = None) -> Optional[BranchFix]:
    """`if c: raise E(msg)` -> under compile `torch._assert_async(~c, msg)`; eagerly the original `if`.

    Measured on torch 2.13 (benchmarks/results/config_fix_calibration.txt, "Checks"):
    `torch._assert_async` raises a RuntimeError with the message under the default compile
    and `fullgraph=True`; `torch._check_with(E, t.item(), ...)` and
    `torch._check_tensor_all_with` keep `E` only eagerly: compiled (they need
    `capture_scalar_outputs`, else the `.item()` breaks) they raise a RuntimeError naming
    an unbacked expression and lose the message; `torch._check` rejects a tensor. So the
    compiled side gets `_assert_async`, the eager side keeps the branch as written. A
    message formatted from values computed at run time keeps only its literal text under
    compile (`...` for each value), and statements that only build it run eagerly only.
    """
    lines = block_lines(node.body)
    statement = _failure(context, lines[-1])
    if statement is None or not all(_message_line(context, line) for line in lines[:-1]):
        return None  # more than a check: the next shape tries
    message, problem = _literal_message(context, statement)
    if problem:
        return no_fix(problem)
    builder = TorchCalls(context)
    passes: cst.BaseExpression = cst.UnaryOperation(cst.BitInvert(), parenthesised(condition.tensor))
    inner = condition.tensor
    if isinstance(inner, cst.UnaryOperation) and isinstance(inner.operator, cst.BitInvert):
        passes = inner.expression.with_changes(lpar=[], rpar=[])
    asserted = [passes] + ([message] if message is not None else [])
    check: cst.BaseStatement = cst.SimpleStatementLine(body=[cst.Expr(builder.call("torch._assert_async", *asserted))])
    if condition.guard is not None:
        check = cst.If(test=condition.guard, body=cst.IndentedBlock(body=[check]))
    compiled = cst.If(
        test=compiling_predicate(builder),
        body=cst.IndentedBlock(body=[check]),
        orelse=node.with_changes(leading_lines=()),
        leading_lines=node.leading_lines,
    )
    dropped = " (its message without the values formatted into it)" if _formats(statement) else ""
    return builder.plan(
        [(node, compiled)],
        f"Check with torch._assert_async under torch.compile (a RuntimeError there{dropped}); eager runs keep "
        "the branch")


def _failure(context: FileContext, line: cst.CSTNode) -> Optional[cst.BaseSmallStatement]:
    """`raise E(msg)` or `torch._assert(False, msg)`, the line's one statement; None otherwise."""
    statement = only_statement(line)
    if isinstance(statement, cst.Raise):
        return statement
    if (isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call)
            and context.qualname(statement.value.func) == "torch._assert" and statement.value.args
            and isinstance(statement.value.args[0].value, cst.Name) and statement.value.args[0].value.value == "False"):
        return statement
    return None


def _message_line(context: FileContext, line: cst.CSTNode) -> bool:
    """`name = value` with no effect but binding the name (the value may read tensors into Python)."""
    statement = only_statement(line)
    if isinstance(statement, cst.AnnAssign) and statement.value is not None:
        target, value = statement.target, statement.value
    elif isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        target, value = statement.targets[0].target, statement.value
    else:
        return False
    return isinstance(target, cst.Name) and not any(_changes_state(context, node) for node in iter_nodes(value))


def _changes_state(context: FileContext, node: cst.CSTNode) -> bool:
    if isinstance(node, (cst.NamedExpr, cst.Yield, cst.Await)):
        return True
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Attribute) and (func.attr.value.endswith("_") and not func.attr.value.endswith("__")
                                            or func.attr.value in _MUTATING_METHODS):
        return True
    qualified = context.qualname(func) or ""
    return qualified in _EFFECT_FUNCTIONS or qualified.startswith(("random.", "numpy.random.", "time.", "logging."))


_MUTATING_METHODS = frozenset({"append", "extend", "pop", "insert", "update", "setdefault", "clear", "remove",
                               "register_buffer"})
_EFFECT_FUNCTIONS = frozenset({"builtins.print", "builtins.input", "builtins.open", "builtins.exec", "builtins.eval",
                               "builtins.setattr", "builtins.delattr", "builtins.next"})


def _message_of(statement: cst.BaseSmallStatement) -> tuple[Optional[cst.BaseExpression], Optional[str]]:
    """The failure's message expression (None for none), or why it cannot be told."""
    if isinstance(statement, cst.Expr):  # torch._assert(False, msg)
        call = statement.value
        assert isinstance(call, cst.Call)
        return (call.args[1].value if len(call.args) > 1 else None), None
    assert isinstance(statement, cst.Raise)
    exception = statement.exc
    if statement.cause is not None or exception is None:
        return None, "a bare `raise` or `raise ... from ...` in the branch"
    if isinstance(exception, cst.Call):
        args = exception.args
        if len(args) > 1 or any(arg.keyword is not None or arg.star for arg in args):
            return None, "the exception takes more than one message argument"
        return (args[0].value if args else None), None
    return None, None


def _formats(statement: cst.BaseSmallStatement) -> bool:
    message, _ = _message_of(statement)
    return message is not None and any(isinstance(node, cst.FormattedStringExpression) for node in iter_nodes(message))


def _literal_message(context: FileContext,
                     statement: cst.BaseSmallStatement) -> tuple[Optional[cst.BaseExpression], Optional[str]]:
    """The message as a string literal Dynamo can build (a formatted value becomes `...`), or why there is none."""
    message, problem = _message_of(statement)
    if problem or message is None or isinstance(message, cst.SimpleString):
        return message, problem
    parts: list[str] = []
    pending: list[cst.BaseExpression] = [message]
    while pending:
        piece = pending.pop(0)
        if isinstance(piece, cst.ConcatenatedString):
            pending[:0] = [piece.left, piece.right]
        elif isinstance(piece, cst.SimpleString):
            parts.append(piece.evaluated_value if isinstance(piece.evaluated_value, str) else "")
        elif isinstance(piece, cst.FormattedString):
            parts.append("".join(part.value if isinstance(part, cst.FormattedStringText) else "..."
                                 for part in piece.parts))
        else:
            return None, "the error message is not a string literal"
    return cst.SimpleString(json.dumps("".join(parts), ensure_ascii=False)), None


def linearise_assert(context: FileContext, node: cst.Assert) -> BranchFix:
    """`assert t.item() <= n` -> `assert t <= n`, which Dynamo compiles into a runtime check."""
    condition = tensor_condition(context, node.test)
    if isinstance(condition, str):
        return no_fix(condition)
    if condition.guard is not None:
        return no_fix("a Python test in front of the tensor test in the assert")
    if isinstance(condition.tensor, cst.UnaryOperation):
        return no_fix("a negated tensor assert")
    return BranchFix(FixPlan([(node.test, condition.tensor)],
                              "Assert on the tensor (Dynamo compiles a tensor assert into a runtime check)",
                              "unsafe", (), operand_evidence(context, *converted_tensors(context, node.test))))

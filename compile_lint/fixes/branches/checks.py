"""Checks: `if c: raise E(msg)` and `assert c, msg` -> `torch._assert_async` under compile, the original eagerly."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.fixes.branches.blocks import BranchFix, no_fix, parenthesised
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


def check(context: FileContext, node: cst.If, condition: TensorCondition, statement: cst.Raise) -> BranchFix:
    """`if c: raise E(msg)` -> under compile `torch._assert_async(~c, msg)`; eagerly the original `if`.

    `torch._check_tensor_all_with` would keep the error type but reads the value with
    `.item()`, which breaks the default compile (measured, torch 2.13); an assert compiles
    into `_assert_async` too but would raise AssertionError eagerly.
    """
    exception = statement.exc
    if statement.cause is not None or exception is None:
        return no_fix("a bare `raise` or `raise ... from ...` in the branch")
    message: Optional[cst.BaseExpression] = None
    if isinstance(exception, cst.Call):
        args = exception.args
        if len(args) > 1 or any(arg.keyword is not None or arg.star for arg in args):
            return no_fix("the exception takes more than one message argument")
        message = args[0].value if args else None
    problem = _message_problem(context, message)
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
    return builder.plan(
        [(node, compiled)],
        "Check with torch._assert_async under torch.compile (a RuntimeError there); eager runs keep the `raise`")


def _message_problem(context: FileContext, message: Optional[cst.BaseExpression]) -> Optional[str]:
    """Why Dynamo could not build the message as a constant string, or None."""
    if message is None or isinstance(message, cst.SimpleString):
        return None
    if not isinstance(message, (cst.FormattedString, cst.ConcatenatedString)):
        return "the error message is not a string literal"
    for node in iter_nodes(message):
        if isinstance(node, (cst.Call, cst.Subscript)):
            return "the error message formats values computed at run time"
        if isinstance(node, cst.Name) and context.kind(node) in (Kind.TENSOR, Kind.MAYBE_TENSOR, Kind.DATA):
            return f"the error message formats `{node.value}`, a tensor"
    return None


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

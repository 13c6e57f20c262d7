"""Returns: `if c: return a` ... `return b` -> the statements between, then `return torch.where(c, a, b)`
(or `torch.cond`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

import libcst as cst

from compile_lint.analysis.syntax.names import names_read
from compile_lint.fixes.branches.assignments import (
    branch_values,
    calls_named,
    substitute,
)
from compile_lint.fixes.branches.blocks import (
    WHERE_NOTE,
    BranchFix,
    assignment_steps,
    block_and_index,
    block_lines,
    no_fix,
    only_statement,
)
from compile_lint.fixes.branches.choice import branch_fix_choice
from compile_lint.fixes.branches.conditions import (
    TensorCondition,
)
from compile_lint.fixes.branches.differing_shapes import ResultSite
from compile_lint.fixes.branches.hazards import (
    stateful_argument,
    untaken_arm_hazard,
)
from compile_lint.fixes.branches.selection import Arms, select
from compile_lint.fixes.branches.torch_calls import TorchCalls, replacement_for

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


def returns(context: FileContext, node: cst.If, condition: TensorCondition) -> BranchFix:
    """`if c: return a` then the rest of the block ending in `return b` -> `return torch.where(c, a, b)`."""
    true_value = _returned(context, node.body)
    if isinstance(true_value, str):
        return no_fix(true_value)
    block, index = block_and_index(context, node)
    if isinstance(node.orelse, cst.Else):
        tail_lines = block_lines(node.orelse.body)
        replaced_tail = False
    elif node.orelse is None:
        if block is None:
            return no_fix("the guard is not in a block of statements")
        tail_lines = list(block.body[index + 1:])
        replaced_tail = True
    else:
        return no_fix("an `elif` after a guarded return")
    if not tail_lines or not isinstance(only_statement(tail_lines[-1]), cst.Return):
        return no_fix("the code after the guard does not end in a `return`")
    final = only_statement(tail_lines[-1])
    assert isinstance(final, cst.Return)
    if final.value is None:
        return no_fix("the final `return` has no value")
    steps = assignment_steps(context, tail_lines[:-1])
    if isinstance(steps, str):
        return no_fix(steps.replace("the branch", "the code between the guard and its return"))
    changed = {step.name for step in steps}
    stale = (names_read(true_value) | names_read(condition.tensor)) & changed
    if stale:
        return no_fix(f"the guarded return reads `{sorted(stale)[0]}`, which the code after the guard reassigns")
    tail_values = [step.value for step in steps]
    for value in tail_values:
        hazard = stateful_argument(context, [value])
        if hazard:
            return no_fix(hazard)
    hazard = untaken_arm_hazard(context, [*tail_values, final.value], condition.tensor)
    builder = TorchCalls(context)
    arms = Arms(context, condition)
    if hazard is not None:
        if tail_values:
            return no_fix(hazard)
        prefer = "cond"
    else:
        prefer = branch_fix_choice(context)
    chosen = select(context, builder, arms, true_value, final.value, prefer, ResultSite(node, returned=True))
    if isinstance(chosen, str):
        return no_fix(chosen)
    if condition.guard is not None:
        chosen = cst.IfExp(test=condition.guard, body=chosen, orelse=final.value)
    new_return = tail_lines[-1].with_changes(body=[final.with_changes(value=chosen)])
    message = ("Return torch.cond(cond, ...)" if calls_named(chosen, "cond") else
               f"Return torch.where(cond, a, b) ({WHERE_NOTE})")
    if not replaced_tail:
        lines = [*tail_lines[:-1], new_return]
        return builder.plan([(node, replacement_for(None, lines, node))], message)
    following = tail_lines[0]
    # The tail is statement lines of the block (they have leading lines); mypy sees CSTNodes.
    if following is not tail_lines[-1]:
        moved = following.with_changes(
            leading_lines=[*node.leading_lines, *following.leading_lines])  # type: ignore[attr-defined]
    else:
        moved = new_return.with_changes(
            leading_lines=[*node.leading_lines, *new_return.leading_lines])  # type: ignore[attr-defined]
    replacements: list = [(node, cst.RemovalSentinel.REMOVE)]
    if following is tail_lines[-1]:
        replacements.append((tail_lines[-1], moved))
    else:
        replacements += [(following, moved), (tail_lines[-1], new_return)]
    return builder.plan(replacements, message)


def _returned(context: FileContext, block: cst.BaseSuite) -> Union[cst.BaseExpression, str]:
    """The value a branch of assignments then `return value` returns, in terms of values before it."""
    lines = block_lines(block)
    last = only_statement(lines[-1])
    if not isinstance(last, cst.Return):
        return "the branch does not end in its `return`"
    if last.value is None:
        return "the branch returns nothing"
    steps = assignment_steps(context, lines[:-1])
    if isinstance(steps, str):
        return steps
    found = branch_values(context, steps)
    if isinstance(found, str):
        return found
    values = found[0]
    value = last.value
    for name, bound in values.items():
        if name in names_read(value):
            value = substitute(value, name, bound)
    return value

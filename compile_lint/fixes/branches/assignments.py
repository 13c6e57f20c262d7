"""Value selection: `if c: x = a` / `else: x = b` (several names, augmented assignments, `elif` chains,
temporaries) -> one `x = torch.where(c, a, b)` per name; a guarded update without `else` keeps the old value."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Union, cast

import libcst as cst

from compile_lint.analysis.kinds.certainty import tensor_before
from compile_lint.analysis.syntax.names import names_read
from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.fixes.branches.blocks import (
    WHERE_NOTE,
    BranchFix,
    Step,
    assignment_steps,
    block_lines,
    fresh_name,
    no_fix,
    only_statement,
    parenthesised,
    reads_tensor_data,
    scope_of,
)
from compile_lint.fixes.branches.choice import branch_fix_choice
from compile_lint.fixes.branches.conditions import (
    TensorCondition,
    tensor_condition,
)
from compile_lint.fixes.branches.differing_shapes import ResultSite
from compile_lint.fixes.branches.hazards import (
    ShapeModel,
    data_reads,
    dtype_changes,
    enclosing_loop,
    untaken_arm_hazard,
)
from compile_lint.fixes.branches.selection import Arms, select
from compile_lint.fixes.branches.torch_calls import TorchCalls, assignment_line, replacement_for

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


def branch_values(context: FileContext, steps: Sequence[Step], temporaries: frozenset = frozenset()
                  ) -> Union[tuple[dict[str, cst.BaseExpression], list[cst.CSTNode]], str]:
    """Name -> the value a branch leaves in it, in terms of the values before the branch.

    `temporaries` (names only this branch reads) are not selected: their assignments are
    returned as lines to run first, unconditionally. Another name assigned and then read
    once later in the branch is substituted into that read (`x = x * 2; x = x + 1` ->
    `x * 2 + 1`); anything else that reads a name the branch assigned earlier is a
    dependency this form cannot express.
    """
    values: dict[str, cst.BaseExpression] = {}
    hoisted: list[cst.CSTNode] = []
    uses: dict[str, int] = {}
    shapes = ShapeModel(context)
    for step in steps:
        read = names_read(step.value)
        if step.name in temporaries:
            if read & set(values):
                return f"the temporary `{step.name}` reads `{sorted(read & set(values))[0]}`, set earlier in the branch"
            hoisted.append(assignment_line(step.name, step.value, step.line))
            continue
        value = step.value
        for name in read & set(values):
            if name not in data_reads(step.value) and shapes.relation(values[name], cst.Name(name)) == "same" \
                    and not dtype_changes(values[name]):
                continue  # only `.shape`/`.dtype` is read, which the branch leaves as it was
            count = sum(1 for n in iter_nodes(step.value) if isinstance(n, cst.Name) and n.value == name)
            uses[name] = uses.get(name, 0) + count
            if uses[name] > 1:
                return f"`{name}` is assigned and then read more than once in the branch"
            value = substitute(value, name, values[name])
        values[step.name] = value
    return values, hoisted


class _Substitute(cst.CSTTransformer):
    def __init__(self, name: str, value: cst.BaseExpression) -> None:
        self.name = name
        self.value = value

    def leave_Attribute(self, original_node, updated_node):  # keep attribute names
        return updated_node.with_changes(attr=original_node.attr)

    def leave_Name(self, original_node, updated_node):
        if original_node.value == self.name:
            return parenthesised(self.value)
        return updated_node


def substitute(expr: cst.BaseExpression, name: str, value: cst.BaseExpression) -> cst.BaseExpression:
    # _Substitute swaps names for expressions and removes nothing: an expression comes back.
    return cast(cst.BaseExpression, expr.visit(_Substitute(name, value)))


def assignments(context: FileContext, node: cst.If, condition: TensorCondition) -> BranchFix:
    """`if c: x = a` [`else: x = b`] (several names, elif chains) -> one select per name."""
    scope = scope_of(context)
    if scope is None:
        return no_fix("not inside a function")
    if node.orelse is not None and condition.guard is not None:
        return no_fix("a Python test in front of the tensor test, with an `else`")
    loop = enclosing_loop(context, node)
    true_steps = assignment_steps(context, block_lines(node.body))
    if isinstance(true_steps, str):
        return no_fix(true_steps)
    false_steps: list[Step] = []
    if isinstance(node.orelse, cst.Else):
        found_steps = assignment_steps(context, block_lines(node.orelse.body))
        if isinstance(found_steps, str):
            return no_fix(found_steps)
        false_steps = found_steps
    true_names = {step.name for step in true_steps}
    false_names = {step.name for step in false_steps}
    temporaries = frozenset(
        name for name in true_names ^ false_names
        if not scope.assigned_before(name, node) and not scope.read_outside(name, [node], loop))
    found = branch_values(context, true_steps, temporaries)
    if isinstance(found, str):
        return no_fix(found)
    true_values, hoisted = found
    false_values: dict[str, cst.BaseExpression] = {}
    if isinstance(node.orelse, cst.Else):
        found = branch_values(context, false_steps, temporaries)
        if isinstance(found, str):
            return no_fix(found)
        false_values, more = found
        hoisted += more
    elif isinstance(node.orelse, cst.If):
        merged = _elif_values(context, node.orelse)
        if isinstance(merged, str):
            return no_fix(merged)
        false_values = merged
    names = list(dict.fromkeys([*true_values, *false_values]))
    if not names:
        return no_fix("the branch assigns nothing")
    temporary_values = [step.value for step in (*true_steps, *false_steps) if step.name in temporaries]
    hazard = untaken_arm_hazard(context, temporary_values, condition.tensor) if temporary_values else None
    if hazard:
        return no_fix(hazard)
    builder = TorchCalls(context)
    arms = Arms(context, condition)
    prefer = branch_fix_choice(context)
    lines: list[cst.CSTNode] = list(hoisted)
    written: set[str] = set()
    same_layout: set[str] = set()
    if len(names) > 1 and names_read(condition.tensor) & set(names):
        # The later selections must see the test as it was before the first one.
        taken = fresh_name(context, "take_branch")
        lines.append(assignment_line(taken, condition.tensor))
        arms.test = cst.Name(taken)
    for name in names:
        if_true = true_values.get(name)
        if_false = false_values.get(name)
        if (if_true is None or if_false is None) and not scope.assigned_before(name, node):
            return no_fix(f"`{name}` is assigned on one side only and has no value before the branch")
        if (if_true is None or if_false is None) and not tensor_before(context, name):
            return no_fix(f"`{name}` is not certainly a tensor before the branch (it may be None or a Python value)")
        value_true = if_true if if_true is not None else cst.Name(name)
        value_false = if_false if if_false is not None else cst.Name(name)
        reads = names_read(value_true) | names_read(value_false) | names_read(arms.test)
        values_read = data_reads(value_true) | data_reads(value_false) | data_reads(arms.test)
        # A selection whose arms have one shape and dtype leaves `.shape`/`.dtype` as they were.
        stale = (values_read & written) | (reads & (written - same_layout))
        if stale:
            return no_fix(f"the branch's assignments read `{sorted(stale)[0]}`, which another one sets")
        chosen = select(context, builder, arms, value_true, value_false, prefer, ResultSite(node, name=name))
        if isinstance(chosen, str):
            return no_fix(chosen)
        lines.append(assignment_line(name, chosen, _step_line(context, node, name)))
        written.add(name)
        if arms.shapes.relation(value_true, value_false) == "same" and not (
                dtype_changes(value_true) or dtype_changes(value_false)):
            same_layout.add(name)
    used = "torch.cond" if any(calls_named(line, "cond") for line in lines) else "torch.where"
    what = ", ".join(f"`{name}`" for name in names)
    note = WHERE_NOTE if used == "torch.where" else "one branch runs"
    return builder.plan([(node, replacement_for(condition.guard, lines, node))],
                        f"Assign {what} with {used}(cond, a, b) ({note})")


def calls_named(node: cst.CSTNode, attribute: str) -> bool:
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == attribute
               or isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == attribute
               for n in iter_nodes(node))


def _step_line(context: FileContext, node: cst.If, name: str) -> Optional[cst.CSTNode]:
    for line in block_lines(node.body):
        small = only_statement(line)
        if isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Name) \
                and small.targets[0].target.value == name:
            return line
    return None


def _values_of(context: FileContext, block: cst.BaseSuite) -> Union[dict[str, cst.BaseExpression], str]:
    steps = assignment_steps(context, block_lines(block))
    if isinstance(steps, str):
        return steps
    found = branch_values(context, steps)
    return found if isinstance(found, str) else found[0]


def _elif_values(context: FileContext, node: cst.If) -> Union[dict[str, cst.BaseExpression], str]:
    """The values an `elif ...` (and what follows it) leaves, as nested selections."""
    true_values = _values_of(context, node.body)
    if isinstance(true_values, str):
        return true_values
    if isinstance(node.orelse, cst.Else):
        false_values = _values_of(context, node.orelse.body)
    elif isinstance(node.orelse, cst.If):
        false_values = _elif_values(context, node.orelse)
    else:
        false_values = {}
    if isinstance(false_values, str):
        return false_values
    condition = tensor_condition(context, node.test)
    builder = TorchCalls(context)
    merged: dict[str, cst.BaseExpression] = {}
    for name in dict.fromkeys([*true_values, *false_values]):
        if_true = true_values.get(name, cst.Name(name))
        if_false = false_values.get(name, cst.Name(name))
        if isinstance(condition, str):
            if any(reads_tensor_data(context, part) for part in (node.test,)):
                return condition
            merged[name] = cst.IfExp(test=node.test, body=if_true, orelse=if_false)  # a Python elif
            continue
        if condition.guard is not None:
            return "an `elif` with a Python test in front of its tensor test"
        chosen = select(context, builder, Arms(context, condition), if_true, if_false, branch_fix_choice(context))
        if isinstance(chosen, str):
            return chosen
        merged[name] = chosen
    return merged

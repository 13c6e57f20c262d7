"""Skipped work in loops (LayerDrop): `if c: continue` and `to_drop` flags, as one graph.

The code the branch skips runs anyway and `torch.where(c, old, new)` keeps the old values
when the draw says skip: one graph, but the layer always runs (slower; its random draws
and zero gradients differ from skipping it), so the fix is unsafe and withheld where a
skipped layer would change state (a cache passed to it, transformers' output-recording
hooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Union

import libcst as cst

from compile_lint.analysis.kinds.certainty import tensor_before
from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.names import names_read
from compile_lint.fixes.branches.blocks import (
    LOOP_NOTE,
    BranchFix,
    always_binds,
    assignment_steps,
    block_and_index,
    block_lines,
    no_fix,
    only_statement,
    reads_tensor_data,
    scope_of,
)
from compile_lint.fixes.branches.conditions import TensorCondition
from compile_lint.fixes.branches.hazards import (
    enclosing_loop,
    short_code,
    stateful_argument,
    untaken_arm_hazard,
)
from compile_lint.fixes.branches.selection import Arms, select
from compile_lint.fixes.branches.torch_calls import TorchCalls, assignment_line, replacement_for
from compile_lint.fixes.guards import is_side_effect_free

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


# ----- loops -----------------------------------------------------------------------------------


def skip_rest_of_loop(context: FileContext, node: cst.If, condition: TensorCondition) -> BranchFix:
    """`if c: continue` (layer-drop) -> the rest of the body computed, old values kept where `c`."""
    loop = enclosing_loop(context, node)
    if loop is None:
        return no_fix("`continue` outside a loop body")
    inner_block, inner_index = block_and_index(context, node)
    anchor: cst.CSTNode = node
    owner = context.parent(inner_block) if inner_block is not None else None
    nested = False
    if isinstance(owner, cst.If) and owner.orelse is None and inner_block is not None \
            and inner_index == len(inner_block.body) - 1 and owner is not loop:
        anchor, nested = owner, True
    block, index = block_and_index(context, anchor)
    if block is None or context.parent(block) is not loop:
        return no_fix("the `continue` is nested in more than one block of the loop")
    rest = list(block.body[index + 1:])
    if not rest:
        return no_fix("nothing follows the `continue` in the loop body")
    if isinstance(loop, cst.For) and context.kind(loop.iter) is Kind.TENSOR:
        return no_fix(f"`for {short_code(loop.target)} in {short_code(loop.iter)}` iterates over a tensor: its steps "
                      "depend on data")
    return skip_with_where(context, node, condition, rest, loop, nested or condition.guard is not None)


def skip_with_where(context: FileContext, node: cst.If, condition: TensorCondition, rest: Sequence[cst.CSTNode],
                     loop: Optional[cst.CSTNode], keep_rest: bool, flag: Optional[cst.CSTNode] = None) -> BranchFix:
    """The code `node` skips, computed anyway with `NAME = torch.where(skip, NAME, new)` per name."""
    hazard = (stateful_argument(context, rest) or untaken_arm_hazard(context, rest, condition.tensor)
              or _recorded_by_hooks(context))
    if hazard:
        return no_fix(hazard)
    selector = _SkipSelector(context, node, condition, rest, loop)
    new_lines = selector.lines(rest)
    if isinstance(new_lines, str):
        return no_fix(new_lines.replace("the branch", "the skipped code"))
    message = f"Keep one graph: compute the skipped code and select with torch.where ({LOOP_NOTE})"
    builder = selector.builder
    if flag is not None or keep_rest:
        copies = [line.with_changes(leading_lines=()) if i == 0 else line for i, line in enumerate(new_lines)]
        tail = [flag] if flag is not None else [cst.SimpleStatementLine(body=[cst.Continue()])]
        guard = condition.guard if flag is None else None
        return builder.plan([(node, replacement_for(guard, [*copies, *tail], node))], message)
    # The `if` is directly in the loop body: the code after it becomes the selections.
    replacements: list = [(node, cst.RemovalSentinel.REMOVE)]
    for i, (old, new) in enumerate(zip(rest, new_lines)):
        if i == 0:
            # `rest` is lines of an indented loop body: statements, which have leading lines.
            new = new.with_changes(leading_lines=[*node.leading_lines, *new.leading_lines])  # type: ignore[attr-defined]
        replacements.append((old, new))
    return builder.plan(replacements, message)


# Decorators that install forward hooks recording every layer's outputs (transformers 5).
_OUTPUT_RECORDING_DECORATORS = ("capture_outputs", "check_model_inputs")


def _recorded_by_hooks(context: FileContext) -> Optional[str]:
    """Why running a skipped layer would show in the outputs through recording hooks, or None."""
    function = context.function
    for decorator in function.decorators if function is not None else ():
        target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        name = short_code(target).rsplit(".", 1)[-1]
        if name in _OUTPUT_RECORDING_DECORATORS:
            return (f"`@{name}` records each layer's outputs through hooks: a layer run when it "
                    "would be skipped adds to the returned hidden states and attentions")
    return None


class _SkipSelector:
    """Rewrites skipped lines one for one: outputs selected with torch.where, temporaries as they are.

    Python `if` statements among them keep their test (it does not depend on tensor data)
    and have their bodies rewritten the same way.
    """

    def __init__(self, context: FileContext, node: cst.If, condition: TensorCondition, rest: Sequence[cst.CSTNode],
                 loop: Optional[cst.CSTNode]) -> None:
        self.context = context
        self.node = node
        self.condition = condition
        self.region = [node, *rest]
        self.loop = loop
        self.scope = scope_of(context)
        self.builder = TorchCalls(context)
        self.arms = Arms(context, condition)
        self.written: set[str] = set()

    def lines(self, lines: Sequence[cst.CSTNode]) -> Union[list[cst.CSTNode], str]:
        new_lines = []
        for line in lines:
            new = self.line(line)
            if isinstance(new, str):
                return new
            new_lines.append(new)
        return new_lines

    def line(self, line: cst.CSTNode) -> Union[cst.CSTNode, str]:
        if isinstance(line, cst.If):
            if reads_tensor_data(self.context, line.test) or not is_side_effect_free(self.context, line.test):
                return "the skipped code branches on a tensor"
            body = self.lines(block_lines(line.body))
            if isinstance(body, str):
                return body
            orelse = line.orelse
            if isinstance(orelse, cst.Else):
                other = self.lines(block_lines(orelse.body))
                if isinstance(other, str):
                    return other
                orelse = orelse.with_changes(body=orelse.body.with_changes(body=other))
            elif orelse is not None:
                return "the skipped code has an `elif` chain"
            return line.with_changes(body=line.body.with_changes(body=body), orelse=orelse)
        steps = assignment_steps(self.context, [line])
        if isinstance(steps, str):
            return steps
        if not steps:
            return line
        step = steps[0]
        if self.scope is None:
            return "not inside a function"
        output = self.scope.read_outside(step.name, self.region, self.loop) or self.scope.assigned_before(
            step.name, self.node)
        if not output:
            self.written.add(step.name)
            return line  # a temporary only the skipped code reads
        if not self.scope.assigned_before(step.name, self.node) or not tensor_before(self.context, step.name):
            return f"`{step.name}` has no tensor value before the skipped code"
        if names_read(self.condition.tensor) & self.written:
            return "the skip condition reads a value the skipped code changes"
        chosen = select(self.context, self.builder, self.arms, cst.Name(step.name), step.value, "where")
        if isinstance(chosen, str):
            return chosen
        self.written.add(step.name)
        return assignment_line(step.name, chosen, line)


def flag_consumer(context: FileContext, node: cst.If, flag: str, condition: TensorCondition) -> Optional[BranchFix]:
    """`if c: to_drop = True` ... `if not to_drop: h = layer(h)` -> the selection, then the flag."""
    anchor: cst.CSTNode = node
    while True:
        block, index = block_and_index(context, anchor)
        if block is None:
            return None
        owner = context.parent(block)
        if isinstance(owner, cst.If) and owner.orelse is None and index == len(block.body) - 1:
            anchor = owner
            continue
        break
    if index + 1 >= len(block.body):
        return None
    consumer = block.body[index + 1]
    if not (isinstance(consumer, cst.If) and consumer.orelse is None
            and isinstance(consumer.test, cst.UnaryOperation) and isinstance(consumer.test.operator, cst.Not)
            and isinstance(consumer.test.expression, cst.Name) and consumer.test.expression.value == flag):
        return None
    scope = scope_of(context)
    if scope is None or len(scope.reads.get(flag, [])) != 1:
        return no_fix(f"`{flag}` is read more than once")
    if not any(isinstance(only := only_statement(line), cst.Assign) and always_binds(line, flag)
               and isinstance(only.value, cst.Name) and only.value.value == "False"
               for line in block.body[:index]):
        return no_fix(f"`{flag}` is not reset to False before the branch that sets it")
    if condition.guard is not None:
        return no_fix("a Python test in front of the tensor test that sets the flag")
    flag_line = block_lines(node.body)[0]
    return skip_with_where(context, node, condition, block_lines(consumer.body), enclosing_loop(context, node),
                           keep_rest=True,
                           flag=flag_line.with_changes(leading_lines=()) if hasattr(flag_line, "leading_lines")
                           else flag_line)


def no_break_fix(context: FileContext, node: cst.If, condition: TensorCondition) -> BranchFix:
    """`if c: break`: no rewrite (the loop ends after a data-dependent number of iterations)."""
    return no_fix("`break` ends the loop after a data-dependent number of iterations")


def set_flag(context: FileContext, node: cst.If, condition: TensorCondition, flag: str) -> BranchFix:
    """`if c: flag = True`: rewritten with the `if not flag:` that reads it (`flag_consumer`), or why not."""
    fix = flag_consumer(context, node, flag, condition)
    return fix or no_fix(f"the branch sets the Python flag `{flag}`: only a flag read once, by a "
                         f"following `if not {flag}:` without `else`, is rewritten")

"""Rewrite tensor control flow as one graph: which rewrite a tensor `if` gets, by its shape.

A tensor `if` is matched against `SHAPES` in order; the first shape that matches rewrites
it (or says why there is no rewrite; a shape may also decline, and the next one tries).
Each shape's rewrite lives in a module of its own:

| shape | module | rewrite |
| --- | --- | --- |
| `if c: x = None` (no `else`) | `shortcuts` | taken only eagerly: compiled code keeps the general path |
| `if c: raise E(msg)` / `torch._assert(False, msg)` | `checks` | `torch._assert_async(~c, msg)`, the branch eagerly |
| `if c: continue` | `skipped_work` | the rest of the loop body computed, old values kept where `c` |
| `if c: break` | `skipped_work` | none (the iteration count depends on data) |
| `if c: flag = True` | `skipped_work` | with the `if not flag:` that reads it |
| `if m.any(): x[m] = v` | `masked_writes` | the write always runs under compile |
| a branch that returns | `returns` | `return torch.where(c, a, b)` (or `torch.cond`) |
| assignments | `assignments` | `x = torch.where(c, a, b)` per name |

Ternaries (`ternaries`) and asserts (`checks.linearise_assert`) are rewritten alike, and a
value read into Python that only feeds such a test (`t.item() > 0`) gets the rewrite of
the test it decides (`linearise_data_read`). Every rewrite is withheld where the code shows
it would change the result (`hazards`): arms of different shapes, an untaken arm that may
raise or put NaN into gradients, state mutated by an arm or between a guard and its
return. `torch.cond` runs only the taken branch; it is used when the configuration asks for
it (`tensor-branch-fix = "cond"`, `choice`) or where `torch.where` is withheld for an
untaken arm that may fail, and only when both branches are single tensor expressions of
one shape, or of shapes that differ where `differing_shapes` measured torch.cond exact
(the first dimension, no autograd, a result not broadcast). What the rewrites are built
from is in `blocks` (steps, scope), `torch_calls` (the code) and `selection` (`where` or
`cond`); conditions as Python tests plus one bool tensor in `conditions`.

To add a shape: write its module here (a function `(context, node, condition, ...)` that
returns a `BranchFix`), add a `Shape` to `SHAPES` where it must be tried, and give the rule
that reports it an invalid example with `fixed=` (tests/test_fix_proof.py proves it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Sequence

import libcst as cst

from compile_lint.fixes.branches import (
    assignments,
    checks,
    masked_writes,
    returns,
    shortcuts,
    skipped_work,
)
from compile_lint.fixes.branches.blocks import NO_WHILE_FIX, BranchFix, block_lines, no_fix, only_statement
from compile_lint.fixes.branches.checks import linearise_assert
from compile_lint.fixes.branches.conditions import TensorCondition, tensor_condition
from compile_lint.fixes.branches.ternaries import linearise_ifexp

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


@dataclass(frozen=True)
class Shape:
    """One shape of tensor `if` statement and its rewrite.

    `matches(node, only, lines)`: whether `node` has the shape (`lines`: its body's lines,
    `only`: the body's single statement, or None). `rewrite(context, node, condition, only)`:
    the fix or the reason there is none, or None to let the next shape try.
    """

    name: str
    matches: Callable[[cst.If, Optional[cst.BaseSmallStatement], Sequence[cst.CSTNode]], bool]
    rewrite: Callable[["FileContext", cst.If, TensorCondition, Optional[cst.BaseSmallStatement]], Optional[BranchFix]]


def _alone(statement_type: type) -> Callable[[cst.If, Optional[cst.BaseSmallStatement], Sequence[cst.CSTNode]], bool]:
    """The body is one `statement_type` statement, and there is no `else`."""
    return lambda node, only, lines: node.orelse is None and isinstance(only, statement_type)


def _sets_to_none(node: cst.If, only: Optional[cst.BaseSmallStatement], lines: Sequence[cst.CSTNode]) -> bool:
    return (node.orelse is None and isinstance(only, cst.Assign) and isinstance(only.value, cst.Name)
            and only.value.value == "None")


def _sets_flag(node: cst.If, only: Optional[cst.BaseSmallStatement], lines: Sequence[cst.CSTNode]) -> bool:
    return (node.orelse is None and isinstance(only, cst.Assign) and is_true(only.value)
            and isinstance(only.targets[0].target, cst.Name))


def _returns(node: cst.If, only: Optional[cst.BaseSmallStatement], lines: Sequence[cst.CSTNode]) -> bool:
    return any(isinstance(only_statement(line), cst.Return) for line in lines)


# Each rewrite gets `only` as its shape's matcher narrowed it (an Assign, a Raise): the
# ignores below are where mypy cannot follow that.
SHAPES: tuple[Shape, ...] = (
    Shape("shortcut to None", _sets_to_none,
          lambda context, node, condition, only: shortcuts.shortcut_to_none(
              context, node, only)),  # type: ignore[arg-type]
    Shape("check", checks.ends_in_failure, checks.check),
    Shape("skip the rest of a loop", _alone(cst.Continue),
          lambda context, node, condition, only: skipped_work.skip_rest_of_loop(context, node, condition)),
    Shape("break", _alone(cst.Break),
          lambda context, node, condition, only: skipped_work.no_break_fix(context, node, condition)),
    Shape("flag", _sets_flag,
          lambda context, node, condition, only: skipped_work.set_flag(
              context, node, condition, only.targets[0].target.value)),  # type: ignore[union-attr]
    Shape("masked writes", lambda node, only, lines: node.orelse is None,
          lambda context, node, condition, only: masked_writes.masked_writes(context, node, condition)),
    Shape("returns", _returns, lambda context, node, condition, only: returns.returns(context, node, condition)),
    Shape("assignments", lambda node, only, lines: True,
          lambda context, node, condition, only: assignments.assignments(context, node, condition)),
)


def linearise_if(context: FileContext, node: cst.If, is_elif: bool = False) -> BranchFix:
    """A one-graph rewrite of the tensor `if` statement `node`, or why there is none."""
    if is_elif:
        return no_fix("part of an `elif` chain: the rewrite starts at its first `if`")
    condition = tensor_condition(context, node.test)
    if isinstance(condition, str):
        return no_fix(condition)
    lines = block_lines(node.body)
    only = only_statement(lines[0]) if len(lines) == 1 else None
    for shape in SHAPES:
        if shape.matches(node, only, lines):
            fix = shape.rewrite(context, node, condition, only)
            if fix is not None:
                return fix
    raise AssertionError("the assignments shape matches every `if`")  # pragma: no cover


def is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


class ElifTracker:
    """Rule mixin: remembers which `if` statements are the `elif` of another."""

    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):
            self.__dict__.setdefault("_elifs", set()).add(node.orelse)

    def is_elif(self, node: cst.If) -> bool:
        """True when `node` is written `elif ...`."""
        return node in self.__dict__.get("_elifs", set())


def linearise_data_read(context: FileContext, read: cst.BaseExpression, is_elif) -> Optional[BranchFix]:
    """The fix for a value read into Python (`t.item()`, `float(t)`) that only feeds a test, or None.

    The read is kept a tensor and the whole `if`, ternary or assert it decides is rewritten
    (so JIT201/JIT202 and JIT101 agree on one fix). None when the read is not part of a test.
    """
    child: cst.CSTNode = read
    parent = context.parent(child)
    while parent is not None:
        if isinstance(parent, cst.If) and parent.test is child:
            return linearise_if(context, parent, is_elif(parent))
        if isinstance(parent, cst.IfExp) and parent.test is child:
            return linearise_ifexp(context, parent)
        if isinstance(parent, cst.Assert) and parent.test is child:
            return linearise_assert(context, parent)
        if isinstance(parent, cst.While) and parent.test is child:
            return NO_WHILE_FIX
        if not isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation, cst.UnaryOperation,
                                   cst.Arg, cst.Call)) or (isinstance(parent, cst.Call) and parent is not read
                                                            and not _is_conversion(context, parent)):
            return None
        child, parent = parent, context.parent(parent)
    return None


def _is_conversion(context: FileContext, call: cst.Call) -> bool:
    qualified = context.qualname(call.func) or ""
    return qualified in ("builtins.int", "builtins.float", "builtins.bool")

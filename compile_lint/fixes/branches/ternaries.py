"""Ternaries: `a if c else b` on a tensor condition -> `torch.where(c, a, b)` (or `torch.cond`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from compile_lint.fixes.branches.assignments import calls_named
from compile_lint.fixes.branches.blocks import WHERE_NOTE, BranchFix, no_fix
from compile_lint.fixes.branches.choice import branch_fix_choice
from compile_lint.fixes.branches.conditions import (
    tensor_condition,
)
from compile_lint.fixes.branches.differing_shapes import ResultSite
from compile_lint.fixes.branches.selection import Arms, select
from compile_lint.fixes.branches.torch_calls import TorchCalls

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


def linearise_ifexp(context: FileContext, node: cst.IfExp) -> BranchFix:
    """`a if c else b` on a tensor `c` -> `torch.where(c, a, b)` (or torch.cond), or why not."""
    condition = tensor_condition(context, node.test)
    if isinstance(condition, str):
        return no_fix(condition)
    builder = TorchCalls(context)
    chosen = select(context, builder, Arms(context, condition), node.body, node.orelse, branch_fix_choice(context),
                    ResultSite(node))
    if isinstance(chosen, str):
        return no_fix(chosen)
    if condition.guard is not None:
        chosen = cst.IfExp(test=condition.guard, body=chosen, orelse=node.orelse,
                           lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    chosen = chosen.with_changes(lpar=node.lpar, rpar=node.rpar) if node.lpar else chosen
    used = "torch.cond" if calls_named(chosen, "cond") else "torch.where"
    return builder.plan([(node, chosen)], f"Use {used}(cond, a, b)"
                        + (f" ({WHERE_NOTE})" if used == "torch.where" else ""))

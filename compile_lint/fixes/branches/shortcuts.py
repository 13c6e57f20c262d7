"""Shortcuts: `if (mask == 1).all(): mask = None` is taken only eagerly, so the compiled path takes the
general route."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from compile_lint.analysis.syntax.names import names_read
from compile_lint.fixes.branches.blocks import BranchFix, no_fix
from compile_lint.fixes.branches.torch_calls import TorchCalls, compiling_predicate

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


def shortcut_to_none(context: FileContext, node: cst.If, assign: cst.Assign) -> BranchFix:
    """`if (mask == 1).all(): mask = None` -> taken only eagerly; compiled code keeps the mask."""
    target = assign.targets[0].target
    if not isinstance(target, cst.Name) or target.value not in names_read(node.test):
        return no_fix("the branch sets a name to None: the code after it would need that name to be optional")
    builder = TorchCalls(context)
    eager = cst.UnaryOperation(cst.Not(), compiling_predicate(builder))
    test = node.test
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or) and not test.lpar:
        test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    new_test = cst.BooleanOperation(eager, cst.And(), test)
    return builder.plan(
        [(node.test, new_test)],
        f"Drop `{target.value}` only eagerly: under torch.compile the general path keeps it "
        "(the shortcut must give the same result)")

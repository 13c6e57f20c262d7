"""Masked writes: `if m.any(): x[m] = v` (or `x.masked_fill_(m, v)`) runs always under compile, where
writing nothing is what the mask does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from compile_lint.analysis.kinds.certainty import Under, certain_tensor
from compile_lint.fixes.branches.blocks import BranchFix, block_lines, only_statement
from compile_lint.fixes.branches.conditions import TensorCondition
from compile_lint.fixes.branches.hazards import short_code
from compile_lint.fixes.branches.torch_calls import TorchCalls, compiling_predicate
from compile_lint.fixes.guards import is_side_effect_free

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


_MASKED_WRITE_METHODS = ("masked_fill_", "masked_fill", "masked_scatter_", "index_put_")


def masked_writes(context: FileContext, node: cst.If, condition: TensorCondition) -> Optional[BranchFix]:
    """`if m.any(): x[m] = v` -> also taken under compile, where writing through an empty mask is a no-op."""
    mask = _any_of(context, node.test)
    if mask is None or condition.guard is not None:
        return None
    spelled = short_code(mask)
    for line in block_lines(node.body):
        small = only_statement(line)
        target_index = None
        if (isinstance(small, cst.Assign) and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Subscript)):
            subscript = small.targets[0].target
            if len(subscript.slice) == 1 and isinstance(subscript.slice[0].slice, cst.Index):
                target_index = subscript.slice[0].slice.value
            if (target_index is None or short_code(target_index) != spelled
                    or not is_side_effect_free(context, small.value)):
                return None
            continue
        call = small.value if isinstance(small, cst.Expr) else small.value if isinstance(small, cst.Assign) else None
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in _MASKED_WRITE_METHODS and call.args
                and short_code(call.args[0].value) == spelled):
            return None
    builder = TorchCalls(context)
    test = node.test.with_changes(lpar=[], rpar=[]) if node.test.lpar else node.test
    new_test = cst.BooleanOperation(compiling_predicate(builder), cst.Or(), test)
    return builder.plan(
        [(node.test, new_test)],
        f"Always write through `{spelled}` under torch.compile (a no-op when it has no True entry); "
        "eager runs keep the shortcut")


def _any_of(context: FileContext, test: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`m` for a test `m.any()` or `torch.any(m)` (one argument), else None."""
    if not isinstance(test, cst.Call) or not certain_tensor(context, test, Under.EAGER):
        return None
    if isinstance(test.func, cst.Attribute) and test.func.attr.value == "any" and not test.args:
        return test.func.value
    if context.qualname(test.func) == "torch.any" and len(test.args) == 1 and test.args[0].keyword is None:
        return test.args[0].value
    return None

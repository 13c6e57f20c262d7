"""Boolean-mask updates: `x[m] += v` and `x[m] = x[m] * s + b` read `x[m]`, whose size depends on data.

Rewritten to `x.copy_(torch.where(m, x + v, x))`: every element is computed, the masked
ones are kept, and `x` is still updated in place (a parameter, a view or a tensor the
caller holds sees the write, as it sees the original's `index_put_`). `copy_` casts back to
`x`'s dtype as the original's write does. The rewrite is exact only where each selected
element meets the same value in both forms, so it is offered only when that is proven:

- the mask has `x`'s shape (made from `x` elementwise: `x > 0`, `torch.isnan(x)`), so
  `torch.where` lines it up with `x` as the indexing did; a mask over leading dims only
  (`labels == k` for `x` of shape [n, d]) would need `mask[..., None]`, and its dims are
  not known here;
- every other operand is a scalar (a Python number or a full reduction): `x[m]` has shape
  [n_selected], and an operand with one value per selected element would broadcast
  differently against the whole of `x` (silently, when the sizes happen to agree).

Unsafe: integer `x` with a float update raises in the original and is truncated by
`copy_`, and an operand that requires grad meets the masked-out elements in backward
(a non-finite value there gives a NaN gradient for `*` and `/`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from compile_lint.fixes.branches.blocks import BranchFix, TorchCalls, no_fix, parenthesised
from compile_lint.fixes.branches.conditions import unsafe_operand
from compile_lint.fixes.branches.hazards import ShapeModel
from compile_lint.fixes.guards import is_side_effect_free

if TYPE_CHECKING:
    from compile_lint.rules.base import Rule

# Elementwise operators whose result at an element depends only on that element: `//` and
# `%` are left out (an integer division by zero raises in the where form even where the
# mask selects nothing).
_AUGMENTED = {cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract,
              cst.MultiplyAssign: cst.Multiply, cst.DivideAssign: cst.Divide}
_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)
_SCALAR_TERMS = (("scalar",), ("0d",))


def masked_update_fix(rule: Rule, read: cst.Subscript, mask: cst.BaseExpression) -> Optional[BranchFix]:
    """The fix for the masked read `read` (`x[mask]`) when it is part of an update of `x[mask]`.

    None when `read` is not an update (a plain read such as `loss[valid].mean()`); a
    BranchFix with a reason when it is one the rewrite cannot keep exact.
    """
    parent = rule.context.parent(read)
    if isinstance(parent, cst.AugAssign) and parent.target is read:
        operator = _AUGMENTED.get(type(parent.operator))
        if operator is None:
            return no_fix(f"only `+= -= *= /=` updates through a mask are rewritten, not `{_code(parent.operator).strip()}`")
        updated = cst.BinaryOperation(read.value, operator(), parenthesised(parent.value))
        return _rewrite(rule, parent, read, mask, updated, [parent.value])
    assign = _enclosing_assignment(rule, read)
    if assign is None:
        return None
    spelled = _code(read)
    leaves: list[cst.BaseExpression] = []
    arithmetic = _arithmetic_leaves(assign.value, leaves)
    others = [leaf for leaf in leaves if _code(leaf) != spelled]
    if not arithmetic or any(spelled in _code(leaf) for leaf in others):
        return no_fix(f"`{_short(assign.value)}` is more than `+ - * /` on `{spelled}` and scalars")
    updated = _replace_reads(assign.value, spelled, read.value)
    return _rewrite(rule, assign, read, mask, updated, others)


def _rewrite(rule: Rule, statement: cst.CSTNode, read: cst.Subscript, mask: cst.BaseExpression,
             updated: cst.BaseExpression, others: list[cst.BaseExpression]) -> BranchFix:
    """`x.copy_(torch.where(mask, updated, x))` in place of `statement`, or why not."""
    target = read.value
    if not isinstance(target, (cst.Name, cst.Attribute)) or not is_side_effect_free(rule.context, target):
        return no_fix(f"`{_short(target)}` is not a plain name the rewrite can read twice")
    for operand in others:
        if not is_side_effect_free(rule.context, operand):
            return no_fix(f"`{_short(operand)}` has a side effect")
        if not _is_scalar(rule, operand):
            return no_fix(
                f"`{_short(operand)}` may hold one value per selected element (`{_short(read)}` is "
                f"[n_selected, ...]), which torch.where would broadcast against all of `{_short(target)}`; "
                f"if it is one value per element, write `{_short(target)}.copy_(torch.where(mask, new, "
                f"{_short(target)}))` with the mask shaped like `{_short(target)}`")
    if not _mask_shaped_like(rule, mask, target):
        return no_fix(
            f"the dims of `{_short(mask)}` against `{_short(target)}`'s are unknown: torch.where needs the "
            f"mask shaped like `{_short(target)}` (`mask[..., None]` for each dim it leaves out)")
    reason = unsafe_operand(rule, target, mask)
    if reason:
        return no_fix(reason)
    builder = TorchCalls(rule)
    selected = builder.where(mask, updated, target)
    write = cst.Call(func=cst.Attribute(target, cst.Name("copy_")), args=[cst.Arg(selected)])
    return builder.plan(
        [(statement, cst.Expr(write))],
        f"Update `{_short(target)}` through the mask without reading `{_short(read)}`: "
        f"`{_short(write)}` (every element computed, the masked ones kept, in place)")


def _enclosing_assignment(rule: Rule, read: cst.Subscript) -> Optional[cst.Assign]:
    """The `x[m] = ...` whose value holds `read` (spelled like its target), else None."""
    node: cst.CSTNode = read
    while True:
        parent = rule.context.parent(node)
        if parent is None or isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            break
        node = parent
    if not (isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1):
        return None
    target = parent.targets[0].target
    return parent if isinstance(target, cst.Subscript) and _code(target) == _code(read) else None


def _arithmetic_leaves(expr: cst.BaseExpression, leaves: list[cst.BaseExpression]) -> bool:
    """Collect the operands of `+ - * /` and unary signs in `expr`; False for anything else."""
    if isinstance(expr, cst.BinaryOperation):
        return (isinstance(expr.operator, _OPERATORS) and _arithmetic_leaves(expr.left, leaves)
                and _arithmetic_leaves(expr.right, leaves))
    if isinstance(expr, cst.UnaryOperation):
        return isinstance(expr.operator, (cst.Minus, cst.Plus)) and _arithmetic_leaves(expr.expression, leaves)
    leaves.append(expr)
    return True


def _replace_reads(expr: cst.BaseExpression, spelled: str, whole: cst.BaseExpression) -> cst.BaseExpression:
    """`expr` with every `x[m]` spelled `spelled` replaced by `whole` (`x`)."""
    if _code(expr) == spelled:
        return whole.with_changes(lpar=expr.lpar, rpar=expr.rpar) if expr.lpar else whole
    if isinstance(expr, cst.BinaryOperation):
        return expr.with_changes(left=_replace_reads(expr.left, spelled, whole),
                                 right=_replace_reads(expr.right, spelled, whole))
    if isinstance(expr, cst.UnaryOperation):
        return expr.with_changes(expression=_replace_reads(expr.expression, spelled, whole))
    return expr


def _is_scalar(rule: Rule, operand: cst.BaseExpression) -> bool:
    """True when `operand` is certainly one value: a Python number or a 0-d reduction."""
    shapes = _shapes(rule, operand)
    return shapes is not None and shapes.term(operand) in _SCALAR_TERMS


def _mask_shaped_like(rule: Rule, mask: cst.BaseExpression, target: cst.BaseExpression) -> bool:
    """True when `mask` is certainly `target`'s shape: made from it elementwise, with scalars."""
    shapes = _shapes(rule, mask)
    if shapes is None:
        return False
    term = shapes.term(mask)
    return term is not None and term not in _SCALAR_TERMS and term == shapes.term(target)


def _shapes(rule: Rule, expr: cst.BaseExpression) -> Optional[ShapeModel]:
    """A shape model that sees through `expr` when it is a local bound once, else None if it cannot.

    `m = x > 0` ... `x[m] += 1`: `m` is `x`'s shape only if `x` is the same tensor at both
    places, so each name its value reads must be bound at most once in the function.
    Names read where the update is (`x[x > 0]`) are read at one point and need no such check.
    """
    if not isinstance(expr, cst.Name):
        return ShapeModel(rule)
    values = rule.context.local_values(expr.value)
    if not values:
        return ShapeModel(rule)
    if len(values) != 1 or not isinstance(values[0], cst.BaseExpression):
        return None
    value = values[0]
    if any(len(rule.context.local_values(name)) > 1 for name in _names_in(value)):
        return None
    return ShapeModel(rule, {expr.value: value})


def _names_in(expr: cst.BaseExpression) -> list[str]:
    """The plain names `expr` reads (attribute names and keywords left out)."""
    found: list[str] = []

    class _Names(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            found.append(node.value)

    expr.visit(_Names())
    return found


def _code(node: cst.CSTNode) -> str:
    return " ".join(cst.Module(body=[]).code_for_node(node).split())


def _short(node: cst.CSTNode) -> str:
    text = _code(node)
    return text if len(text) <= 60 else text[:57] + "..."

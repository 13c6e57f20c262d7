"""Boolean-mask updates: `x[m] += v` and `x[m] = x[m] * s + b` read `x[m]`, whose size depends on data.

Rewritten to `x.copy_(torch.where(m, x + v, x))`: every element is computed, the masked
ones are kept, and `x` is still updated in place (a parameter, a view or a tensor the
caller holds sees the write, as it sees the original's `index_put_`). Dtypes, measured on
torch 2.13: in-place arithmetic (`+=`) refuses a result `x`'s dtype cannot hold (a float
for an integer `x`) and otherwise widens exactly, so `x + v` round-trips; the masked write
(`x[m] = new`) refuses a value of another dtype unless it has one element, which it
casts, so that form casts too (`new.to(x.dtype)`, a no-op where the dtypes agree) rather
than let torch.where widen all of `x` (an int64 through float32 is not exact). The
rewrite is exact only where each selected element meets the same value in both forms,
so it is offered only when that is proven:

- the mask has `x`'s shape (made from `x` elementwise: `x > 0`, `torch.isnan(x)`), so
  `torch.where` lines it up with `x` as the indexing did; a mask over leading dims only
  (`labels == k` for `x` of shape [n, d]) would need `mask[..., None]`, and its dims are
  not known here;
- every other operand is a scalar (a Python number or a full reduction) or a tensor of
  `x`'s shape read through the same mask (`y[m]`, paired element by element as the
  indexing pairs them): `x[m]` has shape [n_selected], and an operand with one value per
  selected element would broadcast differently against the whole of `x` (silently, when
  the sizes happen to agree);
- a mask the original evaluates twice (`x[m] = x[m] * 2` spelled out) makes no random
  draw or unknown call, so both evaluations are the one mask the rewrite computes.

Unsafe: integer `x` with a float `+=` raises in the original and is truncated by
`copy_`, and an operand that requires grad meets the masked-out elements in backward
(a non-finite value there gives a NaN gradient for `*` and `/`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, TypeGuard, Union

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.fixes.branches.blocks import BranchFix, no_fix, parenthesised
from compile_lint.fixes.branches.conditions import unsafe_operand
from compile_lint.fixes.branches.hazards import ShapeModel
from compile_lint.fixes.branches.torch_calls import TorchCalls
from compile_lint.fixes.guards import is_side_effect_free

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

# Elementwise operators whose result at an element depends only on that element: `//` and
# `%` are left out (an integer division by zero raises in the where form even where the
# mask selects nothing).
_AUGMENTED: dict[type[cst.BaseAugOp], type[cst.BaseBinaryOp]] = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply, cst.DivideAssign: cst.Divide,
}
_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)
_SCALAR_TERMS = (("scalar",), ("0d",))


def masked_update_fix(context: FileContext, read: cst.Subscript, mask: cst.BaseExpression) -> Optional[BranchFix]:
    """The fix for the masked read `read` (`y[mask]`) when it is part of an update of `x[mask]`.

    None when `read` is not an update (a plain read such as `loss[valid].mean()`); a
    BranchFix with a reason when it is one the rewrite cannot keep exact.
    """
    statement = _update_statement(context, read, mask)
    if statement is None:
        return None
    target = statement.target if isinstance(statement, cst.AugAssign) else statement.targets[0].target
    assert isinstance(target, cst.Subscript)  # `_update_statement` found it read through the mask
    value: cst.BaseExpression
    if isinstance(statement, cst.AugAssign):
        operator = _AUGMENTED.get(type(statement.operator))
        if operator is None:
            return no_fix("only `+= -= *= /=` updates through a mask are rewritten, "
                          f"not `{_code(statement.operator).strip()}`")
        value = cst.BinaryOperation(target, operator(), _right_operand(statement.value, operator))
    else:
        value = statement.value
    leaves: list[cst.BaseExpression] = []
    spelled_mask = _code(mask)
    arithmetic = _arithmetic_leaves(value, leaves)
    partners = [leaf for leaf in leaves if _masked_by(leaf, spelled_mask)]
    others = [leaf for leaf in leaves if not _masked_by(leaf, spelled_mask)]
    if not arithmetic or any(_reads_through(leaf, spelled_mask) for leaf in others):
        return no_fix(f"`{_short(statement.value)}` is more than `+ - * /` on tensors read through "
                      f"`{_short(mask)}` and scalars")
    if len(partners) + isinstance(statement, cst.Assign) > 1 and not _same_every_time(context, mask):
        return no_fix(f"`{_short(mask)}` is evaluated more than once and may differ each time "
                      "(a call the rewrite cannot tell is deterministic)")
    updated = _replace_reads(value, spelled_mask)
    if isinstance(statement, cst.Assign):
        # The masked write casts a one-element value to `x`'s dtype (an int64 `x` takes a
        # float, measured), where torch.where would widen all of `x` and round it back.
        updated = cst.Call(func=cst.Attribute(parenthesised(updated, call=True), cst.Name("to")),
                           args=[cst.Arg(cst.Attribute(target.value, cst.Name("dtype")))])
    return _rewrite(context, statement, target.value, mask, updated, [p.value for p in partners], others)


def _rewrite(context: FileContext, statement: cst.CSTNode, target: cst.BaseExpression, mask: cst.BaseExpression,
             updated: cst.BaseExpression, partners: list[cst.BaseExpression],
             others: list[cst.BaseExpression]) -> BranchFix:
    """`x.copy_(torch.where(mask, updated, x))` in place of `statement`, or why not."""
    for tensor in [target, *partners]:
        if not isinstance(tensor, (cst.Name, cst.Attribute)) or not is_side_effect_free(context, tensor):
            return no_fix(f"`{_short(tensor)}` is not a plain name the rewrite can read again")
    selected_shape = f"`{_short(target)}[{_short(mask)}]` is [n_selected, ...]"
    for operand in others:
        if not is_side_effect_free(context, operand):
            return no_fix(f"`{_short(operand)}` has a side effect")
        if not _is_scalar(context, operand):
            return no_fix(
                f"`{_short(operand)}` may hold one value per selected element ({selected_shape}), which "
                f"torch.where would broadcast against all of `{_short(target)}`")
    for partner in partners:
        if not _same_shape(context, partner, target):
            return no_fix(f"`{_short(partner)}` is not known to be `{_short(target)}`'s shape, so torch.where "
                          f"could pair its elements with others of `{_short(target)}` than the mask does")
    if not _same_shape(context, mask, target):
        return no_fix(
            f"the dims of `{_short(mask)}` against `{_short(target)}`'s are unknown: torch.where needs the "
            f"mask shaped like `{_short(target)}`")
    reason = unsafe_operand(context, target, mask, *partners)
    if reason:
        return no_fix(reason)
    builder = TorchCalls(context)
    selected = builder.where(mask, updated, target)
    write = cst.Call(func=cst.Attribute(target, cst.Name("copy_")), args=[cst.Arg(selected)])
    return builder.plan(
        [(statement, cst.Expr(write))],
        f"Update `{_short(target)}` through the mask without reading through it: "
        f"`{_short(write)}` (every element computed, the masked ones kept, in place)")


# Operators that bind tighter than `+ -` and than `* /`: `x + 2.0 * math.pi` needs no
# parentheses; `x - (a - b)` and `x + (a + b)` do (floating-point addition does not associate).
_TIGHTER: dict[type[cst.BaseBinaryOp], tuple[type[cst.BaseBinaryOp], ...]] = {
    cst.Add: (cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.MatrixMultiply, cst.Power),
    cst.Subtract: (cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.MatrixMultiply, cst.Power),
    cst.Multiply: (cst.Power,), cst.Divide: (cst.Power,),
}


def _right_operand(value: cst.BaseExpression, operator: type[cst.BaseBinaryOp]) -> cst.BaseExpression:
    """`value` as the right operand of `operator`, parenthesised unless it binds tighter."""
    if isinstance(value, cst.BinaryOperation) and not value.lpar and isinstance(value.operator, _TIGHTER[operator]):
        return value
    return parenthesised(value)


def _update_statement(context: FileContext, read: cst.Subscript,
                      mask: cst.BaseExpression) -> Optional[Union[cst.Assign, cst.AugAssign]]:
    """`x[mask] = ...` or `x[mask] op= ...` that `read` is the target of or is read in, else None."""
    node: cst.CSTNode = read
    while True:
        parent = context.parent(node)
        if parent is None or isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            break
        node = parent
    if isinstance(parent, cst.AugAssign) and (parent.target is read or parent.value is node):
        target = parent.target
    elif isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1:
        target = parent.targets[0].target
    else:
        return None
    return parent if _masked_by(target, _code(mask)) else None


def _masked_by(expr: cst.BaseExpression, spelled_mask: str) -> TypeGuard[cst.Subscript]:
    """True for `y[mask]` with `mask` spelled `spelled_mask` (one index, nothing else)."""
    return (isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index)
            and _code(expr.slice[0].slice.value) == spelled_mask)


# Calls a mask may make and still be the same mask when evaluated twice: comparisons and
# tests of values (no random draws, no module calls).
_DETERMINISTIC_CALLS = frozenset({
    "isnan", "isinf", "isfinite", "isneginf", "isposinf", "isin", "isclose", "abs", "bool",
    "logical_and", "logical_or", "logical_not", "logical_xor", "eq", "ne", "gt", "ge", "lt", "le",
    "unsqueeze", "squeeze", "view", "reshape", "expand", "expand_as", "flatten", "all", "any",
})


def _same_every_time(context: FileContext, mask: cst.BaseExpression) -> bool:
    """True when evaluating `mask` again gives the same mask: only deterministic calls.

    `x[m] = x[m] * 2` evaluates the mask twice; the rewrite, once. With a draw in it
    (`torch.rand_like(x) > 0.5`) the original's two masks differ.
    """
    stable = True

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal stable
            func = node.func
            qualified = context.qualname(func) or ""
            name = func.attr.value if isinstance(func, cst.Attribute) else qualified
            if not (qualified.startswith("torch.") or isinstance(func, cst.Attribute)) \
                    or name.rsplit(".", 1)[-1] not in _DETERMINISTIC_CALLS:
                stable = False

    mask.visit(_Calls())
    return stable


def _reads_through(expr: cst.BaseExpression, spelled_mask: str) -> bool:
    """True when `expr` reads some tensor through the mask spelled `spelled_mask`."""
    found = False

    class _Reads(cst.CSTVisitor):
        def visit_Subscript(self, node: cst.Subscript) -> None:
            nonlocal found
            found = found or _masked_by(node, spelled_mask)

    expr.visit(_Reads())
    return found


def _arithmetic_leaves(expr: cst.BaseExpression, leaves: list[cst.BaseExpression]) -> bool:
    """Collect the operands of `+ - * /` and unary signs in `expr`; False for anything else."""
    if isinstance(expr, cst.BinaryOperation):
        return (isinstance(expr.operator, _OPERATORS) and _arithmetic_leaves(expr.left, leaves)
                and _arithmetic_leaves(expr.right, leaves))
    if isinstance(expr, cst.UnaryOperation):
        return isinstance(expr.operator, (cst.Minus, cst.Plus)) and _arithmetic_leaves(expr.expression, leaves)
    leaves.append(expr)
    return True


def _replace_reads(expr: cst.BaseExpression, spelled_mask: str) -> cst.BaseExpression:
    """`expr` with every `y[mask]` (mask spelled `spelled_mask`) replaced by `y`."""
    if _masked_by(expr, spelled_mask):
        whole = expr.value
        return whole.with_changes(lpar=expr.lpar, rpar=expr.rpar) if expr.lpar else whole
    if isinstance(expr, cst.BinaryOperation):
        return expr.with_changes(left=_replace_reads(expr.left, spelled_mask),
                                 right=_replace_reads(expr.right, spelled_mask))
    if isinstance(expr, cst.UnaryOperation):
        return expr.with_changes(expression=_replace_reads(expr.expression, spelled_mask))
    return expr


def _is_scalar(context: FileContext, operand: cst.BaseExpression) -> bool:
    """True when `operand` is certainly one value: a Python number or a 0-d reduction."""
    if _python_number(context, operand):
        return True
    shapes = _shapes(context, operand)
    return shapes is not None and shapes.term(operand) in _SCALAR_TERMS


# The `math` module's constants: Python floats the kinds do not know by name.
_MATH_CONSTANTS = frozenset({"math.pi", "math.e", "math.tau", "math.inf"})


def _python_number(context: FileContext, expr: cst.BaseExpression) -> bool:
    """True for a Python number: the kinds say so, or arithmetic on literals and `math.pi`."""
    if context.kind(expr) in (Kind.PY, Kind.SHAPE) or context.qualname(expr) in _MATH_CONSTANTS:
        return True
    if isinstance(expr, cst.BinaryOperation):
        return _python_number(context, expr.left) and _python_number(context, expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return _python_number(context, expr.expression)
    return False


def _same_shape(context: FileContext, expr: cst.BaseExpression, target: cst.BaseExpression) -> bool:
    """True when `expr` is certainly `target`'s shape (a mask made from it elementwise, a `zeros_like`)."""
    # Compared with `target` by its name, then with what it was made from (`outputs =
    # torch.zeros_like(inputs)` is `inputs`'s shape); either proof is enough.
    for kept in ((_code(target),), ()):
        shapes = _shapes(context, expr, target, kept=kept)
        if shapes is None:
            continue
        term = shapes.term(expr)
        if term is not None and term not in _SCALAR_TERMS and term == shapes.term(target):
            return True
    return False


def _shapes(context: FileContext, *exprs: cst.BaseExpression, kept: tuple[str, ...] = ()) -> Optional[ShapeModel]:
    """A shape model that sees through the names among `exprs` bound once, or None if it cannot.

    `m = x > 0` ... `x[m] += 1`: `m` is `x`'s shape only if `x` is the same tensor at both
    places, so each name a substituted value reads must be bound at most once in the
    function (and is substituted in turn). Names read where the update is (`x[x > 0]`) are
    read at one point and need no such check. Names in `kept` stay names.
    """
    bindings: dict[str, cst.BaseExpression] = {}
    for expr in exprs:
        if not isinstance(expr, cst.Name) or expr.value in kept:
            continue
        values = context.local_values(expr.value)
        if not values:
            continue
        if len(values) != 1 or not isinstance(values[0], cst.BaseExpression):
            if expr is exprs[0]:
                return None
            continue  # the target, rebound: compared by its name, read where the update is
        bindings[expr.value] = values[0]
    pending = list(bindings.values())
    while pending and len(bindings) < 16:
        for name in _names_in(pending.pop()):
            values = context.local_values(name)
            if len(values) > 1:
                return None
            if values and name not in bindings and name not in kept and isinstance(values[0], cst.BaseExpression):
                bindings[name] = values[0]
                pending.append(values[0])
    return ShapeModel(context, bindings)


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

"""Which candidates a mask's test picks: `m.sum(dims) > 0` over every dim of `m` but the first.

The MoE loops (fixes/index_loops.py) iterate the indices `nonzero()` finds in such a test. To
loop over every candidate instead, the fix needs the number of candidates (the first dim of
`m`) from the code alone: through local names (the binding that reaches the read),
`permute`, `F.one_hot(..., num_classes=n)` and casts, `m`'s rank and, where the code says
it, the static size of its first dim (`self.num_experts + 1`), else `m.shape[0]`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

import libcst as cst

from compile_lint.analysis.syntax.literals import int_literal

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext

# Reductions that keep the dims they are not given (no keepdim): what turns the one-hot mask into a
# per-candidate count. Elementwise tests against a number keep the shape.
_REDUCTIONS = frozenset({"sum", "any", "all", "amax", "amin", "count_nonzero"})
_SHAPE_KEEPING = frozenset({"bool", "int", "long", "float", "detach", "contiguous", "clone"})

@dataclass
class _Shape:
    """What is known of a tensor's shape: its rank, and the source of some dims' sizes (negative: from the end)."""

    rank: Optional[int]
    sizes: dict[int, str] = field(default_factory=dict)

    def size(self, dim: int) -> Optional[str]:
        """The source of `dim`'s size, if known."""
        if dim in self.sizes:
            return self.sizes[dim]
        if self.rank is not None:
            other = dim - self.rank if dim >= 0 else dim + self.rank
            return self.sizes.get(other)
        return None


@dataclass(frozen=True)
class HitTest:
    """`m.sum(dims) > 0` over every dim of `m` but the first: which candidates (rows of `m`) hold a selection."""

    mask: str  # the local `m` names
    count: str  # the source of the number of candidates (`m`'s first dim), static where the code says so
    nonnegative: bool  # True when the code shows `m` holds no negative values (or the test needs none)


def hit_test(context: FileContext, tested: cst.BaseExpression) -> Optional[HitTest]:
    """The hit test `tested` makes, when it is one: a 1-d bool per row of a local mask of known rank."""
    reduction, test = _tested_reduction(context, tested)
    if reduction is None or not isinstance(reduction.func, cst.Attribute):
        return None
    method = reduction.func.attr.value
    mask = reduction.func.value
    if method not in _REDUCTIONS or not isinstance(mask, cst.Name):
        return None
    shape = _shape(context, mask, 0)
    if shape is None or shape.rank is None or not _reduces_all_but_first(reduction, shape.rank):
        return None
    count = shape.size(0)
    if count is None:
        return None
    if method in ("any", "count_nonzero") or test == "nonzero":
        nonnegative = True  # any nonzero element makes the row a hit, exactly as the selection finds it
    elif method == "sum" and test == "positive":
        nonnegative = _nonnegative(context, mask, 0)  # a sum > 0 finds every row with a nonzero only then
    else:
        return None
    return HitTest(mask.value, count, nonnegative)


def _tested_reduction(context: FileContext, expr: cst.BaseExpression) -> tuple[Optional[cst.Call], str]:
    """(the reduction, "positive" | "nonzero" | "any") of `r > 0`, `torch.greater(r, 0)`, `r != 0`, `r.any(...)`."""
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1 and _zero(expr.comparisons[0].comparator):
        operator = expr.comparisons[0].operator
        test = "positive" if isinstance(operator, cst.GreaterThan) else "nonzero" if isinstance(
            operator, cst.NotEqual) else ""
        return (expr.left, test) if test and isinstance(expr.left, cst.Call) else (None, "")
    if not isinstance(expr, cst.Call):
        return None, ""
    qualified = context.qualname(expr.func) or ""
    positional = [arg.value for arg in expr.args if arg.keyword is None and not arg.star]
    if qualified in ("torch.greater", "torch.gt", "torch.ne", "torch.not_equal") and len(positional) == 2 \
            and isinstance(positional[0], cst.Call) and _zero(positional[1]):
        return positional[0], "positive" if qualified in ("torch.greater", "torch.gt") else "nonzero"
    if isinstance(expr.func, cst.Attribute) and not qualified:
        method = expr.func.attr.value
        if method in ("gt", "greater", "ne") and len(positional) == 1 and _zero(positional[0]) \
                and isinstance(expr.func.value, cst.Call):
            return expr.func.value, "positive" if method in ("gt", "greater") else "nonzero"
        if method == "any":
            return expr, "any"
    return None, ""


def _reduces_all_but_first(reduction: cst.Call, rank: int) -> bool:
    """The reduction runs over literal dims that are every dim but the first, without keepdim."""
    keepdim = _argument(reduction, "keepdim", 1)
    if keepdim is not None and not (isinstance(keepdim, cst.Name) and keepdim.value == "False"):
        return False
    dims_expr = _argument(reduction, "dim", 0)
    if dims_expr is None:
        return False
    values = [element.value for element in dims_expr.elements] if isinstance(dims_expr, (cst.Tuple, cst.List)) \
        else [dims_expr]
    dims = [int_literal(value) for value in values]
    if any(d is None or not -rank <= d < rank for d in dims):
        return False
    return sorted({d % rank for d in dims}) == list(range(1, rank))  # type: ignore[operator]


def _shape(context: FileContext, expr: cst.BaseExpression, depth: int) -> Optional[_Shape]:
    """What is known of `expr`'s shape through local names, `permute`, `F.one_hot(..., num_classes=n)` and casts."""
    if depth > 8:
        return None
    if isinstance(expr, cst.Name):
        return _name_shape(context, expr, depth)
    if not isinstance(expr, cst.Call):
        return None
    qualified = context.qualname(expr.func) or ""
    positional = [arg.value for arg in expr.args if arg.keyword is None and not arg.star]
    if qualified == "torch.nn.functional.one_hot":
        classes = _argument(expr, "num_classes", 1)
        source = _static_source(context, classes) if classes is not None else None
        return _Shape(None, {-1: source}) if source else None
    if not isinstance(expr.func, cst.Attribute) or qualified:
        return None
    method, receiver = expr.func.attr.value, expr.func.value
    if method == "permute":
        listed = len(positional) == 1 and isinstance(positional[0], (cst.Tuple, cst.List))
        values = [element.value for element in positional[0].elements] if listed else positional  # type: ignore
        order = [int_literal(value) for value in values]
        if not order or any(dim is None for dim in order) or sorted(order) != list(range(len(order))):  # type: ignore
            return None
        inner = _shape(context, receiver, depth + 1) or _Shape(None)
        if inner.rank is not None and inner.rank != len(order):
            return None
        inner = _Shape(len(order), inner.sizes)  # permute takes one entry per dim: that is the rank
        known = {dim: inner.size(source) for dim, source in enumerate(order)}  # type: ignore[arg-type]
        return _Shape(len(order), {dim: size for dim, size in known.items() if size is not None})
    if method in _SHAPE_KEEPING and not expr.args:
        return _shape(context, receiver, depth + 1)
    return None


def _name_shape(context: FileContext, name: cst.Name, depth: int) -> Optional[_Shape]:
    """A local's shape, from the one binding that reaches this read; its own `.shape[k]` for sizes not known."""
    value = _reaching_value(context, name)
    inner = _shape(context, value, depth + 1) if value is not None else None
    if inner is None or inner.rank is None:
        return inner
    sizes = {dim: f"{name.value}.shape[{dim}]" for dim in range(inner.rank)}
    for dim in range(inner.rank):
        known = inner.size(dim)
        if known is not None:
            sizes[dim] = known
    return _Shape(inner.rank, sizes)


def _reaching_value(context: FileContext, name: cst.Name) -> Optional[cst.BaseExpression]:
    """The value of the one binding of a local that reaches this read, if there is one."""
    function = context.function
    bindings = context.facts.reaching(function).reads.get(name) if function is not None else None
    if not bindings or len(bindings) != 1:
        return None
    value = next(iter(bindings)).value
    return value if isinstance(value, cst.BaseExpression) else None


def _nonnegative(context: FileContext, expr: cst.BaseExpression, depth: int) -> bool:
    """True for a one-hot or boolean mask, through local names, permutes and casts."""
    if depth > 8:
        return False
    if isinstance(expr, cst.Name):
        value = _reaching_value(context, expr)
        return value is not None and _nonnegative(context, value, depth + 1)
    if isinstance(expr, cst.Comparison):
        return True
    if isinstance(expr, cst.Call):
        if context.qualname(expr.func) == "torch.nn.functional.one_hot":
            return True
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SHAPE_KEEPING | {"permute"}:
            return _nonnegative(context, expr.func.value, depth + 1)
    return False


def _zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and float(expr.evaluated_value) == 0.0


def _argument(call: cst.Call, keyword: str, position: int) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [arg.value for arg in call.args if arg.keyword is None and not arg.star]
    return positional[position] if len(positional) > position else None


def _static_source(context: FileContext, expr: cst.BaseExpression) -> Optional[str]:
    """The source of `expr` when it reads nothing a loop could rebind: literals, `self.a.b`, `+ - *` of them."""
    if isinstance(expr, cst.Integer):
        return expr.value
    if isinstance(expr, cst.Attribute):
        base: cst.BaseExpression = expr
        while isinstance(base, cst.Attribute):
            base = base.value
        return context.module.code_for_node(expr) if isinstance(base, cst.Name) and base.value == "self" else None
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply)):
        if _static_source(context, expr.left) and _static_source(context, expr.right):
            return context.module.code_for_node(expr)
    return None

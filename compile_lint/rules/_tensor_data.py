"""Shared analysis for the JIT2xx rules: is this expression tensor data read into Python?

Private to the rules package (the leading underscore keeps rule discovery out of it).
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from compile_lint.analysis.facts import Kind, annotation_kind
from compile_lint.analysis.walk import visit
from compile_lint.rules._conditions import data_dependent
from compile_lint.rules.base import Rule

# Receivers that are certainly not a tensor or an array: `.item()` on them is not ours.
NOT_ARRAYS = frozenset({Kind.PY, Kind.SHAPE, Kind.LIST, Kind.DICT, Kind.MODULE, Kind.SELF})


def bound_only_to(
    rule: Rule, expr: cst.BaseExpression, test: Callable[[Rule, cst.BaseExpression, int], bool], depth: int
) -> bool:
    """True when `expr` is a local name and every value assigned to it passes `test`."""
    if not isinstance(expr, cst.Name) or depth > 6:
        return False
    values = rule.context.local_values(expr.value)
    return bool(values) and all(isinstance(v, cst.BaseExpression) and test(rule, v, depth + 1) for v in values)


def holds_tensor_data(rule: Rule, expr: cst.BaseExpression) -> bool:
    """True when `expr` is certainly a tensor (or numpy array, which Dynamo traces as one).

    Bare parameters count only when annotated or reassigned as tensors (see
    `data_dependent`): an untyped `steps` argument is as often an int as a tensor.
    """
    if rule.context.kind(expr) is Kind.NDARRAY:
        return _derived_from_tensor(rule, expr, depth=0)
    if data_dependent(rule, expr) is not expr or isinstance(expr, (cst.BooleanOperation, cst.UnaryOperation)):
        return False
    return not _unpacked_from_untyped_param(rule, expr, depth=0)


def _untyped_param(rule: Rule, name: str) -> bool:
    """True for a parameter not declared a Tensor (no annotation, or `Tuple[int, int]`, `Size_`...)
    and not passed a tensor by every call of the file."""
    function = rule.context.function
    if function is None or rule.context.argument_kind(name) is Kind.TENSOR:
        return False
    params = function.params
    return any(
        param.name.value == name and annotation_kind(param.annotation, rule.context.imports) not in (
            Kind.TENSOR, Kind.MAYBE_TENSOR)
        for param in (*params.posonly_params, *params.params, *params.kwonly_params)
    )


def _unpacked_from_untyped_param(rule: Rule, expr: cst.BaseExpression, depth: int) -> bool:
    """`h, w = size` or `n = size[0]` where `size` is a parameter not declared a Tensor.

    Facts call every untyped forward parameter (and one annotated `Tuple[int, int]` or
    with a type alias) a tensor; when code unpacks or indexes one to get sizes, it is far
    more often a tuple of ints (`output_size`, `image_size`).
    """
    if depth > 6:
        return False
    if isinstance(expr, cst.Subscript):
        inner = expr.value
        return (isinstance(inner, cst.Name) and _untyped_param(rule, inner.value)
                and not rule.context.local_values(inner.value)) or _unpacked_from_untyped_param(rule, inner, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        # `(self.ws - W % self.ws) % self.ws` is as much a size as W itself.
        sides = [side for side in (expr.left, expr.right) if rule.context.kind(side).tensorish]
        return bool(sides) and all(_unpacked_from_untyped_param(rule, side, depth + 1) for side in sides)
    if isinstance(expr, cst.UnaryOperation):
        return _unpacked_from_untyped_param(rule, expr.expression, depth + 1)
    if not isinstance(expr, cst.Name) or _untyped_param(rule, expr.value):
        return False
    values = rule.context.local_values(expr.value)
    if not values:
        return False
    for value in values:
        if isinstance(value, tuple) and value[0] == "element" and isinstance(value[1], cst.Name):
            source = value[1]
            if _untyped_param(rule, source.value) and not rule.context.local_values(source.value):
                continue
            if _unpacked_from_untyped_param(rule, source, depth + 1):
                continue
            return False
        if isinstance(value, cst.BaseExpression) and _unpacked_from_untyped_param(rule, value, depth + 1):
            continue
        return False
    return True


def _derived_from_tensor(rule: Rule, expr: cst.BaseExpression, depth: int) -> bool:
    """True when a numpy expression reads a tensor (`x.numpy()`), directly or through locals.

    numpy on Python constants (`np.sqrt(8)`) is folded at trace time and compiles; numpy
    on tensor data is traced as tensors and breaks when read back into Python.
    """
    if depth > 8:
        return False
    context = rule.context
    found = False

    class _Scan(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            # `np.sqrt(x.shape[1])` reads a size, not tensor data: do not look inside.
            if isinstance(node, (cst.Subscript, cst.Attribute, cst.Call)) and context.kind(node) in (Kind.SHAPE, Kind.PY):
                return False
            return super().on_visit(node)

        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            kind = context.kind(node)
            if kind is Kind.TENSOR:
                found = True
            elif kind is Kind.NDARRAY:
                for value in rule.context.local_values(node.value):
                    if isinstance(value, cst.BaseExpression) and _derived_from_tensor(rule, value, depth + 1):
                        found = True

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            nonlocal found
            if context.kind(node) is Kind.TENSOR:
                found = True
            visit(node.value, self)
            return False

    visit(expr, _Scan())
    return found


def method_call(node: cst.Call, names: frozenset[str]) -> Optional[cst.BaseExpression]:
    """The receiver of `receiver.NAME()` (no arguments) for NAME in `names`, else None."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in names and not node.args:
        return func.value
    return None


def builtin_conversion(rule: Rule, node: cst.Call, names: tuple[str, ...]) -> Optional[str]:
    """`int`/`float`/... when `node` is `NAME(one tensor)`, else None."""
    qualified = rule.context.qualname(node.func) or ""
    if not qualified.startswith("builtins."):
        return None
    name = qualified[len("builtins."):]
    if name not in names or not node.args or node.args[0].keyword is not None or node.args[0].star:
        return None
    return name if holds_tensor_data(rule, node.args[0].value) else None

"""Conditions whose truth depends on tensor data (shared by the branching rules)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.facts import Kind, annotation_kind
from compile_lint.rules.base import Rule


def data_dependent(rule: Rule, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The part of a condition whose truth depends on tensor data, or None.

    `and`/`or`/`not` are looked through: `if mask is not None and mask.any():` is flagged
    for `mask.any()`. A bare parameter (`if flag:`) is only flagged when annotated as a
    Tensor or when every call of the file passes it a tensor, since untyped parameters are
    as often flags as tensors.
    """
    context = rule.context
    if isinstance(expr, cst.BooleanOperation):
        return data_dependent(rule, expr.left) or data_dependent(rule, expr.right)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return data_dependent(rule, expr.expression)
    if isinstance(expr, cst.Name) and context.function is not None:
        param = context.facts.param_kind(context.function, expr.value)
        if (param is not None and not annotated_tensor(rule, expr.value)
                and context.argument_kind(expr.value) is not Kind.TENSOR):
            assigned = context.local_values(expr.value)
            if not assigned:
                return None
    return expr if context.kind(expr) is Kind.TENSOR else None


def annotated_tensor(rule: Rule, name: str) -> bool:
    function = rule.context.function
    if function is None:
        return False
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return annotation_kind(param.annotation, rule.context.imports) is Kind.TENSOR
    return False


"""Literal values of libcst nodes, for rules and fixes alike."""

from __future__ import annotations

from typing import Optional

import libcst as cst


def int_literal(expr: cst.BaseExpression) -> Optional[int]:
    """The value of an int literal (`3`, `-1`), else None; bools are not ints here."""
    if isinstance(expr, cst.Integer):
        return int(expr.evaluated_value)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = int_literal(expr.expression)
        return None if inner is None else -inner
    return None

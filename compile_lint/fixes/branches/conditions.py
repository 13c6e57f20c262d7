"""Conditions whose truth depends on tensor data (shared by the branching rules).

`data_dependent` says whether a test needs a tensor's value; `tensor_condition` rewrites
such a test into a bool tensor expression that `torch.where`, `torch.cond` and
`torch._check_tensor_all_with` accept, splitting off the Python tests in front of it
(`mask is not None and mask.any()` -> Python `mask is not None`, tensor `mask.any()`) and
keeping values read into Python as tensors (`t.item() < c` -> `t < c`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Union

import libcst as cst

from compile_lint.analysis.file.eager_branches import predicate_sense
from compile_lint.analysis.kinds.certainty import (
    SAFE_OPERANDS,
    Under,
    annotated_tensor,
    certain_tensor,
    tensor_evidence,
)
from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.fixes.branches.hazards import is_bool_expression

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


def data_dependent(context: FileContext, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The part of a condition whose truth depends on tensor data, or None.

    `and`/`or`/`not` are looked through: `if mask is not None and mask.any():` is flagged
    for `mask.any()`, but not `if torch.compiler.is_compiling() or mask.any():`, whose
    right side Dynamo never evaluates. A bare parameter (`if flag:`) is only flagged when
    annotated as a Tensor or when every call of the file passes it a tensor, since untyped
    parameters are as often flags as tensors.
    """
    if isinstance(expr, cst.BooleanOperation):
        sense = predicate_sense(expr.left, context.imports)
        if sense is (isinstance(expr.operator, cst.Or)):
            return None  # decided by is_compiling() while Dynamo traces: the right side never runs
        return data_dependent(context, expr.left) or data_dependent(context, expr.right)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return data_dependent(context, expr.expression)
    if isinstance(expr, cst.Name) and context.function is not None:
        param = context.facts.param_kind(context.function, expr.value)
        if (param is not None and not annotated_tensor(context, expr.value)
                and context.argument_kind(expr.value) is not Kind.TENSOR):
            assigned = context.local_values(expr.value)
            if not assigned:
                return None
    return expr if context.kind(expr) is Kind.TENSOR else None


def operand_evidence(context: FileContext, *operands: cst.BaseExpression) -> tuple[tuple[str, str], ...]:
    """`(source, evidence)` for each operand a fix rests on, as FixPlan.rests_on holds them."""
    return tuple((_code(operand), tensor_evidence(context, operand)) for operand in operands)


def unsafe_operand(context: FileContext, *operands: cst.BaseExpression) -> Optional[str]:
    """Why a rewrite into a torch op may not rest on these operands, or None when every one may."""
    for source, evidence in operand_evidence(context, *operands):
        if evidence not in SAFE_OPERANDS:
            return f"`{source}` is a {evidence}, no evidence it is one in eager code"
    return None


@dataclass
class TensorCondition:
    """A test split into Python tests evaluated first and one bool tensor expression."""

    guard: Optional[cst.BaseExpression]  # the Python conjuncts in front, joined with `and`
    tensor: cst.BaseExpression  # a bool tensor, True exactly when the tensor conjuncts are
    converted: bool  # a `.item()`/`float()`/`int()`/`bool()` was kept a tensor


Outcome = Union[TensorCondition, str]  # the condition, or why it cannot be rewritten

_CONVERSIONS = ("int", "float", "bool")


def tensor_condition(context: FileContext, test: cst.BaseExpression) -> Outcome:
    """`test` as Python tests plus a bool tensor expression, or the reason it is not one."""
    conjuncts = _conjuncts(test)
    python: list[cst.BaseExpression] = []
    tensors: list[cst.BaseExpression] = []
    for conjunct in conjuncts:
        if _reads_tensor(context, conjunct):
            tensors.append(conjunct)
        elif tensors:
            return "a Python test follows the tensor test (reorder it in front)"
        else:
            python.append(conjunct)
    if not tensors:
        return "the test is not a tensor"
    state = {"converted": False}
    parts = []
    for conjunct in tensors:
        part = _to_bool_tensor(context, conjunct, state)
        if isinstance(part, str):
            return part
        parts.append(part)
    tensor = parts[0]
    for part in parts[1:]:
        tensor = cst.BinaryOperation(_operand(tensor), cst.BitAnd(), _operand(part))
    guard = None
    for conjunct in python:
        conjunct = conjunct.with_changes(lpar=[], rpar=[]) if _redundant(conjunct) else conjunct
        guard = conjunct if guard is None else cst.BooleanOperation(guard, cst.And(), conjunct)
    return TensorCondition(guard, tensor, state["converted"])


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And) and not test.lpar:
        return _conjuncts(test.left) + _conjuncts(test.right)
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _conjuncts(test.with_changes(lpar=[], rpar=[]))
    return [test]


def _reads_tensor(context: FileContext, expr: cst.BaseExpression) -> bool:
    """True when `expr` needs tensor data: a tensor test, or a value read out of a tensor."""
    if data_dependent(context, expr) is not None:
        return True
    return _data_conversion(context, expr) is not None or any(
        _data_conversion(context, node) is not None for node in _subexpressions(expr))


def _subexpressions(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(expr, cst.Comparison):
        return [expr.left, *(c.comparator for c in expr.comparisons)]
    if isinstance(expr, cst.UnaryOperation):
        return [expr.expression, *_subexpressions(expr.expression)]
    if isinstance(expr, cst.BooleanOperation):
        return [expr.left, expr.right, *_subexpressions(expr.left), *_subexpressions(expr.right)]
    if isinstance(expr, cst.BinaryOperation):
        return [expr.left, expr.right, *_subexpressions(expr.left), *_subexpressions(expr.right)]
    return []


def _data_conversion(context: FileContext, expr: cst.BaseExpression) -> Optional[tuple[str, cst.BaseExpression]]:
    """("item"|"int"|"float"|"bool", tensor) for `t.item()` / `int(t)` / ... on a tensor, else None."""
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value == "item" and not expr.args:
        if context.kind(func.value) is Kind.TENSOR and certain_tensor(context, func.value, Under.EAGER):
            return "item", func.value
        return None
    qualified = context.qualname(func) or ""
    if qualified.startswith("builtins.") and qualified[9:] in _CONVERSIONS and len(expr.args) == 1:
        arg = expr.args[0]
        if arg.keyword is None and not arg.star and context.kind(arg.value) is Kind.TENSOR \
                and certain_tensor(context, arg.value, Under.EAGER):
            return qualified[9:], arg.value
    return None


def converted_tensors(context: FileContext, test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The tensors a test reads into Python (`t` of `t.item()`, `float(t)`): what keeping it a tensor rests on."""
    return [found[1] for found in (_data_conversion(context, part) for part in iter_nodes(test)
                                   if isinstance(part, cst.Call)) if found is not None]


def _to_bool_tensor(context: FileContext, expr: cst.BaseExpression, state: dict) -> Union[cst.BaseExpression, str]:
    """A bool tensor expression with the truth of `expr`, or why there is none."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        inner = _to_bool_tensor(context, expr.expression, state)
        if isinstance(inner, str):
            return inner
        return cst.UnaryOperation(cst.BitInvert(), _operand(inner, invert=True))
    if isinstance(expr, cst.BooleanOperation):
        left = _to_bool_tensor(context, expr.left, state)
        right = _to_bool_tensor(context, expr.right, state)
        if isinstance(left, str) or isinstance(right, str):
            return "an `and`/`or` mixes Python and tensor tests" if not (isinstance(left, str) and isinstance(
                right, str)) else left
        operator = cst.BitAnd() if isinstance(expr.operator, cst.And) else cst.BitOr()
        return cst.BinaryOperation(_operand(left), operator, _operand(right))
    conversion = _data_conversion(context, expr)
    if conversion is not None:
        state["converted"] = True
        name, tensor = conversion
        return _as_bool(context, tensor)
    if isinstance(expr, cst.Comparison):
        if len(expr.comparisons) != 1 or isinstance(
                expr.comparisons[0].operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
            return "a chained or identity comparison"
        left = _keep_tensor(context, expr.left, state)
        right = _keep_tensor(context, expr.comparisons[0].comparator, state)
        if not (certain_tensor(context, left, Under.EAGER) or certain_tensor(context, right, Under.EAGER)):
            return f"cannot tell that `{_code(expr)}` compares tensors"
        comparison = expr.comparisons[0].with_changes(comparator=right)
        return expr.with_changes(left=left, comparisons=[comparison], lpar=[], rpar=[])
    if context.kind(expr) is Kind.TENSOR and certain_tensor(context, expr, Under.EAGER):
        return _as_bool(context, expr)
    if context.tensor_on_some_paths(expr):
        return f"`{_code(expr)}` is a tensor only on some paths (a Python value on the others)"
    return f"cannot tell that `{_code(expr)}` is a tensor"


def _keep_tensor(context: FileContext, expr: cst.BaseExpression, state: dict) -> cst.BaseExpression:
    """`expr` with a top-level `t.item()`/`float(t)`/`int(t)` kept a tensor (`int(t)` -> `t.long()`)."""
    conversion = _data_conversion(context, expr)
    if conversion is None:
        return expr
    state["converted"] = True
    name, tensor = conversion
    if name == "int":
        return cst.Call(func=cst.Attribute(_method_receiver(tensor), cst.Name("long")))
    if name == "bool":
        return _as_bool(context, tensor)
    return tensor


def _as_bool(context: FileContext, expr: cst.BaseExpression) -> cst.BaseExpression:
    if is_bool_expression(expr) or _bound_to_bool(context, expr):
        return expr
    return cst.Call(func=cst.Attribute(_method_receiver(expr), cst.Name("bool")))


def _bound_to_bool(context: FileContext, expr: cst.BaseExpression) -> bool:
    if not isinstance(expr, cst.Name):
        return False
    values = context.local_values(expr.value)
    return bool(values) and all(isinstance(v, cst.BaseExpression) and is_bool_expression(v) for v in values)


def _method_receiver(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _operand(expr: cst.BaseExpression, invert: bool = False) -> cst.BaseExpression:
    """`expr` parenthesised where `&`, `|` or `~` would bind tighter than it does."""
    loose: tuple[type[cst.BaseExpression], ...] = (cst.Comparison, cst.BooleanOperation, cst.IfExp, cst.Lambda)
    if invert:
        loose = loose + (cst.BinaryOperation,)
    if isinstance(expr, loose) and not expr.lpar:
        return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return expr


def _redundant(expr: cst.BaseExpression) -> bool:
    return bool(getattr(expr, "lpar", None)) and not isinstance(expr, (cst.Tuple, cst.GeneratorExp))


def _code(node: cst.CSTNode) -> str:
    text = cst.Module(body=[]).code_for_node(node).strip()
    return text if len(text) <= 60 else text[:57] + "..."

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

from compile_lint.analysis.kinds.facts import Kind, annotation_kind
from compile_lint.analysis.file.regions import predicate_sense
from compile_lint.fixes.hazards import is_bool_expression
from compile_lint.analysis.kinds.tensor_methods import TENSOR_METHODS

if TYPE_CHECKING:
    from compile_lint.rules.base import Rule


def data_dependent(rule: Rule, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The part of a condition whose truth depends on tensor data, or None.

    `and`/`or`/`not` are looked through: `if mask is not None and mask.any():` is flagged
    for `mask.any()`, but not `if torch.compiler.is_compiling() or mask.any():`, whose
    right side Dynamo never evaluates. A bare parameter (`if flag:`) is only flagged when
    annotated as a Tensor or when every call of the file passes it a tensor, since untyped
    parameters are as often flags as tensors.
    """
    context = rule.context
    if isinstance(expr, cst.BooleanOperation):
        sense = predicate_sense(expr.left, context.imports)
        if sense is (isinstance(expr.operator, cst.Or)):
            return None  # decided by is_compiling() while Dynamo traces: the right side never runs
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
    """True when parameter `name` of the function being visited is annotated as a Tensor."""
    function = rule.context.function
    if function is None:
        return False
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return annotation_kind(param.annotation, rule.context.imports) is Kind.TENSOR
    return False


@dataclass
class TensorCondition:
    """A test split into Python tests evaluated first and one bool tensor expression."""

    guard: Optional[cst.BaseExpression]  # the Python conjuncts in front, joined with `and`
    tensor: cst.BaseExpression  # a bool tensor, True exactly when the tensor conjuncts are
    converted: bool  # a `.item()`/`float()`/`int()`/`bool()` was kept a tensor


Outcome = Union[TensorCondition, str]  # the condition, or why it cannot be rewritten

_CONVERSIONS = ("int", "float", "bool")


def tensor_condition(rule: Rule, test: cst.BaseExpression) -> Outcome:
    """`test` as Python tests plus a bool tensor expression, or the reason it is not one."""
    conjuncts = _conjuncts(test)
    python: list[cst.BaseExpression] = []
    tensors: list[cst.BaseExpression] = []
    for conjunct in conjuncts:
        if _reads_tensor(rule, conjunct):
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
        part = _to_bool_tensor(rule, conjunct, state)
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


def _reads_tensor(rule: Rule, expr: cst.BaseExpression) -> bool:
    """True when `expr` needs tensor data: a tensor test, or a value read out of a tensor."""
    if data_dependent(rule, expr) is not None:
        return True
    return _data_conversion(rule, expr) is not None or any(
        _data_conversion(rule, node) is not None for node in _subexpressions(expr))


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


def _data_conversion(rule: Rule, expr: cst.BaseExpression) -> Optional[tuple[str, cst.BaseExpression]]:
    """("item"|"int"|"float"|"bool", tensor) for `t.item()` / `int(t)` / ... on a tensor, else None."""
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value == "item" and not expr.args:
        if rule.context.kind(func.value) is Kind.TENSOR and certain_tensor(rule, func.value):
            return "item", func.value
        return None
    qualified = rule.context.qualname(func) or ""
    if qualified.startswith("builtins.") and qualified[9:] in _CONVERSIONS and len(expr.args) == 1:
        arg = expr.args[0]
        if arg.keyword is None and not arg.star and rule.context.kind(arg.value) is Kind.TENSOR \
                and certain_tensor(rule, arg.value):
            return qualified[9:], arg.value
    return None


def certain_tensor(rule: Rule, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """True when `expr` is a tensor for reasons a fix can rest on, not only by facts' default.

    A torch function, a `torch.Tensor` method on a tensor, a comparison or arithmetic with
    one, a Tensor-annotated parameter, or a local bound to one of these. A method that
    `torch.Tensor` lacks (`session.get_obj_num()`) is not: facts type untyped parameters as
    tensors, and a fix must not rest on that guess.
    """
    if depth > 8:
        return False
    context = rule.context
    if isinstance(expr, cst.Call):
        qualified = context.qualname(expr.func) or ""
        if qualified.startswith("torch."):
            return context.kind(expr) is Kind.TENSOR
        if isinstance(expr.func, cst.Attribute):
            receiver = expr.func.value
            if expr.func.attr.value not in TENSOR_METHODS:
                return False
            return context.kind(receiver).tensorish or certain_tensor(rule, receiver, depth + 1)
        return False
    if isinstance(expr, cst.Comparison):
        return any(certain_tensor(rule, side, depth + 1)
                   for side in (expr.left, *(c.comparator for c in expr.comparisons)))
    if isinstance(expr, cst.BinaryOperation):
        return certain_tensor(rule, expr.left, depth + 1) or certain_tensor(rule, expr.right, depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return certain_tensor(rule, expr.expression, depth + 1)
    if isinstance(expr, cst.Subscript):
        return certain_tensor(rule, expr.value, depth + 1)
    if isinstance(expr, cst.Attribute):
        if isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return context.kind(expr) is Kind.TENSOR
        return expr.attr.value in ("T", "mT", "data", "real", "imag") and certain_tensor(rule, expr.value, depth + 1)
    if isinstance(expr, cst.Name):
        if annotated_tensor(rule, expr.value):
            return True
        if context.tensor_on_some_paths(expr):
            return False  # `skip = False` on the other paths: `skip.bool()` would fail there
        for value in context.local_values(expr.value):
            if isinstance(value, cst.BaseExpression) and certain_tensor(rule, value, depth + 1):
                return True
            if isinstance(value, tuple) and value[0] in ("iter", "element") and isinstance(value[1], cst.BaseExpression) \
                    and certain_tensor(rule, value[1], depth + 1):
                return True
        return False
    return False


def _to_bool_tensor(rule: Rule, expr: cst.BaseExpression, state: dict) -> Union[cst.BaseExpression, str]:
    """A bool tensor expression with the truth of `expr`, or why there is none."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        inner = _to_bool_tensor(rule, expr.expression, state)
        if isinstance(inner, str):
            return inner
        return cst.UnaryOperation(cst.BitInvert(), _operand(inner, invert=True))
    if isinstance(expr, cst.BooleanOperation):
        left = _to_bool_tensor(rule, expr.left, state)
        right = _to_bool_tensor(rule, expr.right, state)
        if isinstance(left, str) or isinstance(right, str):
            return "an `and`/`or` mixes Python and tensor tests" if not (isinstance(left, str) and isinstance(
                right, str)) else left
        operator = cst.BitAnd() if isinstance(expr.operator, cst.And) else cst.BitOr()
        return cst.BinaryOperation(_operand(left), operator, _operand(right))
    conversion = _data_conversion(rule, expr)
    if conversion is not None:
        state["converted"] = True
        name, tensor = conversion
        return _as_bool(rule, tensor)
    if isinstance(expr, cst.Comparison):
        if len(expr.comparisons) != 1 or isinstance(
                expr.comparisons[0].operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
            return "a chained or identity comparison"
        left = _keep_tensor(rule, expr.left, state)
        right = _keep_tensor(rule, expr.comparisons[0].comparator, state)
        if not (certain_tensor(rule, left) or certain_tensor(rule, right)):
            return f"cannot tell that `{_code(expr)}` compares tensors"
        comparison = expr.comparisons[0].with_changes(comparator=right)
        return expr.with_changes(left=left, comparisons=[comparison], lpar=[], rpar=[])
    if rule.context.kind(expr) is Kind.TENSOR and certain_tensor(rule, expr):
        return _as_bool(rule, expr)
    if rule.context.tensor_on_some_paths(expr):
        return f"`{_code(expr)}` is a tensor only on some paths (a Python value on the others)"
    return f"cannot tell that `{_code(expr)}` is a tensor"


def _keep_tensor(rule: Rule, expr: cst.BaseExpression, state: dict) -> cst.BaseExpression:
    """`expr` with a top-level `t.item()`/`float(t)`/`int(t)` kept a tensor (`int(t)` -> `t.long()`)."""
    conversion = _data_conversion(rule, expr)
    if conversion is None:
        return expr
    state["converted"] = True
    name, tensor = conversion
    if name == "int":
        return cst.Call(func=cst.Attribute(_method_receiver(tensor), cst.Name("long")))
    if name == "bool":
        return _as_bool(rule, tensor)
    return tensor


def _as_bool(rule: Rule, expr: cst.BaseExpression) -> cst.BaseExpression:
    if is_bool_expression(expr) or _bound_to_bool(rule, expr):
        return expr
    return cst.Call(func=cst.Attribute(_method_receiver(expr), cst.Name("bool")))


def _bound_to_bool(rule: Rule, expr: cst.BaseExpression) -> bool:
    if not isinstance(expr, cst.Name):
        return False
    values = rule.context.local_values(expr.value)
    return bool(values) and all(isinstance(v, cst.BaseExpression) and is_bool_expression(v) for v in values)


def _method_receiver(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _operand(expr: cst.BaseExpression, invert: bool = False) -> cst.BaseExpression:
    """`expr` parenthesised where `&`, `|` or `~` would bind tighter than it does."""
    loose = (cst.Comparison, cst.BooleanOperation, cst.IfExp, cst.Lambda)
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

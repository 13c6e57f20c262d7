"""The kind of an expression: literals, names, attributes, subscripts, operators.

`ExpressionKinds` is the part of `Facts` that every question starts from (`kind`); names go
to `BindingKinds`, calls to `CallKinds`, items of containers to `ContainerKinds`. It also
gives `self.NAME` its kind from what the class assigns, and asks a kind with some names
bound to given kinds (`kind_with_bindings`: a lambda's or a helper's parameters).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.kinds.bindings import SelfAttributes, annotation_kind, is_literal, is_none
from compile_lint.analysis.kinds.calls import TORCH_NON_TENSOR, TORCH_NON_TENSOR_PREFIXES
from compile_lint.analysis.kinds.lattice import Kind, combine, join
from compile_lint.analysis.kinds.parts import FactsParts
from compile_lint.analysis.syntax.imports import dotted_name

TENSOR_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim"})
TENSOR_PY_ATTRIBUTES = frozenset(
    {"dtype", "device", "is_cuda", "is_cpu", "is_meta", "is_sparse", "is_quantized",
     "requires_grad", "layout", "is_leaf", "grad_fn", "names", "is_mps", "is_nested"}
)
TENSOR_TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag", "data", "grad"})


def array_index(expr: cst.Subscript) -> bool:
    """`x[:, 0]`, `x[..., 1:]`: several axes, one of them a slice or `...`."""
    if len(expr.slice) < 2:
        return False
    return any(isinstance(element.slice, cst.Slice) or (
        isinstance(element.slice, cst.Index) and isinstance(element.slice.value, cst.Ellipsis))
        for element in expr.slice)


class ExpressionKinds(FactsParts):
    """The kinds of expressions (a part of `Facts`)."""

    def kind(self, expr: cst.BaseExpression, function: Optional[cst.FunctionDef]) -> Kind:
        """The kind of `expr` evaluated inside `function`."""
        if function is None:
            return Kind.UNKNOWN
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
                             cst.ConcatenatedString, cst.FormattedString)):
            return Kind.PY
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return Kind.PY
            flow = self._read_kind(expr, function)
            return flow if flow is not None else self.name_kind(expr.value, function)
        if isinstance(expr, cst.Attribute):
            return self._attribute_kind(expr, function)
        if isinstance(expr, cst.Call):
            return self._call_kind(expr, function)
        if isinstance(expr, cst.Subscript):
            base = self.kind(expr.value, function)
            if base is Kind.PENDING:
                return base
            if base in (Kind.MAYBE_TENSOR, Kind.UNKNOWN) and array_index(expr):
                # `grid_thw[:, 0]`, `mask[..., 1:]`: only a tensor (or an array) takes a multi-axis
                # slice (None, a list or a tuple would raise), so past this point it is one.
                return Kind.TENSOR
            if base in (Kind.TENSOR, Kind.MAYBE_TENSOR, Kind.SHAPE, Kind.NDARRAY):
                return base
            if base is Kind.LIST:
                return self._list_item_kind(expr, function)
            return Kind.UNKNOWN
        if isinstance(expr, cst.BinaryOperation):
            if self.draw_arithmetic(expr, function):
                return Kind.UNKNOWN  # Dynamo cannot compute it (draws.py): no value to use downstream
            return combine([self.kind(expr.left, function), self.kind(expr.right, function)])
        if isinstance(expr, cst.UnaryOperation):
            if self.draw_arithmetic(expr, function):
                return Kind.UNKNOWN
            inner = self.kind(expr.expression, function)
            if isinstance(expr.operator, cst.Not):
                return Kind.DATA if inner.tensorish else (Kind.PY if inner in (Kind.PY, Kind.SHAPE) else inner)
            return inner
        if isinstance(expr, cst.Comparison):
            if all(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in expr.comparisons):
                return Kind.PY
            kinds = [self.kind(expr.left, function)] + [self.kind(t.comparator, function) for t in expr.comparisons]
            return combine(kinds)
        if isinstance(expr, cst.BooleanOperation):
            return combine([self.kind(expr.left, function), self.kind(expr.right, function)])
        if isinstance(expr, cst.IfExp):
            return join([self.kind(expr.body, function), self.kind(expr.orelse, function)])
        if isinstance(expr, (cst.List, cst.ListComp, cst.Tuple)):
            return Kind.LIST
        if isinstance(expr, (cst.Dict, cst.DictComp)):
            return Kind.DICT
        if isinstance(expr, cst.NamedExpr):
            return self.kind(expr.value, function)
        return Kind.UNKNOWN

    def _attribute_kind(self, expr: cst.Attribute, function: cst.FunctionDef) -> Kind:
        attr = expr.attr.value
        if isinstance(expr.value, cst.Name) and expr.value.value == "self":
            if self.param_kind(function, "self") is Kind.SELF or function in self.regions.owner_class:
                return self.self_attribute_kind(attr, function)
        qualified = self.imports.qualname(expr)
        if qualified is not None:
            dtypes = ("float32", "float16", "bfloat16", "long", "int64", "bool", "float", "int32")
            if qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in dtypes:
                return Kind.PY
            return Kind.UNKNOWN
        base = self.kind(expr.value, function)
        if base is Kind.PENDING:
            return base
        if base.tensorish:
            if attr in TENSOR_SHAPE_ATTRIBUTES:
                return Kind.SHAPE
            if attr in TENSOR_PY_ATTRIBUTES:
                return Kind.PY
            if attr in TENSOR_TENSOR_ATTRIBUTES:
                return base
            return Kind.UNKNOWN
        if base is Kind.SHAPE:
            return Kind.SHAPE
        if base is Kind.PY:
            return Kind.PY
        return Kind.UNKNOWN

    def self_attributes(self, cls: cst.ClassDef) -> SelfAttributes:
        """The values assigned to `self.NAME` anywhere in `cls`."""
        if cls not in self.memo.self_attributes:
            self.memo.self_attributes[cls] = SelfAttributes(cls, self.imports)
        return self.memo.self_attributes[cls]

    def self_attribute_kind(self, attr: str, function: cst.FunctionDef) -> Kind:
        """The kind of `self.attr` read in a method of a module class."""
        cls = self.regions.owner_class.get(function)
        if cls is None:
            return Kind.UNKNOWN
        if attr == "training":
            return Kind.PY
        attrs = self.self_attributes(cls)
        if attr in attrs.buffers:
            return Kind.TENSOR
        values = attrs.values.get(attr)
        if not values:
            return Kind.UNKNOWN
        kinds = [self._attribute_value_kind(v, attrs.assigned_in.get(v)) for v in values]
        return join(kinds)

    def _attribute_value_kind(self, value: cst.BaseExpression, method: Optional[cst.FunctionDef] = None) -> Kind:
        if is_literal(value) or is_none(value):
            return Kind.PY
        if isinstance(value, cst.Name) and method is not None:
            # `self.eps = eps`: the constructor parameter's default or annotation tells.
            params = method.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                if param.name.value == value.value:
                    annotated = annotation_kind(param.annotation, self.imports)
                    if annotated is not None:
                        return annotated
                    if param.default is not None and is_literal(param.default):
                        return Kind.PY
            return Kind.UNKNOWN
        if isinstance(value, cst.Call):
            name = self.imports.qualname(value.func) or dotted_name(value.func) or ""
            if name in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer"):
                return Kind.TENSOR
            if name.startswith("torch.nn.") and name.rsplit(".", 1)[-1][:1].isupper():
                return Kind.MODULE
            if name in self.regions.module_classes:
                return Kind.MODULE
            if (name.startswith("torch.") and name not in TORCH_NON_TENSOR
                    and not name.startswith(TORCH_NON_TENSOR_PREFIXES)):
                return Kind.TENSOR
            if name in ("builtins.list",) or isinstance(value, cst.List):
                return Kind.LIST
            if name in ("builtins.dict",):
                return Kind.DICT
            short = name.rsplit(".", 1)[-1]
            if short[:1].isupper():
                return Kind.MODULE  # a constructed submodule, most likely
            return Kind.UNKNOWN
        if isinstance(value, (cst.List, cst.ListComp)):
            return Kind.LIST
        if isinstance(value, (cst.Dict, cst.DictComp)):
            return Kind.DICT
        if isinstance(value, cst.Attribute):
            return Kind.PY  # e.g. self.eps = config.layer_norm_eps
        return Kind.UNKNOWN

    def kind_with_bindings(self, expr: cst.BaseExpression, function: cst.FunctionDef,
                           bindings: dict[str, Kind]) -> Kind:
        """The kind of `expr` with some names bound to given kinds (a lambda's or a helper's parameters).

        Kinds worked out meanwhile may depend on the bindings, so the caches are restored
        afterwards.
        """
        memo = self.memo
        saved = memo.kinds_so_far()
        memo.names.update({(function, name): kind for name, kind in bindings.items()})
        memo.param_bindings.update({(function, name): kind for name, kind in bindings.items()})
        try:
            return self.kind(expr, function)
        finally:
            memo.restore_kinds(saved)

"""What lists, tuples and dicts hold: the kinds of their items.

`ContainerKinds` is the part of `Facts` that gives the kind of the elements of a list,
tuple or iterable (`[x, x * 2]`, an accumulator `out.append(x)`, `x.unbind(0)`, a
ModuleList), of a dict's values, of an item read with a literal index, and of the targets
of `for a, b in enumerate(xs)` / `zip(xs, ys)` / `d.items()`.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.kinds.bindings import annotation_kind, is_literal
from compile_lint.analysis.kinds.lattice import Kind, join
from compile_lint.analysis.kinds.parts import FactsParts


class ContainerKinds(FactsParts):
    """The kinds of the items of containers (a part of `Facts`)."""

    def element_kind(self, expr: cst.BaseExpression, function: cst.FunctionDef) -> Kind:
        """The kind of the elements of the list, tuple or iterable `expr` (joined).

        `[x, x * 2]`, `torch.stack`-style accumulators (`out = []; out.append(x)`) and
        `x.unbind(0)` hold tensors; `self.layers` (a ModuleList) holds modules. The
        elements' kinds are joined: tensors mixed with unknown values give MAYBE_TENSOR,
        unknown values alone give UNKNOWN.
        """
        return join(self._element_kinds(expr, function))

    def _element_kinds(self, expr: cst.BaseExpression, function: cst.FunctionDef) -> list[Kind]:
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            kinds: list[Kind] = []
            for element in expr.elements:
                if isinstance(element, cst.StarredElement):
                    kinds.extend(self._element_kinds(element.value, function))
                else:
                    kinds.append(self.kind(element.value, function))
            return kinds
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return [self.kind(expr.elt, function)]
        if isinstance(expr, cst.Subscript):
            return self._element_kinds(expr.value, function)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            return self._element_kinds(expr.left, function) + self._element_kinds(expr.right, function)
        if isinstance(expr, cst.Name):
            return self._name_element_kinds(expr.value, function)
        if isinstance(expr, cst.Call):
            qualified = self.imports.qualname(expr.func) or ""
            if qualified in ("builtins.list", "builtins.tuple", "builtins.sorted", "builtins.reversed",
                             "builtins.set") and expr.args:
                return self._element_kinds(expr.args[0].value, function)
            if qualified in ("torch.unbind", "torch.split", "torch.chunk", "torch.tensor_split"):
                return [Kind.TENSOR]
            func = expr.func
            if isinstance(func, cst.Attribute):
                receiver = self.kind(func.value, function)
                if receiver is Kind.TENSOR and func.attr.value in ("unbind", "split", "chunk", "tensor_split"):
                    return [Kind.TENSOR]
                if func.attr.value == "values" and not expr.args:
                    return [self.dict_value_kind(func.value, function)]
        whole = self.kind(expr, function)
        if whole in (Kind.TENSOR, Kind.MODULE):
            return [whole]  # iterating a tensor gives tensors; a ModuleList gives modules
        if whole is Kind.LIST and isinstance(expr, cst.Attribute):
            cls = self.regions.owner_class.get(function)
            if cls is not None and isinstance(expr.value, cst.Name) and expr.value.value == "self":
                values = self.self_attributes(cls).values.get(expr.attr.value, [])
                if all(isinstance(v, (cst.List, cst.Tuple)) for v in values):
                    return [Kind.PY if is_literal(v) else Kind.UNKNOWN for v in values]
        return [Kind.UNKNOWN]

    def _name_element_kinds(self, name: str, function: cst.FunctionDef) -> list[Kind]:
        key = ("elements", function, name)
        if key in self.memo.in_progress:
            return []
        self.memo.in_progress.add(key)
        try:
            param = self.param_kind(function, name)
            if param is Kind.TENSOR and not self.assignments(function).get(name) and self._certain_parameter(
                    function, name, 1):
                return [Kind.TENSOR]  # every call passes a tensor (or a tuple of them): its rows are tensors
            if param not in (None, Kind.LIST):
                return [Kind.UNKNOWN]
            kinds: list[Kind] = []
            if self.param_kind(function, name) is Kind.LIST:
                kinds.append(Kind.UNKNOWN)
            for value in self.assignments(function).get(name, []):
                if isinstance(value, cst.BaseExpression):
                    kinds.extend(self._element_kinds(value, function))
                elif isinstance(value, tuple) and value[0] == "aug" and isinstance(value[2], cst.BaseExpression):
                    kinds.extend(self._element_kinds(value[2], function))
                else:
                    kinds.append(Kind.UNKNOWN)
            for added in self._added_to(function, name):
                if isinstance(added, tuple):
                    kinds.extend(self._element_kinds(added[1], function))
                else:
                    kinds.append(self.kind(added, function))
            return kinds
        finally:
            self.memo.in_progress.discard(key)

    def _unpacked_iteration_kind(self, value: object, index: int, function: cst.FunctionDef) -> Optional[Kind]:
        """Kind of `b` in `for a, b in enumerate(xs)` / `zip(xs, ys)` / `d.items()`, or None."""
        if not (isinstance(value, tuple) and value[0] == "iter" and isinstance(value[1], cst.Call)):
            return None
        call = value[1]
        qualified = self.imports.qualname(call.func) or ""
        args = [a.value for a in call.args if a.keyword is None and not a.star]
        element: Optional[Kind] = None
        if qualified == "builtins.enumerate" and args:
            element = Kind.SHAPE if index == 0 else self.element_kind(args[0], function) if index == 1 else None
        elif qualified == "builtins.zip" and index < len(args) and len(args) == len(call.args):
            element = self.element_kind(args[index], function)
        elif (isinstance(call.func, cst.Attribute) and call.func.attr.value == "items" and not call.args
                and index == 1):
            element = self.dict_value_kind(call.func.value, function)
        if element is None:
            return None
        return element if element in (Kind.TENSOR, Kind.MODULE, Kind.SHAPE, Kind.PY) else Kind.UNKNOWN

    def dict_value_kind(self, expr: cst.BaseExpression, function: cst.FunctionDef) -> Kind:
        """The kind of the values of the dict `expr` (joined); UNKNOWN when unsure."""
        if isinstance(expr, cst.Dict):
            return join(self.kind(e.value, function) if isinstance(e, cst.DictElement) else Kind.UNKNOWN
                        for e in expr.elements)
        if isinstance(expr, cst.DictComp):
            return self.kind(expr.value, function)
        if isinstance(expr, cst.Name):
            annotated = self._dict_annotation_value_kind(expr.value, function)
            if annotated is not None:
                return annotated
            values = self.assignments(function).get(expr.value, [])
            if values and all(isinstance(v, (cst.Dict, cst.DictComp)) for v in values):
                return join(self.dict_value_kind(v, function) for v in values)  # type: ignore[arg-type]
        return Kind.UNKNOWN

    def _dict_annotation_value_kind(self, name: str, function: cst.FunctionDef) -> Optional[Kind]:
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value != name or param.annotation is None:
                continue
            annotation = param.annotation.annotation
            if isinstance(annotation, cst.Subscript) and len(annotation.slice) == 2:
                value = annotation.slice[1].slice
                if isinstance(value, cst.Index):
                    return annotation_kind(cst.Annotation(value.value), self.imports)
        return None

    def _list_item_kind(self, expr: cst.Subscript, function: cst.FunctionDef) -> Kind:
        """`outputs[0]` of a tuple: the item's kind when certain (a literal index of a returned tuple,
        or the one kind all elements share)."""
        if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
            return Kind.UNKNOWN  # a slice of a list is a list
        index = expr.slice[0].slice.value
        if isinstance(expr.value, cst.Call) and isinstance(index, cst.Integer):
            returned = self.returned_element_kind(expr.value, int(index.value), function)
            if returned is not None:
                return returned
        element = self.element_kind(expr.value, function)
        return element if element in (Kind.TENSOR, Kind.SHAPE, Kind.PY) else Kind.UNKNOWN

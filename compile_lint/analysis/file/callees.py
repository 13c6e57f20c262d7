"""Which function of the file a call in traced code runs: a helper, a method, or a submodule's forward.

`self.rotary(seqlen)` runs `forward` of the class `self.rotary` was built from in
`__init__` (`self.rotary = VisionRotaryEmbedding(dim)`), and so do `self.blocks[i](x)` and
`blk(x)` in `for blk in self.blocks:` when `self.blocks = nn.ModuleList([Block(...) for
...])`. Knowing the callee lets argument kinds flow into it and its return kinds flow back.
Only classes defined in this file are followed; anything unsure gives None.
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from compile_lint.analysis.syntax.imports import ImportMap

_CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.modules.container.ModuleList",
                         "torch.nn.modules.container.Sequential"})
_MAX_DEPTH = 8


class Callees:
    """Call targets inside one file's traced functions.

    `module_classes` are the file's nn.Module classes by name, `owner_class` maps methods to
    their class, `self_values(cls, attr)` gives what the class assigns to `self.attr`,
    `assignments(function)` a function's local bindings and `find_method(cls, name)` a
    method through the class's same-file bases.
    """

    def __init__(
        self,
        imports: ImportMap,
        module_classes: dict[str, cst.ClassDef],
        owner_class: dict[cst.FunctionDef, cst.ClassDef],
        self_values: Callable[[cst.ClassDef, str], list],
        assignments: Callable[[cst.FunctionDef], dict],
        find_method: Callable[[cst.ClassDef, str], Optional[cst.FunctionDef]],
    ) -> None:
        self.imports = imports
        self.module_classes = module_classes
        self.owner_class = owner_class
        self.self_values = self_values
        self.assignments = assignments
        self.find_method = find_method

    def module_forward(self, call: cst.Call, function: cst.FunctionDef) -> Optional[cst.FunctionDef]:
        """`forward` of the submodule `call` calls (`self.attn(x)`, `blk(x)`, `self.blocks[0](x)`), or None."""
        cls = self.instance_class(call.func, function)
        return self.find_method(cls, "forward") if cls is not None else None

    def instance_class(self, expr: cst.BaseExpression, function: cst.FunctionDef,
                       depth: int = 0) -> Optional[cst.ClassDef]:
        """The module class of this file whose instance `expr` certainly is, or None."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Attribute) and _is_self(expr.value):
            return self._self_attribute_class(expr, function, element=False)
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            return self.element_class(expr.value, function, depth + 1)
        if isinstance(expr, cst.Name):
            values = self.assignments(function).get(expr.value, [])
            if not values:
                return None
            classes = {self._bound_class(value, function, depth + 1) for value in values}
            return classes.pop() if len(classes) == 1 else None
        return None

    def element_class(self, expr: cst.BaseExpression, function: cst.FunctionDef,
                      depth: int = 0) -> Optional[cst.ClassDef]:
        """The module class of every element of the ModuleList/Sequential `expr` (`self.blocks`), or None."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Attribute) and _is_self(expr.value):
            return self._self_attribute_class(expr, function, element=True)
        return None

    def _self_attribute_class(self, expr: cst.Attribute, function: cst.FunctionDef,
                              element: bool) -> Optional[cst.ClassDef]:
        """The one class every value the owner class assigns to `self.NAME` has (or its elements have)."""
        owner = self.owner_class.get(function)
        if owner is None:
            return None
        classes = set()
        for value in self.self_values(owner, expr.attr.value):
            found = self._elements_class(value) if element else self._constructed_class(value)
            if found is None:
                return None
            classes.add(found)
        return classes.pop() if len(classes) == 1 else None

    def _bound_class(self, value: object, function: cst.FunctionDef, depth: int) -> Optional[cst.ClassDef]:
        """The class a local's binding gives it: `blk = self.block`, `for blk in self.blocks`."""
        if isinstance(value, cst.BaseExpression):
            return self.instance_class(value, function, depth)
        if isinstance(value, tuple) and value[0] == "iter" and isinstance(value[1], cst.BaseExpression):
            return self.element_class(value[1], function, depth)
        if isinstance(value, tuple) and value[0] == "element" and value[2] == 1:
            inner = value[1]
            # `for i, blk in enumerate(self.blocks)`
            if isinstance(inner, tuple) and inner[0] == "iter" and isinstance(inner[1], cst.Call):
                call = inner[1]
                if self.imports.qualname(call.func) == "builtins.enumerate" and call.args:
                    return self.element_class(call.args[0].value, function, depth)
        return None

    def _constructed_class(self, value: cst.BaseExpression) -> Optional[cst.ClassDef]:
        """`Block(config)` -> Block, when Block is a module class of this file."""
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            return self.module_classes.get(value.func.value)
        return None

    def _elements_class(self, value: cst.BaseExpression) -> Optional[cst.ClassDef]:
        """The class of every module in `nn.ModuleList([Block() for _ in ...])` / `nn.Sequential(A(), A())`."""
        if not (isinstance(value, cst.Call) and self.imports.qualname(value.func) in _CONTAINERS):
            return None
        elements: list[cst.BaseExpression] = []
        for arg in value.args:
            if arg.keyword is not None:
                return None
            elements.extend(_listed(arg.value) if arg.star == "*" or len(value.args) == 1 else [arg.value])
        classes = {self._constructed_class(element) for element in elements}
        return classes.pop() if len(classes) == 1 and elements else None


def parameters_passed(function: cst.FunctionDef, method: bool) -> list[str]:
    """The names a call fills positionally: a method's `self`/`cls` is bound, not passed."""
    positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    return positional[1:] if method and positional[:1] in (["self"], ["cls"]) else positional


def passed_argument(call: cst.Call, name: str, positional: list[str]) -> Optional[cst.BaseExpression]:
    """The expression `call` passes to parameter `name` (`positional`: `parameters_passed`), or None.

    None too when a `*args` or `**kwargs` splat may be what passes it.
    """
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    plain = [arg for arg in call.args if arg.keyword is None and not arg.star]
    if any(arg.star == "*" for arg in call.args) or name not in positional:
        return None
    index = positional.index(name)
    return plain[index].value if index < len(plain) else None


def _listed(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The element expressions of a list/tuple literal or comprehension; [expr] otherwise."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return [element.value for element in expr.elements if not isinstance(element, cst.StarredElement)]
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        return [expr.elt]
    return [expr]


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"

"""Shared analysis for the JIT2xx rules: is this expression tensor data read into Python?

Private to the rules package (the leading underscore keeps rule discovery out of it).
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind, annotation_kind, returned_values
from compile_lint.analysis.syntax.imports import dotted_name
from compile_lint.analysis.syntax.walk import visit
from compile_lint.fixes.branches.conditions import data_dependent
from compile_lint.rules.base import Rule
from compile_lint.rules.support.syntax import class_method

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
    if data_dependent(rule.context, expr) is not expr or isinstance(expr, (cst.BooleanOperation, cst.UnaryOperation)):
        return False
    return not (_unpacked_from_untyped_param(rule, expr, depth=0) or _python_valued(rule, expr, depth=0))


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


# Arithmetic over locals nests quickly: `n - 3` <- `h * w + 3` <- `2 * size[0] - 1`.
_MAX_DEPTH = 12


def _python_valued(rule: Rule, expr: cst.BaseExpression, depth: int) -> bool:
    """True when what the facts call a tensor in `expr` is a Python value after all.

    Sources the facts take for tensors: torch functions that return Python values
    (`torch.seed() % n`, `torch.__version__`); elements of a tuple a sub-module or helper
    returns (`hidden, height, width = self.patch_embed(x)`, where only `hidden` is a
    tensor) unless the callee in this file returns a tensor there; parameters not
    declared tensors (`window_size[0]`, `height * width`); and a name inside
    `if isinstance(name, int):`.
    """
    context = rule.context
    if depth > _MAX_DEPTH:
        return False
    if not context.kind(expr).tensorish:
        return True
    if isinstance(expr, cst.BinaryOperation):
        return _python_valued(rule, expr.left, depth + 1) and _python_valued(rule, expr.right, depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return _python_valued(rule, expr.expression, depth + 1)
    if isinstance(expr, cst.Subscript):
        return _python_valued(rule, expr.value, depth + 1)
    if isinstance(expr, (cst.Call, cst.Attribute)):
        target = expr.func if isinstance(expr, cst.Call) else expr
        qualified = context.qualname(target) or ""
        return qualified in _TORCH_PYTHON_VALUES or qualified.startswith(("torch.__", "torch.version."))
    if not isinstance(expr, cst.Name):
        return False
    if _narrowed_to_number(rule, expr):
        return True
    values = context.local_values(expr.value)
    # Asked of a name inside a function (param_kind reads its parameters): never None here.
    if context.facts.param_kind(context.function, expr.value) is not None:  # type: ignore[arg-type]
        # As in `data_dependent`: a parameter not declared a Tensor is as often a Python
        # number or a tuple of them (`window_size`, `height`) as a tensor.
        return not values and _untyped_param(rule, expr.value)
    if not values:
        return False
    for value in values:
        if isinstance(value, tuple) and value[0] == "element" and len(value) == 3:
            source, index = value[1], value[2]
            if index == 0 and _iterates_items(source):
                continue  # `for key, value in d.items()`: the keys of a dict of tensors are not tensors
            source = _sole_call_binding(rule, source)
            if isinstance(source, cst.Call):
                if _returns_tensor_at(rule, source, index):
                    return False
            elif not (isinstance(source, cst.BaseExpression) and _python_valued(rule, source, depth + 1)):
                return False  # unpacked while iterating (`for h, w in zip(x_h, x_w)`): facts decide
        elif not (isinstance(value, cst.BaseExpression) and _python_valued(rule, value, depth + 1)):
            return False
    return True


def _iterates_items(source: object) -> bool:
    """True for the ("iter", `d.items()`) binding of a loop target."""
    if not (isinstance(source, tuple) and source[0] == "iter" and isinstance(source[1], cst.Call)):
        return False
    call = source[1]
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "items" and not call.args


def _sole_call_binding(rule: Rule, source: object) -> object:
    """The call a local name was bound to (`out = layer(x); y, h, w = out`), else `source`."""
    if isinstance(source, cst.Name):
        values = rule.context.local_values(source.value)
        if len(values) == 1 and isinstance(values[0], cst.Call):
            return values[0]
    return source


# torch functions that return Python numbers or strings (facts take every torch.* call for a tensor).
_TORCH_PYTHON_VALUES = frozenset({
    "torch.seed", "torch.initial_seed", "torch.get_num_threads", "torch.get_num_interop_threads",
    "torch.get_default_dtype", "torch.are_deterministic_algorithms_enabled",
})
_NUMBER_TYPES = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.complex"})


def _narrowed_to_number(rule: Rule, name: cst.Name) -> bool:
    """True inside `if isinstance(name, int):` (or a tuple of number types)."""
    context = rule.context
    child: cst.CSTNode = name
    parent = context.parent(name)
    while parent is not None and not isinstance(parent, cst.FunctionDef):
        if isinstance(parent, cst.If) and child is parent.body:
            test = parent.test
            if (isinstance(test, cst.Call) and context.qualname(test.func) == "builtins.isinstance"
                    and len(test.args) == 2 and isinstance(test.args[0].value, cst.Name)
                    and test.args[0].value.value == name.value):
                kinds = test.args[1].value
                types = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
                if types and all(context.qualname(t) in _NUMBER_TYPES for t in types):
                    return True
        child, parent = parent, context.parent(parent)
    return False


def _returns_tensor_at(rule: Rule, call: cst.Call, index: int) -> bool:
    """True when element `index` of what `call` returns is certainly a tensor.

    torch functions and tensor methods (`x.max(dim)`, `x.chunk(2)`) return tensors; a
    sub-module or a function of this file is judged by its `return` statements; any
    other call (a module from another file) is not known.
    """
    context = rule.context
    func = call.func
    qualified = context.qualname(func) or ""
    if qualified.startswith("torch.") and not qualified.startswith("torch.nn.modules"):
        return True
    if isinstance(func, cst.Attribute) and not _is_self(func.value) and context.kind(func.value).tensorish:
        return True
    callee = _callee(rule, call)
    if callee is None:
        return False
    returned = returned_values(callee)
    return bool(returned) and all(
        isinstance(value, cst.Tuple) and index < len(value.elements)
        and not isinstance(value.elements[index], cst.StarredElement)
        and context.facts.kind(value.elements[index].value, callee) is Kind.TENSOR
        for value in returned
    )


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def _callee(rule: Rule, call: cst.Call) -> Optional[cst.FunctionDef]:
    """The function of this file `call` runs: `self.method`, a helper, or a sub-module's forward."""
    context = rule.context
    func = call.func
    classes = context.regions.module_classes
    if isinstance(func, cst.Attribute) and _is_self(func.value) and context.owner_class is not None:
        method = class_method(context.owner_class, func.attr.value)
        if method is not None:
            return method
    if isinstance(func, cst.Name):
        for function in context.regions.functions:
            if function.name.value == func.value and function not in context.regions.owner_class:
                return function
    made = [value for value in context.bound_values(func) if isinstance(value, cst.Call)]
    names = {dotted_name(value.func) for value in made}
    if len(made) == 1 and len(names) == 1:
        cls = classes.get(names.pop() or "")
        if cls is not None:
            return class_method(cls, "forward")
    return None


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
            # `np.sqrt(x.shape[-1])` reads a size, not tensor data.
            if (isinstance(node, (cst.Subscript, cst.Attribute, cst.Call))
                    and context.kind(node) in (Kind.SHAPE, Kind.PY)):
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

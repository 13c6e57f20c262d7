"""Facts: what kind of value an expression in a traced function holds.

This is what lets a rule tell `if x.sum() > 0:` (a tensor: data-dependent) from
`if x.dim() == 4:` (a shape: guarded), `if mask is not None:` and `if self.training:`.
Reads of locals bound more than once see the bindings that reach them (`reaching`);
other names merge everything bound to them. Across calls of the file (`callees`),
parameters take the kinds the calls pass and calls the kinds their targets return.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Union

import libcst as cst

from compile_lint.analysis.file.callees import Callees, parameters_passed, passed_argument
from compile_lint.analysis.syntax.imports import ImportMap, dotted_name
from compile_lint.analysis.file.reaching import Binding, ReachingBindings, target_bindings
from compile_lint.analysis.file.regions import Regions
from compile_lint.analysis.syntax.calls import calls_in
from compile_lint.analysis.syntax.walk import visit

if TYPE_CHECKING:
    from compile_lint.analysis.file.context import FileContext


class Kind(enum.Enum):
    """What an expression holds, as far as compile-lint can tell."""

    TENSOR = "tensor"  # certainly a tensor (or a tuple of tensors)
    MAYBE_TENSOR = "maybe-tensor"  # an optional tensor, or a tensor on some paths only
    SHAPE = "shape"  # sizes: x.shape, x.size(i), x.dim(), len(x); guarded by Dynamo
    DATA = "data"  # a Python value read out of tensor data: .item(), .tolist(), float(t)
    PY = "python"  # a Python value that does not depend on tensor data
    NDARRAY = "ndarray"
    LIST = "list"
    DICT = "dict"
    MODULE = "module"
    SELF = "self"
    UNKNOWN = "unknown"
    # A name read while its own definition is being analysed (`x = self.norm(x)`):
    # neutral in merges, so the other assignments decide.
    PENDING = "pending"

    @property
    def tensorish(self) -> bool:
        """True for certain and possible tensors."""
        return self in (Kind.TENSOR, Kind.MAYBE_TENSOR)


# torch functions whose result is not a tensor.
_TORCH_NON_TENSOR = {
    "torch.is_tensor": Kind.PY,
    "torch.is_floating_point": Kind.PY,
    "torch.is_complex": Kind.PY,
    "torch.is_grad_enabled": Kind.PY,
    "torch.is_inference_mode_enabled": Kind.PY,
    "torch.get_default_dtype": Kind.PY,
    "torch.numel": Kind.SHAPE,
    "torch.Size": Kind.SHAPE,
    "torch.broadcast_shapes": Kind.SHAPE,
    "torch.device": Kind.PY,
    "torch.dtype": Kind.PY,
    "torch.finfo": Kind.PY,
    "torch.iinfo": Kind.PY,
    "torch.get_autocast_dtype": Kind.PY,
    "torch.is_autocast_enabled": Kind.PY,
    "torch.sym_int": Kind.SHAPE,
    "torch.sym_float": Kind.SHAPE,
    "torch.sym_max": Kind.SHAPE,
    "torch.sym_min": Kind.SHAPE,
    "torch._assert": Kind.PY,
    # Python bools computed from data: torch tags them data_dependent_output (the rules'
    # generated DATA_DEPENDENT_OUTPUT_FUNCTIONS; tests/test_torch_tables.py keeps the two equal).
    "torch.equal": Kind.DATA,
    "torch.allclose": Kind.DATA,
}
_TORCH_NON_TENSOR_PREFIXES = (
    "torch.compiler.",
    "torch._dynamo.",
    "torch.jit.",
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.library.",
    "torch.utils.",
    "torch.autograd.",
    "torch.testing.",
    "torch.amp.",
    "torch.autocast",
    "torch.no_grad",
    "torch.enable_grad",
    "torch.inference_mode",
    "torch.set_grad_enabled",
    "torch.compile",
    "torch.manual_seed",
    "torch.set_",
    "torch.use_deterministic",
    "torch.nn.init.",
    "torch.nn.utils.",
    "torch.fx.",
    "torch.export.",
    "torch.onnx.",
    "torch.profiler.",
    "torch._C.",
    "torch.ops.",
)
TENSOR_SHAPE_METHODS = frozenset(
    {"size", "dim", "ndimension", "numel", "nelement", "stride", "element_size",
     "storage_offset", "__len__"}
)
TENSOR_PY_METHODS = frozenset(
    {"is_floating_point", "is_complex", "is_contiguous", "is_signed", "get_device",
     "is_pinned", "is_shared", "is_set_to", "has_names", "is_nonzero_shape"}
)
TENSOR_DATA_METHODS = frozenset({"item", "tolist", "data_ptr", "equal", "allclose"})  # see _TORCH_NON_TENSOR
TENSOR_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim"})
TENSOR_PY_ATTRIBUTES = frozenset(
    {"dtype", "device", "is_cuda", "is_cpu", "is_meta", "is_sparse", "is_quantized",
     "requires_grad", "layout", "is_leaf", "grad_fn", "names", "is_mps", "is_nested"}
)
TENSOR_TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real", "imag", "data", "grad"})
_SCALAR_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "complex", "bytes"})
_DICT_ANNOTATIONS = frozenset({"dict", "Dict", "typing.Dict", "Mapping", "typing.Mapping"})
_LIST_ANNOTATIONS = frozenset({"list", "List", "typing.List", "Sequence", "typing.Sequence"})
_CONTAINER_TYPES = {"builtins.list": Kind.LIST, "builtins.dict": Kind.DICT, "builtins.set": Kind.PY}


def join(kinds: Iterable[Kind]) -> Kind:
    """The kind of a name assigned several values (flow-insensitive merge)."""
    found = set(kinds) - {Kind.PENDING}
    if not found:
        return Kind.PENDING if Kind.PENDING in set(kinds) else Kind.UNKNOWN
    if len(found) == 1:
        return found.pop()
    if found <= {Kind.PY, Kind.SHAPE}:
        return Kind.SHAPE
    if found & {Kind.TENSOR, Kind.MAYBE_TENSOR}:
        return Kind.MAYBE_TENSOR
    if Kind.DATA in found:
        return Kind.DATA
    return Kind.UNKNOWN


def _combine(kinds: list[Kind]) -> Kind:
    """The kind of arithmetic or a comparison over operands of `kinds`."""
    kinds = [k for k in kinds if k is not Kind.PENDING] or [Kind.PENDING]
    if kinds == [Kind.PENDING]:
        return Kind.PENDING
    if Kind.TENSOR in kinds:
        return Kind.TENSOR
    if Kind.MAYBE_TENSOR in kinds:
        return Kind.MAYBE_TENSOR
    if Kind.NDARRAY in kinds:
        return Kind.NDARRAY
    if Kind.DATA in kinds:
        return Kind.DATA
    if Kind.SHAPE in kinds and all(k in (Kind.SHAPE, Kind.PY) for k in kinds):
        return Kind.SHAPE
    if all(k is Kind.PY for k in kinds):
        return Kind.PY
    return Kind.UNKNOWN


# Every torch.Tensor method named get_* or is_* (torch 2.13); any other such name is not a tensor's.
_TENSOR_GET_IS_METHODS = frozenset({
    "get_device", "is_coalesced", "is_complex", "is_conj", "is_contiguous", "is_cpu", "is_cuda",
    "is_distributed", "is_floating_point", "is_inference", "is_ipu", "is_leaf", "is_maia", "is_meta",
    "is_mkldnn", "is_mps", "is_mtia", "is_neg", "is_nested", "is_nonzero", "is_pinned", "is_quantized",
    "is_same_size", "is_set_to", "is_shared", "is_signed", "is_sparse", "is_sparse_csr", "is_vulkan",
    "is_xla", "is_xpu",
})

# torch arithmetic that Dynamo traces symbolically when every argument is a size or a number.
_TORCH_SIZE_ARITHMETIC = frozenset({"torch.div"})

# How deep `certain_tensor` follows names, calls and operands.
_CERTAINTY_DEPTH = 8

# Reads of one function worked out afresh before its flow-sensitive kinds give up (uncached
# reads in loops can otherwise multiply).
_READ_BUDGET = 20000

# Python `random` draws that Dynamo traces as 0-d tensors (its RandomVariable functions,
# torch 2.13): `if random.uniform(0, 1) < p:` is data-dependent branching (measured). Eager
# code gets a float or an int: a tensor only under Dynamo, which no fix may rest on
# (certainty.tensor_evidence).
TRACED_RANDOM_DRAWS = frozenset({"random.uniform", "random.randint", "random.randrange"})


def annotation_kind(annotation: Optional[cst.Annotation], imports: ImportMap) -> Optional[Kind]:
    """The kind an annotation promises, or None when it says nothing we use."""
    if annotation is None:
        return None
    expr = annotation.annotation
    if isinstance(expr, cst.SimpleString):
        return None
    optional = False
    if isinstance(expr, cst.Subscript):
        head = dotted_name(expr.value) or ""
        if head.rsplit(".", 1)[-1] == "Optional" and expr.slice:
            inner = expr.slice[0].slice
            if isinstance(inner, cst.Index):
                expr, optional = inner.value, True
        else:
            expr = expr.value
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        sides = [expr.left, expr.right]
        non_none = [s for s in sides if not (isinstance(s, cst.Name) and s.value == "None")]
        if len(non_none) == 1:
            expr, optional = non_none[0], True
    name = imports.qualname(expr) or dotted_name(expr) or ""
    short = name.rsplit(".", 1)[-1]
    if name in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor") or short == "Tensor":
        return Kind.MAYBE_TENSOR if optional else Kind.TENSOR
    if short in _SCALAR_ANNOTATIONS:
        return Kind.PY
    if name == "torch.Size":
        # `input_shape: torch.Size` (transformers' positional embeddings): sizes, not a tensor.
        return Kind.SHAPE
    if name in _DICT_ANNOTATIONS or short in ("Dict", "dict"):
        return Kind.DICT
    if name in _LIST_ANNOTATIONS or short in ("List", "list", "Tuple", "tuple"):
        return Kind.LIST  # `size: Tuple[int, int]` is a sequence, not a tensor
    return None


def _is_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
                         cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _is_literal(expr.expression)
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(_is_literal(el.value) for el in expr.elements)
    return False


def _is_none(expr: Optional[cst.BaseExpression]) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _find_param(function: cst.FunctionDef, name: str) -> Optional[cst.Param]:
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return param
    return None


def _array_index(expr: cst.Subscript) -> bool:
    """`x[:, 0]`, `x[..., 1:]`: several axes, one of them a slice or `...`."""
    if len(expr.slice) < 2:
        return False
    return any(isinstance(element.slice, cst.Slice) or (
        isinstance(element.slice, cst.Index) and isinstance(element.slice.value, cst.Ellipsis))
        for element in expr.slice)


def _plain_binding(binding: Binding) -> bool:
    """A binding whose value is a literal or None (`flag = False`), or a parameter's own value."""
    value = binding.value
    return value is None or (isinstance(value, cst.BaseExpression) and (_is_literal(value) or _is_none(value)))


def _tuple_items(expr: cst.BaseExpression) -> Optional[list[cst.BaseExpression]]:
    """The items of a tuple or list literal without starred parts, else None."""
    if isinstance(expr, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in expr.elements):
        return [element.value for element in expr.elements]
    return None


# What a local name is bound to: an expression, or how it was bound from one:
# ("element", value, index) / ("starred", value) for unpacking, ("aug", target, value) for
# `x += value`, ("iter", iterable) for loop and comprehension targets, ("with", item).
AssignedValue = Union[cst.BaseExpression, tuple]


class _Assignments(cst.CSTVisitor):
    """Name -> assigned value expressions in one function, not descending into nested defs."""

    def __init__(self, function: cst.FunctionDef) -> None:
        self.function = function
        self.values: dict[str, list[object]] = {}
        # name -> expressions added to it with .append / .insert / .extend / +=
        self.added: dict[str, list[cst.BaseExpression]] = {}

    def _add(self, target: cst.BaseExpression, value: object) -> None:
        for name, bound in target_bindings(target, value):
            self.values.setdefault(name.value, []).append(bound)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.function

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._add(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._add(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target, ("aug", node.target, node.value))
        if isinstance(node.target, cst.Name) and isinstance(node.value, (cst.List, cst.Tuple)):
            self.added.setdefault(node.target.value, []).extend(e.value for e in node.value.elements)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and node.args):
            return
        method, name = func.attr.value, func.value.value
        if method == "append":
            self.added.setdefault(name, []).append(node.args[0].value)
        elif method == "insert" and len(node.args) == 2:
            self.added.setdefault(name, []).append(node.args[1].value)
        elif method == "extend":
            self.added.setdefault(name, []).append(("iter", node.args[0].value))  # type: ignore[arg-type]

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._add(node.target, ("iter", node.iter))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._add(node.asname.name, ("with", node.item))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._add(node.target, ("iter", node.iter))


class SelfAttributes:
    """What `__init__` (and other methods) assign to `self.NAME` in a class."""

    def __init__(self, cls: cst.ClassDef, imports: ImportMap) -> None:
        self.values: dict[str, list[cst.BaseExpression]] = {}
        self.buffers: set[str] = set()
        # A Name assigned to self.X -> the method whose parameter it may be.
        self.assigned_in: dict[cst.BaseExpression, cst.FunctionDef] = {}
        visit(cls.body, _SelfAssignments(self))

    def _add(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                and target.value.value == "self"):
            self.values.setdefault(target.attr.value, []).append(value)


# The visitors below are module-level classes, not classes defined in the methods that use
# them: a class is a reference cycle, and one whose methods close over a list of nodes keeps
# those nodes (and their trees) alive until the garbage collector runs, which then costs
# more than the lint (a quarter of it, measured on a 2,000-line model file).


class _SelfAssignments(cst.CSTVisitor):
    """Feeds a SelfAttributes what a class's methods assign to `self.NAME` and register as buffers."""

    def __init__(self, attributes: "SelfAttributes") -> None:
        self.attributes = attributes
        self.functions: list[cst.FunctionDef] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()

    def _note(self, value: cst.BaseExpression) -> None:
        if self.functions:
            self.attributes.assigned_in[value] = self.functions[-1]

    def visit_Assign(self, node: cst.Assign) -> None:
        self._note(node.value)
        for target in node.targets:
            self.attributes._add(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._note(node.value)
            self.attributes._add(node.target, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (isinstance(func, cst.Attribute) and func.attr.value in ("register_buffer", "register_parameter")
                and isinstance(func.value, cst.Name) and func.value.value == "self" and node.args):
            name = node.args[0].value
            if isinstance(name, cst.SimpleString):
                self.attributes.buffers.add(name.evaluated_value)


class _ReturnsOf(cst.CSTVisitor):
    """The returned values of one function, nested functions and lambdas left out."""

    def __init__(self, function: cst.FunctionDef) -> None:
        self.function = function
        self.values: list[cst.BaseExpression] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.function

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.values.append(node.value)


def returned_values(function: cst.FunctionDef) -> list[cst.BaseExpression]:
    """What `function`'s own `return` statements return (nested functions and lambdas excluded)."""
    collector = _ReturnsOf(function)
    visit(function, collector)
    return collector.values


class Facts:
    """Kinds of expressions within the traced functions of one file."""

    def __init__(
        self, imports: ImportMap, regions: Regions,
        imported_function: Optional[Callable[[cst.Call], Optional[tuple["FileContext", cst.FunctionDef]]]] = None,
        type_aliases: Optional[dict[str, cst.BaseExpression]] = None,
    ) -> None:
        self.imports = imports
        self.regions = regions
        # Module-level `Size_ = Tuple[int, int]`: an annotation naming one means its value.
        self.type_aliases = type_aliases or {}
        # A call -> the function of another file it runs through an import, with that file's
        # context: `FileContext.imported_function` (None: the file is analysed on its own).
        self.imported_function = imported_function
        self._param_bindings: dict[tuple[cst.FunctionDef, str], Kind] = {}
        self._argument_kinds: dict[tuple, Optional[Kind]] = {}
        self._cycles = 0  # how many recursion guards fired: results built on one are not cached
        self._read_steps: dict[cst.FunctionDef, int] = {}
        self._binding_kinds: dict[Binding, Kind] = {}
        self._returned_values: dict[cst.FunctionDef, list[cst.BaseExpression]] = {}
        self._certain: dict[tuple, bool] = {}
        self._assignments: dict[cst.FunctionDef, dict[str, list[object]]] = {}
        self._added: dict[cst.FunctionDef, dict[str, list[object]]] = {}
        self._name_cache: dict[tuple[cst.FunctionDef, str], Kind] = {}
        self._in_progress: set[object] = set()
        self._self_attrs: dict[cst.ClassDef, SelfAttributes] = {}
        self._returns: dict[cst.FunctionDef, Kind] = {}
        self._call_sites: Optional[dict[cst.FunctionDef, list[tuple[cst.FunctionDef, cst.Call]]]] = None
        self._resolved_sites: Optional[dict[cst.FunctionDef, list[tuple[cst.FunctionDef, cst.Call]]]] = None
        self._methods: dict[cst.ClassDef, dict[str, cst.FunctionDef]] = {}
        self._reaching: dict[cst.FunctionDef, ReachingBindings] = {}
        self._read_kinds: dict[cst.Name, Kind] = {}
        # A read that is a tensor only when some bindings ran -> the statements that bind the tensor.
        self._conditional_tensors: dict[cst.Name, list[cst.CSTNode]] = {}
        self.callees = Callees(
            imports, regions.module_classes, regions.owner_class,
            lambda cls, attr: self.self_attributes(cls).values.get(attr, []), self.assignments, self._find_method,
        )

    # ----- names -------------------------------------------------------------
    def assignments(self, function: cst.FunctionDef) -> dict[str, list[AssignedValue]]:
        """Local name -> the values `function` binds it to (flow-insensitive, source order)."""
        if function not in self._assignments:
            collector = _Assignments(function)
            visit(function, collector)
            self._assignments[function] = collector.values
            self._added[function] = collector.added  # type: ignore[assignment]
        return self._assignments[function]

    def _added_to(self, function: cst.FunctionDef, name: str) -> list[object]:
        self.assignments(function)
        return self._added[function].get(name, [])

    def param_kind(self, function: cst.FunctionDef, name: str) -> Optional[Kind]:
        """The kind of parameter `name` of `function`, or None if it is not one."""
        bound = self._param_bindings.get((function, name))
        if bound is not None:
            return bound
        params = function.params
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param) and star.name.value == name:
                return Kind.UNKNOWN
        for index, param in enumerate([*params.posonly_params, *params.params, *params.kwonly_params]):
            if param.name.value != name:
                continue
            if index == 0 and name in ("self", "cls") and function in self.regions.owner_class:
                return Kind.SELF
            passed = self.argument_kind(function, name)
            if passed is Kind.TENSOR:
                # Every call of this file passes a tensor (`self.rotary(grid_thw[:, 1:].max())`),
                # whatever the annotation says (`seqlen: int`).
                return Kind.TENSOR
            annotated = annotation_kind(self._unaliased(param.annotation), self.imports)
            if annotated is not None:
                return annotated
            default = param.default
            if default is not None and _is_literal(default):
                return Kind.PY
            if passed is not None and passed not in (Kind.UNKNOWN, Kind.PENDING, Kind.MAYBE_TENSOR):
                # Evidence that it is no tensor (sizes, flags, lists) replaces the default below;
                # an optional tensor passed on (`labels`) keeps it: the callee uses it as one.
                return passed
            if function in self.regions.roots:
                return Kind.MAYBE_TENSOR if default is not None else Kind.TENSOR
            external = self.regions.external.get(function)
            if external is not None:
                # Traced from other code: what every traced caller passes, as the project
                # index saw it (a tensor only by the forward default, a Python value), else unknown.
                hint = dict(external.hints).get(name)  # type: ignore[attr-defined]
                if hint == "tensor":
                    return Kind.MAYBE_TENSOR if default is not None else Kind.TENSOR
                return Kind.PY if hint == "py" else Kind.UNKNOWN
            return self._param_from_call_sites(function, name)
        return None

    def _unaliased(self, annotation: Optional[cst.Annotation]) -> Optional[cst.Annotation]:
        """`annotation`, or the value of the module-level type alias it names."""
        for _ in range(3):  # an alias of an alias, not a cycle
            if annotation is None or not isinstance(annotation.annotation, cst.Name):
                break
            value = self.type_aliases.get(annotation.annotation.value)
            if value is None:
                break
            annotation = cst.Annotation(value)
        return annotation

    def argument_kind(self, function: cst.FunctionDef, name: str) -> Optional[Kind]:
        """The join of what this file's traced calls of `function` pass to parameter `name`.

        Only calls whose target is certain count: module-level functions and nested
        functions by name, `self.method(...)`, and submodule calls (`self.attn(x)`,
        `blk(x)` over a ModuleList of one class) for `forward`. None when no such call
        passes the parameter.
        """
        key = ("argument", function, name)
        if key in self._argument_kinds:
            return self._argument_kinds[key]
        if key in self._in_progress:
            self._cycles += 1
            return None
        sites = self.resolved_call_sites().get(function)
        if not sites:
            return None
        self._in_progress.add(key)
        cycles = self._cycles
        try:
            positional = parameters_passed(function, function in self.regions.owner_class)
            kinds = []
            for caller, call in sites:
                passed = passed_argument(call, name, positional)
                if passed is not None:
                    kind = self.kind(passed, caller)
                    if kind is Kind.TENSOR and not self.certain_tensor(passed, caller):
                        kind = Kind.UNKNOWN  # a tensor only by default: no evidence to pass on
                    kinds.append(kind)
            result = join(kinds) if kinds else None
        finally:
            self._in_progress.discard(key)
        if cycles == self._cycles and not self._param_bindings:
            self._argument_kinds[key] = result  # not built on a guess made to break a cycle
        return result

    def _param_from_call_sites(self, function: cst.FunctionDef, name: str) -> Kind:
        key = ("param", function, name)
        if key in self._in_progress:
            return Kind.UNKNOWN
        self._in_progress.add(key)
        try:
            positional = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
            is_method = function in self.regions.owner_class and positional[:1] == ["self"]
            if is_method:
                positional = positional[1:]
            kinds = []
            for caller, call in self.call_sites().get(function, []):
                arg_expr = None
                for pos, arg in enumerate(a for a in call.args if a.keyword is None and not a.star):
                    if pos < len(positional) and positional[pos] == name:
                        arg_expr = arg.value
                for arg in call.args:
                    if arg.keyword is not None and arg.keyword.value == name:
                        arg_expr = arg.value
                if arg_expr is not None:
                    kinds.append(self.kind(arg_expr, caller))
            return join(kinds) if kinds else Kind.UNKNOWN
        finally:
            self._in_progress.discard(key)

    def call_sites(self) -> dict[cst.FunctionDef, list[tuple[cst.FunctionDef, cst.Call]]]:
        """Traced function -> (caller, call) pairs for calls made from traced functions."""
        if self._call_sites is None:
            by_name: dict[str, list[cst.FunctionDef]] = {}
            for function in self.regions.functions:
                by_name.setdefault(function.name.value, []).append(function)
            sites: dict[cst.FunctionDef, list[tuple[cst.FunctionDef, cst.Call]]] = {}
            for caller in self.regions.functions:
                for call in calls_in(caller):
                    func = call.func
                    name = func.value if isinstance(func, cst.Name) else (
                        func.attr.value if isinstance(func, cst.Attribute) else None)
                    for target in by_name.get(name or "", []):
                        sites.setdefault(target, []).append((caller, call))
            self._call_sites = sites
        return self._call_sites

    def resolved_call_sites(self) -> dict[cst.FunctionDef, list[tuple[cst.FunctionDef, cst.Call]]]:
        """Traced function -> the calls from traced code that certainly run it."""
        if self._resolved_sites is None:
            sites: dict[cst.FunctionDef, list[tuple[cst.FunctionDef, cst.Call]]] = {}
            for callers in self.call_sites().values():
                for caller, call in callers:
                    target = self.call_target(call, caller)
                    if target is not None and (caller, call) not in sites.get(target, []):
                        sites.setdefault(target, []).append((caller, call))
            for caller in self.regions.functions:
                for call in calls_in(caller):
                    forward = self.callees.module_forward(call, caller)
                    if forward is not None and forward in self.regions.functions:
                        sites.setdefault(forward, []).append((caller, call))
            self._resolved_sites = sites
        return self._resolved_sites

    def call_target(self, call: cst.Call, function: cst.FunctionDef) -> Optional[cst.FunctionDef]:
        """The function of this file that `call` (made in `function`) certainly runs, or None.

        A module-level or nested function called by name, `self.method(...)` through the
        class and its same-file bases, or a submodule's `forward` (`self.attn(x)`).
        """
        func = call.func
        if isinstance(func, cst.Name):
            target = self._local_function(func.value, function)
            if target is not None:
                return target
        elif (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
                and function in self.regions.owner_class):
            target = self._find_method(self.regions.owner_class[function], func.attr.value)
            if target is not None:
                return target
        return self.callees.module_forward(call, function)

    # ----- reads, flow-sensitively ---------------------------------------------
    def reaching(self, function: cst.FunctionDef) -> ReachingBindings:
        """Which bindings of its locals reach each read in `function` (eager-only branches skipped)."""
        found = self._reaching.get(function)
        if found is None:
            found = self._reaching[function] = ReachingBindings(function, self.regions.eager_only)
        return found

    def _read_kind(self, node: cst.Name, function: cst.FunctionDef) -> Optional[Kind]:
        """The kind a read of a local sees, from the bindings that reach it; None to use `name_kind`.

        Only names bound more than once (a parameter counts) are worth it. When a tensor
        reaches the read on some paths and only literals, sizes or None on the others
        (`skip = False; if self.training: skip = torch.rand([]) < p`), the read is a
        tensor on those paths: TENSOR, and `conditional_tensor_bindings` names them.
        """
        name = node.value
        bound = len(self.assignments(function).get(name, ())) + (self.param_kind(function, name) is not None)
        if bound < 2:
            return None
        cached = self._read_kinds.get(node)
        if cached is not None:
            return cached
        reaching = self.reaching(function).reads.get(node)
        if reaching is None:
            return None
        key = ("read", node)
        if key in self._in_progress:
            # A loop-carried binding such as `x = x + 1`: judged by the other paths, as `name_kind` does.
            self._cycles += 1
            param = self.param_kind(function, name)
            return param if param is not None else Kind.PENDING
        steps = self._read_steps.get(function, 0) + 1
        self._read_steps[function] = steps
        if steps > _READ_BUDGET:
            return None  # a pathological function: fall back to the flow-insensitive kind
        self._in_progress.add(key)
        try:
            kinds: list[Kind] = []
            tensor_statements: list[cst.CSTNode] = []
            plain = True  # every non-tensor binding is a literal, None or a size
            for binding in reaching:
                kind = self._binding_kind(binding, function)
                kinds.append(kind)
                if kind is Kind.TENSOR:
                    tensor_statements.append(binding.statement)
                    plain = plain and self._certain_binding(binding, function, 1)
                elif kind is not Kind.PENDING:
                    plain = plain and kind in (Kind.PY, Kind.SHAPE) and _plain_binding(binding)
            result = join(kinds)
            if result is Kind.MAYBE_TENSOR and tensor_statements and plain and None not in tensor_statements:
                result = Kind.TENSOR
                self._conditional_tensors[node] = tensor_statements
        finally:
            self._in_progress.discard(key)
        if result is not Kind.PENDING:
            # Kept even when a loop's guard fired inside: the guess (the loop-carried binding
            # counts as its other inputs) is what one more pass would confirm.
            self._read_kinds[node] = result
        return result

    def _binding_kind(self, binding: Binding, function: cst.FunctionDef) -> Kind:
        cached = self._binding_kinds.get(binding)
        if cached is not None:
            return cached
        if binding.value is None:
            kind = self.param_kind(function, binding.name) or Kind.UNKNOWN
        elif isinstance(binding.value, (cst.FunctionDef, cst.ClassDef)):
            kind = Kind.UNKNOWN
        else:
            kind = self._value_kind(binding.value, function)
        if kind is not Kind.PENDING:
            self._binding_kinds[binding] = kind
        return kind

    def conditional_tensor_bindings(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """For a read that is a tensor only on some paths, the statements that bind the tensor."""
        return self._conditional_tensors.get(node, []) if isinstance(node, cst.Name) else []

    def name_kind(self, name: str, function: cst.FunctionDef) -> Kind:
        """The kind of local or parameter `name` in `function` (flow-insensitive)."""
        key = (function, name)
        if key in self._name_cache:
            return self._name_cache[key]
        if key in self._in_progress:
            # A recursive definition such as `x = self.norm(x)`: judge by the other paths.
            param = self.param_kind(function, name)
            return param if param is not None else Kind.PENDING
        self._in_progress.add(key)
        try:
            kinds = []
            param = self.param_kind(function, name)
            if param is not None:
                kinds.append(param)
            for value in self.assignments(function).get(name, []):
                kinds.append(self._value_kind(value, function))
            if not kinds:
                result = self._global_kind(name)
            elif param is not None and len(kinds) > 1:
                # Reassigned parameters keep the kind of what they are reassigned to.
                others = kinds[1:]
                result = join(others) if param in others or param is Kind.UNKNOWN else join(kinds)
            else:
                result = join(kinds)
        finally:
            self._in_progress.discard(key)
        if result is Kind.PENDING:
            result = Kind.UNKNOWN
        if not any(k[0] == function for k in self._in_progress if isinstance(k, tuple) and len(k) == 2):
            self._name_cache[key] = result  # cache only results not built on a pending guess
        return result

    def _global_kind(self, name: str) -> Kind:
        if name in ("True", "False", "None"):
            return Kind.PY
        if name in self.imports.names:
            return Kind.UNKNOWN
        if name.isupper():
            return Kind.PY  # module-level constants
        return Kind.UNKNOWN

    def _value_kind(self, value: object, function: cst.FunctionDef) -> Kind:
        if isinstance(value, tuple):
            tag = value[0]
            if tag == "element":
                unpacked = self._unpacked_iteration_kind(value[1], value[2], function)
                if unpacked is not None:
                    return unpacked
                if isinstance(value[1], cst.Call):
                    returned = self.returned_element_kind(value[1], value[2], function)
                    if returned is not None:
                        return returned
                inner = self._value_kind(value[1], function)
                return Kind.TENSOR if inner is Kind.TENSOR else (
                    Kind.SHAPE if inner is Kind.SHAPE else Kind.UNKNOWN if inner is not Kind.MAYBE_TENSOR else inner)
            if tag == "starred":
                return Kind.LIST
            if tag == "aug":
                return _combine([self.kind(value[1], function), self.kind(value[2], function)])
            if tag == "iter":
                iterable = self.kind(value[1], function)
                if iterable in (Kind.TENSOR, Kind.MAYBE_TENSOR):
                    return iterable
                if iterable is Kind.MODULE:
                    return Kind.MODULE
                if iterable is Kind.LIST:
                    element = self.element_kind(value[1], function)
                    return element if element in (Kind.TENSOR, Kind.MODULE, Kind.SHAPE) else Kind.UNKNOWN
                return Kind.UNKNOWN
            if tag == "with":
                return Kind.UNKNOWN
        assert isinstance(value, cst.BaseExpression)
        return self.kind(value, function)

    # ----- certainty ---------------------------------------------------------
    def certain_tensor(self, expr: cst.BaseExpression, function: cst.FunctionDef, depth: int = 0) -> bool:
        """True when `expr` is a tensor on evidence, not only on the default for untyped forward parameters.

        An untyped forward parameter is taken to be a tensor, and so are the items of what
        an unknown submodule returns; that default is fine for deciding what `x.sum() > 0`
        is, but it is no evidence to pass on: a parameter that every call passes a tensor
        is a tensor, not one that every call passes its own untyped parameter
        (`output_attentions`, a `window_size` tuple, sizes unpacked from a submodule).
        """
        key = (expr, function)
        cached = self._certain.get(key) if not self._param_bindings else None
        if cached is not None:
            return cached
        if depth > _CERTAINTY_DEPTH or key in self._in_progress:
            return False
        self._in_progress.add(key)
        try:
            result = self._certain_tensor(expr, function, depth + 1)
        finally:
            self._in_progress.discard(key)
        if not self._param_bindings:
            self._certain[key] = result
        return result

    def _certain_tensor(self, expr: cst.BaseExpression, function: cst.FunctionDef, depth: int) -> bool:
        if self.kind(expr, function) is not Kind.TENSOR:
            return False
        if isinstance(expr, cst.Name):
            reaching = self.reaching(function).reads.get(expr)
            if reaching is not None:
                return all(self._certain_binding(b, function, depth) for b in reaching)
            if self.param_kind(function, expr.value) is not None:
                return self._certain_parameter(function, expr.value, depth)
            values = self.assignments(function).get(expr.value, [])
            return bool(values) and all(self._certain_value(v, function, depth) for v in values)
        if isinstance(expr, cst.Call):
            func = expr.func
            qualified = self.imports.qualname(func)
            if qualified is not None:
                return qualified.startswith("torch.") or qualified in TRACED_RANDOM_DRAWS
            if isinstance(func, cst.Attribute) and not (isinstance(func.value, cst.Name) and func.value.value == "self"):
                # A tensor method: only a tensor (or array) has it, whatever the receiver was taken for.
                return self.kind(func.value, function).tensorish or self.kind(func.value, function) is Kind.NDARRAY
            target = self.call_target(expr, function)
            return target is not None and all(self.certain_tensor(v, target, depth) for v in self.returned_values(target))
        if isinstance(expr, cst.Subscript):
            return _array_index(expr) or self.certain_tensor(expr.value, function, depth)
        if isinstance(expr, (cst.BinaryOperation, cst.Comparison, cst.BooleanOperation)):
            parts = [expr.left, expr.right] if not isinstance(expr, cst.Comparison) else [
                expr.left, *(t.comparator for t in expr.comparisons)]
            return any(self.certain_tensor(part, function, depth) for part in parts)
        if isinstance(expr, cst.UnaryOperation):
            return self.certain_tensor(expr.expression, function, depth)
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                return True  # a registered buffer or an nn.Parameter
            return self.certain_tensor(expr.value, function, depth)
        if isinstance(expr, cst.IfExp):
            return self.certain_tensor(expr.body, function, depth) and self.certain_tensor(expr.orelse, function, depth)
        return False

    def _certain_parameter(self, function: cst.FunctionDef, name: str, depth: int) -> bool:
        bound = self._param_bindings.get((function, name))
        if bound is not None:
            return bound is Kind.TENSOR
        param = _find_param(function, name)
        if param is not None and annotation_kind(param.annotation, self.imports) is Kind.TENSOR:
            return True
        if ("argument", function, name) in self._in_progress:
            return True  # a loop through calls (x = block(x)): its other inputs decide
        return self.argument_kind(function, name) is Kind.TENSOR

    def _certain_binding(self, binding: Binding, function: cst.FunctionDef, depth: int) -> bool:
        if binding.value is None:
            return self._certain_parameter(function, binding.name, depth)
        return self._certain_value(binding.value, function, depth)

    def _certain_value(self, value: object, function: cst.FunctionDef, depth: int) -> bool:
        if isinstance(value, cst.BaseExpression):
            return self.certain_tensor(value, function, depth)
        if not isinstance(value, tuple):
            return False
        tag = value[0]
        if tag == "aug":
            return self.certain_tensor(value[1], function, depth) or self.certain_tensor(value[2], function, depth)
        if tag == "iter":
            return isinstance(value[1], cst.BaseExpression) and self.certain_tensor(value[1], function, depth)
        if tag == "element" and isinstance(value[1], cst.Call):
            target = self.call_target(value[1], function)
            if target is None:
                return False  # the items of what an unknown callable returns are a guess
            items = [_tuple_items(v) for v in self.returned_values(target) if not _is_none(v)]
            return bool(items) and all(
                item is not None and value[2] < len(item) and self.certain_tensor(item[value[2]], target, depth)
                for item in items)
        if tag == "element" and isinstance(value[1], tuple) and value[1][0] == "iter":
            return self._certain_value(value[1], function, depth)  # `for a, b in tensor`: rows of rows
        return False

    # ----- containers --------------------------------------------------------
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
                    return [Kind.PY if _is_literal(v) else Kind.UNKNOWN for v in values]
        return [Kind.UNKNOWN]

    def _name_element_kinds(self, name: str, function: cst.FunctionDef) -> list[Kind]:
        key = ("elements", function, name)
        if key in self._in_progress:
            return []
        self._in_progress.add(key)
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
                    kinds.append(self.kind(added, function))  # type: ignore[arg-type]
            return kinds
        finally:
            self._in_progress.discard(key)

    def kind_with_bindings(self, expr: cst.BaseExpression, function: cst.FunctionDef,
                           bindings: dict[str, Kind]) -> Kind:
        """The kind of `expr` with some names bound to given kinds (a lambda's or a helper's parameters).

        Kinds worked out meanwhile may depend on the bindings, so the caches are restored
        afterwards.
        """
        saved = (dict(self._name_cache), dict(self._read_kinds), dict(self._returns),
                 dict(self._conditional_tensors), dict(self._param_bindings), dict(self._binding_kinds),
                 dict(self._argument_kinds))
        self._name_cache.update({(function, name): kind for name, kind in bindings.items()})
        self._param_bindings.update({(function, name): kind for name, kind in bindings.items()})
        try:
            return self.kind(expr, function)
        finally:
            (self._name_cache, self._read_kinds, self._returns, self._conditional_tensors,
             self._param_bindings, self._binding_kinds, self._argument_kinds) = saved

    def return_kind_with(self, function: cst.FunctionDef, bindings: dict[str, Kind]) -> Kind:
        """What `function` returns when its parameters hold `bindings` (a call from another file)."""
        kinds = [self.kind_with_bindings(value, function, bindings) for value in self.returned_values(function)]
        return join(kinds) if kinds else Kind.PY

    def passed_kinds(self, call: cst.Call, function: cst.FunctionDef, target: cst.FunctionDef) -> dict[str, Kind]:
        """Parameter of `target` -> the kind `call` (made in `function`) passes to it."""
        bindings = {}
        params = target.params
        positional = parameters_passed(target, method=False)
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            passed = passed_argument(call, param.name.value, positional)
            if passed is not None:
                bindings[param.name.value] = self.kind(passed, function)
        return bindings

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

    # ----- self attributes ---------------------------------------------------
    def self_attributes(self, cls: cst.ClassDef) -> SelfAttributes:
        """The values assigned to `self.NAME` anywhere in `cls`."""
        if cls not in self._self_attrs:
            self._self_attrs[cls] = SelfAttributes(cls, self.imports)
        return self._self_attrs[cls]

    def _methods_of(self, cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
        if cls not in self._methods:
            self._methods[cls] = {
                stmt.name.value: stmt for stmt in cls.body.body if isinstance(stmt, cst.FunctionDef)
            }
        return self._methods[cls]

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
        if _is_literal(value) or _is_none(value):
            return Kind.PY
        if isinstance(value, cst.Name) and method is not None:
            # `self.eps = eps`: the constructor parameter's default or annotation tells.
            params = method.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                if param.name.value == value.value:
                    annotated = annotation_kind(param.annotation, self.imports)
                    if annotated is not None:
                        return annotated
                    if param.default is not None and _is_literal(param.default):
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
            if name.startswith("torch.") and name not in _TORCH_NON_TENSOR and not name.startswith(_TORCH_NON_TENSOR_PREFIXES):
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

    # ----- returns -----------------------------------------------------------
    def returned_values(self, function: cst.FunctionDef) -> list[cst.BaseExpression]:
        """The expressions `function`'s `return` statements return, computed once per function."""
        cached = self._returned_values.get(function)
        if cached is None:
            cached = self._returned_values[function] = returned_values(function)
        return cached

    def return_kind(self, function: cst.FunctionDef) -> Kind:
        """The join of what `function` returns."""
        if function in self._returns:
            return self._returns[function]
        key = ("return", function)
        if key in self._in_progress:
            return Kind.UNKNOWN
        self._in_progress.add(key)
        try:
            kinds = [self.kind(v, function) for v in self.returned_values(function)]
            result = join(kinds) if kinds else Kind.PY
        finally:
            self._in_progress.discard(key)
        self._returns[function] = result
        return result

    def returned_element_kind(self, call: cst.Call, index: int, function: cst.FunctionDef) -> Optional[Kind]:
        """The kind of item `index` of what `call` returns, when its target returns tuples; else None.

        `embeddings, height, width = self.patch_embed(x)` where the submodule's forward
        ends in `return embeddings, height, width`: the second and third are sizes, not
        tensors. A target that returns a tensor gives its rows (TENSOR).
        """
        target = self.call_target(call, function)
        key = ("element-return", target, index)
        if target is None or key in self._in_progress:
            return None
        self._in_progress.add(key)
        try:
            kinds = []
            for value in self.returned_values(target):
                if _is_none(value):
                    continue  # unpacking None fails: the path that returns it is not this one
                items = _tuple_items(value)
                if items is None:
                    whole = self.kind(value, target)
                    kinds.append(Kind.TENSOR if whole is Kind.TENSOR else Kind.UNKNOWN)
                else:
                    kinds.append(self.kind(items[index], target) if index < len(items) else Kind.UNKNOWN)
            return join(kinds) if kinds else None
        finally:
            self._in_progress.discard(key)

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

    # ----- expressions -------------------------------------------------------
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
            if base in (Kind.MAYBE_TENSOR, Kind.UNKNOWN) and _array_index(expr):
                # `grid_thw[:, 0]`, `mask[..., 1:]`: only a tensor (or an array) takes a multi-axis
                # slice (None, a list or a tuple would raise), so past this point it is one.
                return Kind.TENSOR
            if base in (Kind.TENSOR, Kind.MAYBE_TENSOR, Kind.SHAPE, Kind.NDARRAY):
                return base
            if base is Kind.LIST:
                return self._list_item_kind(expr, function)
            return Kind.UNKNOWN
        if isinstance(expr, cst.BinaryOperation):
            return _combine([self.kind(expr.left, function), self.kind(expr.right, function)])
        if isinstance(expr, cst.UnaryOperation):
            inner = self.kind(expr.expression, function)
            if isinstance(expr.operator, cst.Not):
                return Kind.DATA if inner.tensorish else (Kind.PY if inner in (Kind.PY, Kind.SHAPE) else inner)
            return inner
        if isinstance(expr, cst.Comparison):
            if all(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in expr.comparisons):
                return Kind.PY
            kinds = [self.kind(expr.left, function)] + [self.kind(t.comparator, function) for t in expr.comparisons]
            return _combine(kinds)
        if isinstance(expr, cst.BooleanOperation):
            return _combine([self.kind(expr.left, function), self.kind(expr.right, function)])
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
            if qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in ("float32", "float16", "bfloat16", "long", "int64", "bool", "float", "int32"):
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

    def _call_kind(self, call: cst.Call, function: cst.FunctionDef) -> Kind:
        func = call.func
        qualified = self.imports.qualname(func)
        if qualified is not None:
            return self._qualified_call_kind(qualified, call, function)
        if isinstance(func, cst.Name):
            target = self._local_function(func.value, function)
            if target is not None:
                return self.return_kind(target)
            if func.value in self.regions.module_classes:
                return Kind.MODULE
            callee = self.name_kind(func.value, function)
            return self._module_call_kind(call, function) if callee is Kind.MODULE else Kind.UNKNOWN
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = func.value
            if isinstance(receiver, cst.Name) and receiver.value == "self":
                cls = self.regions.owner_class.get(function)
                if cls is not None:
                    target = self._find_method(cls, method)
                    if target is not None:
                        return self.return_kind(target)
                    attr_kind = self.self_attribute_kind(method, function)
                    if attr_kind is Kind.MODULE:
                        return self._module_call_kind(call, function)
                return Kind.UNKNOWN
            base = self.kind(receiver, function)
            if base is Kind.PENDING:
                return base
            if base is Kind.MAYBE_TENSOR and method.startswith(("get_", "is_")) and method not in _TENSOR_GET_IS_METHODS:
                # An optional parameter that is not a tensor: `past_key_values.get_seq_length(i)`,
                # `cache_params.is_recording_past(i)` (transformers caches). torch.Tensor has no such method.
                return Kind.UNKNOWN
            if base.tensorish:
                if method in TENSOR_SHAPE_METHODS:
                    return Kind.SHAPE
                if method in TENSOR_PY_METHODS:
                    return Kind.PY
                if method in TENSOR_DATA_METHODS:
                    return Kind.DATA
                if method == "numpy":
                    return Kind.NDARRAY
                if method == "type" and not call.args:
                    return Kind.PY
                return Kind.TENSOR if base is Kind.TENSOR or method not in ("get", "items", "keys", "values", "pop", "copy") else Kind.UNKNOWN
            if base is Kind.MODULE:
                return Kind.TENSOR if method in ("forward", "__call__") else Kind.UNKNOWN
            if base is Kind.NDARRAY:
                return Kind.NDARRAY
            if base is Kind.SHAPE and method in ("numel", "index", "count"):
                return Kind.SHAPE
            if base is Kind.DICT and method in ("keys", "values", "items"):
                return Kind.LIST
        return Kind.UNKNOWN

    def _module_call_kind(self, call: cst.Call, function: cst.FunctionDef) -> Kind:
        """What calling a submodule gives: its forward's return kind when this file defines its class.

        Submodules of other classes (`nn.Linear`, imported blocks) are taken to return a tensor.
        """
        forward = self.callees.module_forward(call, function)
        if forward is not None:
            returned = self.return_kind(forward)
            if returned not in (Kind.UNKNOWN, Kind.PENDING):
                return returned
        return Kind.TENSOR

    def _qualified_call_kind(self, qualified: str, call: cst.Call, function: cst.FunctionDef) -> Kind:
        if qualified in TRACED_RANDOM_DRAWS:
            return Kind.TENSOR
        if qualified in _TORCH_NON_TENSOR:
            return _TORCH_NON_TENSOR[qualified]
        if qualified in _TORCH_SIZE_ARITHMETIC and call.args and all(
            self.kind(arg.value, function) in (Kind.SHAPE, Kind.PY) for arg in call.args if arg.keyword is None
        ):
            # `torch.div(seq_len, window, rounding_mode="trunc")` on sizes (Longformer, LED): Dynamo
            # keeps it symbolic, and it works as a size with static and dynamic shapes (measured, 2.13).
            return Kind.SHAPE
        if qualified.startswith("torch."):
            if qualified.startswith(_TORCH_NON_TENSOR_PREFIXES):
                return Kind.UNKNOWN
            last = qualified.rsplit(".", 1)[-1]
            if qualified.startswith("torch.nn.") and not qualified.startswith("torch.nn.functional.") and last[:1].isupper():
                return Kind.MODULE
            return Kind.TENSOR
        if qualified.startswith(("numpy.", "scipy.")):
            return Kind.NDARRAY
        if qualified.startswith("math."):
            return Kind.DATA if any(self.kind(a.value, function).tensorish for a in call.args) else Kind.PY
        if not qualified.startswith("builtins."):
            imported = self.imported_function(call) if self.imported_function is not None else None
            if imported is not None:
                # A helper of another file: its returns, with the kinds this call passes.
                other, target = imported
                return other.facts.return_kind_with(target, self.passed_kinds(call, function, target))
        if qualified.startswith("builtins."):
            name = qualified[len("builtins."):]
            arg_kinds = [self.kind(a.value, function) for a in call.args]
            if name == "len":
                return Kind.SHAPE
            if name in ("int", "float", "bool", "complex", "round"):
                if any(k.tensorish for k in arg_kinds):
                    return Kind.DATA
                return _combine(arg_kinds) if arg_kinds else Kind.PY
            if name in ("isinstance", "issubclass", "hasattr", "callable", "id", "str", "repr", "type"):
                return Kind.PY
            if name in ("list", "sorted", "reversed"):
                return Kind.LIST
            if name in ("dict",):
                return Kind.DICT
            if name in ("abs", "min", "max", "sum", "pow", "divmod"):
                return _combine(arg_kinds) if arg_kinds else Kind.UNKNOWN
            if name in ("tuple",):
                return Kind.LIST
            return Kind.UNKNOWN
        return Kind.UNKNOWN

    def _local_function(self, name: str, function: cst.FunctionDef) -> Optional[cst.FunctionDef]:
        for candidate in self.regions.functions:
            if candidate.name.value == name and candidate not in self.regions.owner_class:
                return candidate
        return None

    def _find_method(self, cls: cst.ClassDef, name: str, depth: int = 0) -> Optional[cst.FunctionDef]:
        method = self._methods_of(cls).get(name)
        if method is not None or depth > 20:
            return method
        for arg in cls.bases:
            base_name = dotted_name(arg.value)
            for candidate in self.regions.owner_class.values():
                if candidate.name.value == base_name and candidate is not cls:
                    found = self._find_method(candidate, name, depth + 1)
                    if found is not None:
                        return found
        return None

"""What names are bound to: locals, parameters and `self.NAME`, and the kinds those reads take.

The syntax first (each function's assignments, what a class assigns to `self.NAME`, what a
function returns, what an annotation promises), then `BindingKinds`, the part of `Facts`
that gives a name its kind: a parameter from its annotation, default, or what the file's
calls pass; a local read bound more than once from the bindings that reach it
(`reaching`), else the merge of everything bound to it.
"""

from __future__ import annotations

from typing import Optional, Union, cast

import libcst as cst

from compile_lint.analysis.file.callees import parameters_passed, passed_argument
from compile_lint.analysis.file.reaching import Binding, ReachingBindings, target_bindings
from compile_lint.analysis.kinds.lattice import Kind, combine, join
from compile_lint.analysis.kinds.parts import FactsParts
from compile_lint.analysis.syntax.imports import ImportMap, dotted_name
from compile_lint.analysis.syntax.walk import visit

_SCALAR_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "complex", "bytes"})
_DICT_ANNOTATIONS = frozenset({"dict", "Dict", "typing.Dict", "Mapping", "typing.Mapping"})
_LIST_ANNOTATIONS = frozenset({"list", "List", "typing.List", "Sequence", "typing.Sequence"})


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


def is_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
                         cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return is_literal(expr.expression)
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(is_literal(el.value) for el in expr.elements)
    return False


def is_none(expr: Optional[cst.BaseExpression]) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def find_param(function: cst.FunctionDef, name: str) -> Optional[cst.Param]:
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return param
    return None


def plain_binding(binding: Binding) -> bool:
    """A binding whose value is a literal or None (`flag = False`), or a parameter's own value."""
    value = binding.value
    return value is None or (isinstance(value, cst.BaseExpression) and (is_literal(value) or is_none(value)))


def tuple_items(expr: cst.BaseExpression) -> Optional[list[cst.BaseExpression]]:
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
        self.values: dict[str, list[AssignedValue]] = {}
        # name -> expressions added to it with .append / .insert / .extend / +=
        self.added: dict[str, list[AssignedValue]] = {}

    def _add(self, target: cst.BaseExpression, value: object) -> None:
        for name, bound in target_bindings(target, value):
            # target_bindings wraps `value` only in the tuples AssignedValue encodes.
            self.values.setdefault(name.value, []).append(cast(AssignedValue, bound))

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
            self.added.setdefault(name, []).append(("iter", node.args[0].value))

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
            if isinstance(name, cst.SimpleString) and isinstance(name.evaluated_value, str):
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


# Reads of one function worked out afresh before its flow-sensitive kinds give up (uncached
# reads in loops can otherwise multiply).
_READ_BUDGET = 20000


class BindingKinds(FactsParts):
    """The kinds of names (a part of `Facts`: `self` is the file's facts, `self.memo` their answers)."""

    def assignments(self, function: cst.FunctionDef) -> dict[str, list[AssignedValue]]:
        """Local name -> the values `function` binds it to (flow-insensitive, source order)."""
        if function not in self.memo.assignments:
            collector = _Assignments(function)
            visit(function, collector)
            self.memo.assignments[function] = collector.values
            self.memo.added[function] = collector.added
        return self.memo.assignments[function]

    def _added_to(self, function: cst.FunctionDef, name: str) -> list[AssignedValue]:
        self.assignments(function)
        return self.memo.added[function].get(name, [])

    def param_kind(self, function: cst.FunctionDef, name: str) -> Optional[Kind]:
        """The kind of parameter `name` of `function`, or None if it is not one."""
        bound = self.memo.param_bindings.get((function, name))
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
            if default is not None and is_literal(default):
                return Kind.PY
            if passed is not None and passed not in (Kind.UNKNOWN, Kind.PENDING, Kind.MAYBE_TENSOR):
                # Evidence that it is no tensor (sizes, flags, lists) replaces the default below;
                # an optional tensor passed on (`labels`) keeps it: the callee uses it as one.
                return passed
            if function in self.regions.roots:
                hint = self.regions.root_hints.get(function, {}).get(name)
                if hint == "other":  # the model saw the calls pass something else than tensors
                    return Kind.UNKNOWN
                if hint == "py":
                    return Kind.PY
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
        if key in self.memo.argument_kinds:
            return self.memo.argument_kinds[key]
        if key in self.memo.in_progress:
            self.memo.cycles += 1
            return None
        sites = self.resolved_call_sites().get(function)
        if not sites:
            return None
        self.memo.in_progress.add(key)
        cycles = self.memo.cycles
        try:
            positional = parameters_passed(function, function in self.regions.owner_class)
            kinds = []
            for caller, call in sites:
                passed = passed_argument(call, name, positional)
                if passed is not None:
                    kind = self.kind(passed, caller)
                    if kind is Kind.TENSOR and not self.certain_under_dynamo(passed, caller):
                        kind = Kind.UNKNOWN  # a tensor only by default: no evidence to pass on
                    kinds.append(kind)
            result = join(kinds) if kinds else None
        finally:
            self.memo.in_progress.discard(key)
        if cycles == self.memo.cycles and not self.memo.param_bindings:
            self.memo.argument_kinds[key] = result  # not built on a guess made to break a cycle
        return result

    def _param_from_call_sites(self, function: cst.FunctionDef, name: str) -> Kind:
        key = ("param", function, name)
        if key in self.memo.in_progress:
            return Kind.UNKNOWN
        self.memo.in_progress.add(key)
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
            self.memo.in_progress.discard(key)

    def reaching(self, function: cst.FunctionDef) -> ReachingBindings:
        """Which bindings of its locals reach each read in `function` (eager-only branches skipped)."""
        found = self.memo.reaching.get(function)
        if found is None:
            found = self.memo.reaching[function] = ReachingBindings(function, self.regions.eager_only)
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
        cached = self.memo.read_kinds.get(node)
        if cached is not None:
            return cached
        reaching = self.reaching(function).reads.get(node)
        if reaching is None:
            return None
        key = ("read", node)
        if key in self.memo.in_progress:
            # A loop-carried binding such as `x = x + 1`: judged by the other paths, as `name_kind` does.
            self.memo.cycles += 1
            param = self.param_kind(function, name)
            return param if param is not None else Kind.PENDING
        if function not in self.memo.reading:
            # Work out the reads before this one first, in source order, so that each rests on
            # answers already kept: asked first at the end of `x = x + i` repeated N times, the
            # recursion would otherwise go N reads deep.
            self._read_earlier(node, function)
            cached = self.memo.read_kinds.get(node)
            if cached is not None:
                return cached
        steps = self.memo.read_steps.get(function, 0) + 1
        self.memo.read_steps[function] = steps
        if steps > _READ_BUDGET:
            return None  # a pathological function: fall back to the flow-insensitive kind
        self.memo.in_progress.add(key)
        self.memo.reading[function] = self.memo.reading.get(function, 0) + 1
        try:
            kinds: list[Kind] = []
            tensor_statements: list[Optional[cst.CSTNode]] = []
            plain = True  # every non-tensor binding is a literal, None or a size
            for binding in reaching:
                kind = self._binding_kind(binding, function)
                kinds.append(kind)
                if kind is Kind.TENSOR:
                    tensor_statements.append(binding.statement)
                    plain = plain and self._certain_binding(binding, function, 1)
                elif kind is not Kind.PENDING:
                    plain = plain and kind in (Kind.PY, Kind.SHAPE) and plain_binding(binding)
            result = join(kinds)
            if result is Kind.MAYBE_TENSOR and tensor_statements and plain and None not in tensor_statements:
                result = Kind.TENSOR
                self.memo.conditional_tensors[node] = [
                    statement for statement in tensor_statements if statement is not None]
        finally:
            self.memo.in_progress.discard(key)
            self.memo.reading[function] -= 1
            if not self.memo.reading[function]:
                del self.memo.reading[function]
        if result is not Kind.PENDING:
            # Kept even when a loop's guard fired inside: the guess (the loop-carried binding
            # counts as its other inputs) is what one more pass would confirm.
            self.memo.read_kinds[node] = result
        return result

    def _read_earlier(self, node: cst.Name, function: cst.FunctionDef) -> None:
        """Work out the kinds of the reads of `function` before `node` (in the order `reaching` met
        them), from where the last call stopped. Only called while no read of `function` is being
        worked out, so each of them is asked as a rule walking the function in order would ask it."""
        known = self.memo.read_order.get(function)
        if known is None:
            reads = list(self.reaching(function).reads)
            known = self.memo.read_order[function] = (reads, {read: index for index, read in enumerate(reads)})
        reads, order = known
        target = order.get(node, 0)
        start = self.memo.read_cursor.get(function, 0)
        if start >= target:
            return
        self.memo.read_cursor[function] = target
        for index in range(start, target):
            self._read_kind(reads[index], function)

    def _binding_kind(self, binding: Binding, function: cst.FunctionDef) -> Kind:
        cached = self.memo.binding_kinds.get(binding)
        if cached is not None:
            return cached
        if binding.value is None:
            kind = self.param_kind(function, binding.name) or Kind.UNKNOWN
        elif isinstance(binding.value, (cst.FunctionDef, cst.ClassDef)):
            kind = Kind.UNKNOWN
        else:
            kind = self._value_kind(binding.value, function)
        if kind is not Kind.PENDING:
            self.memo.binding_kinds[binding] = kind
        return kind

    def conditional_tensor_bindings(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """For a read that is a tensor only on some paths, the statements that bind the tensor."""
        return self.memo.conditional_tensors.get(node, []) if isinstance(node, cst.Name) else []

    def name_kind(self, name: str, function: cst.FunctionDef) -> Kind:
        """The kind of local or parameter `name` in `function` (flow-insensitive)."""
        key = (function, name)
        if key in self.memo.names:
            return self.memo.names[key]
        if key in self.memo.in_progress:
            # A recursive definition such as `x = self.norm(x)`: judge by the other paths.
            param = self.param_kind(function, name)
            return param if param is not None else Kind.PENDING
        self.memo.in_progress.add(key)
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
            self.memo.in_progress.discard(key)
        if result is Kind.PENDING:
            result = Kind.UNKNOWN
        if not any(k[0] == function for k in self.memo.in_progress if isinstance(k, tuple) and len(k) == 2):
            self.memo.names[key] = result  # cache only results not built on a pending guess
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
                if self.draw_operands(value[1], value[2], function):
                    return Kind.UNKNOWN  # `k += 1` on a draw: Dynamo cannot compute it (draws.py)
                return combine([self.kind(value[1], function), self.kind(value[2], function)])
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

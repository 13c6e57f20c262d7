"""What the model knows of code it does not read: builtins, functools, dataclasses, torch.

A call of an external name adds an edge to that name (`builtins.len`, `torch.cat`) and
gives values by a small table: containers and iterators built from their arguments,
callbacks called (`map`, `sorted(key=)`, `functools.reduce`, `checkpoint`, `torch.cond`),
decorators that keep or wrap what they decorate (`functools.wraps`, `lru_cache`,
`staticmethod`, `property`, `dataclass`), torch's own meaning for Dynamo
(`torch.compile`, `torch.compiler.disable`, `allow_in_graph`, `custom_op`), data kinds for
torch, numpy and math results. Anything else external: an instance of it when its name
looks like a class, else unknown.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from compile_lint.analysis.kinds.lattice import Kind
from compile_lint.analysis.model.arguments import Args, site_of
from compile_lint.analysis.model.entries import register_compile, register_cond
from compile_lint.analysis.model.objects import (
    attribute_values,
    dict_values,
    iterate,
    merge_dict,
    store_attribute,
    store_key,
)
from compile_lint.analysis.model.values import (
    COMPILING,
    DATA,
    EMPTY,
    FALSE,
    NDARRAY,
    NONE,
    ONLY_UNKNOWN,
    PY,
    SHAPE,
    TENSOR,
    TRUE,
    BoundV,
    ClassV,
    ConstV,
    ContainerV,
    ExternalInstanceV,
    ExternalV,
    FunctionV,
    GeneratorV,
    InstanceV,
    KindV,
    PartialV,
    PatternV,
    SuperV,
    TupleV,
    Value,
    WrappedV,
    const,
    join,
)
from compile_lint.analysis.syntax.predicates import (
    COMPILING_PREDICATE_NAMES,
    COMPILING_PREDICATES,
    EAGER_PREDICATE_NAMES,
    EAGER_PREDICATES,
    TRACING_HELPER,
)

if TYPE_CHECKING:
    from compile_lint.analysis.model.expressions import Expressions

_IDENTITY_DECORATORS = frozenset({
    "functools.lru_cache", "functools.cache", "functools.singledispatch", "abc.abstractmethod", "typing.overload",
    "typing.final", "typing.no_type_check", "torch.jit.ignore", "torch.jit.unused", "torch.jit.export",
    "torch.fx.wrap", "torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.autocast",
    "contextlib.contextmanager", "torch._dynamo.assume_constant_result", "torch.compiler.assume_constant_result",
    "torch.library.register_fake", "torch.library.impl_abstract", "torch.library.impl", "torch.jit.script",
    "typing.runtime_checkable", "functools.total_ordering", "torch.autograd.function.once_differentiable",
})
_COMPILE = frozenset({"torch.compile", "torch._dynamo.optimize"})
_DISABLE = frozenset({"torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo"})
_ALLOW = frozenset({"torch._dynamo.allow_in_graph", "torch.compiler.allow_in_graph"})
_CUSTOM_OPS = frozenset({"torch.library.custom_op", "torch._library.custom_ops.custom_op"})
# Higher-order functions whose first argument Dynamo traces as a function of the rest.
_CALLS_FIRST = frozenset({"torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential"})
_WRAPS_FIRST = frozenset({"torch.vmap", "torch.func.vmap", "torch.func.grad", "torch.func.grad_and_value",
                          "torch.func.jacrev", "torch.func.jacfwd", "torch.func.hessian", "torch.func.vjp",
                          "torch.func.jvp"})
_CONDS = frozenset({"torch.cond", "torch._higher_order_ops.cond.cond", "torch._higher_order_ops.cond"})
_CONTAINERS = {"torch.nn.ModuleList": "modulelist", "torch.nn.Sequential": "sequential",
               "torch.nn.ModuleDict": "moduledict", "torch.nn.ParameterList": "list",
               "torch.nn.modules.container.ModuleList": "modulelist",
               "torch.nn.modules.container.Sequential": "sequential"}
# nn.Module methods that give the module itself back.
_RETURNS_SELF = frozenset({"to", "eval", "train", "cuda", "cpu", "float", "half", "double", "bfloat16", "type",
                           "requires_grad_", "share_memory", "to_empty", "apply", "compile"})
_SIZE_METHODS = frozenset({"size", "dim", "numel", "ndimension", "nelement", "stride", "element_size", "get_device"})
_DATA_METHODS = frozenset({"item", "tolist", "__bool__", "__int__", "__float__", "data_ptr"})
_MUTATORS = frozenset({"append", "add", "insert", "appendleft", "extend", "update", "pop", "remove", "reverse",
                       "sort", "clear", "popleft", "__setitem__", "__delitem__"})
_TYPE_BUILTINS = {"builtins.int": int, "builtins.float": float, "builtins.bool": bool, "builtins.str": str}


def _site(where: Optional[ast.AST]) -> tuple[int, int]:
    return site_of(where)


def _positional(args: Args, index: int) -> frozenset:
    return args.positional[index] if index < len(args.positional) else EMPTY


def _all_args(args: Args) -> frozenset:
    return join(*args.positional, *args.keywords.values(), *(iterate_none(starred) for starred in args.starred))


def iterate_none(found: frozenset) -> frozenset:
    """The values a `*x` splat passes, without a frame (tuples only)."""
    return join(*(item for value in found if isinstance(value, TupleV) for item in value.items))


def _container(frame: "Expressions", kind: str, where: Optional[ast.AST], elements: frozenset,
               tag: str = "") -> frozenset:
    line, column = _site(where)
    site = (frame.path, line, column) if not tag else (frame.path + tag, line, column)
    if elements:
        frame.heap.add(("e", site), elements)
    return frozenset((ContainerV(kind, site),))


def predicate(name: str, arguments: int) -> Optional[frozenset]:
    """What an is-compiling or eager-only predicate called `name` returns: True under Dynamo and False
    eagerly (`torch.compiler.is_compiling()`, transformers' `is_torchdynamo_compiling()`, timm's
    `_is_compiling()`), or False in both (`torch.jit.is_scripting()`); None for any other function."""
    last = name.rsplit(".", 1)[-1]
    if name in COMPILING_PREDICATES:
        return frozenset((COMPILING,))
    if name in EAGER_PREDICATES or (last in EAGER_PREDICATE_NAMES and not arguments):
        return frozenset((FALSE,))
    if name.startswith("torch.jit."):
        return None
    if last in COMPILING_PREDICATE_NAMES and not arguments:
        return frozenset((COMPILING,))
    parts = name.split(".")
    if last == TRACING_HELPER[0] and len(parts) > 1 and parts[-2] in TRACING_HELPER[1] and arguments <= 1:
        return frozenset((COMPILING,))
    return None


def call_external(frame: "Expressions", name: str, args: Args, where: Optional[ast.AST], spelled: Optional[str],
                  implicit: bool) -> frozenset:
    """Call the external `name` (an edge to it) and give what the table says it returns."""
    flag = predicate(name, len(args.positional) + len(args.keywords))
    if flag is not None:
        frame.model.record_call(frame.node, _site(where), spelled, frame.eager, name, "call", implicit,
                                frame.scope.qualname)
        return flag
    frame.model.record_call(frame.node, _site(where), spelled, frame.eager, name, "call", implicit,
                            frame.scope.qualname)
    if name.startswith("builtins."):
        return _builtin(frame, name, args, where)
    found = _library(frame, name, args, where, spelled)
    if found is not None:
        return found
    last = name.rsplit(".", 1)[-1]
    if last[:1].isupper():
        return frozenset((ExternalInstanceV(name),))
    if name.startswith("torch."):
        return frozenset((SHAPE,)) if last in _SIZE_METHODS else frozenset((TENSOR,))
    if name.startswith(("numpy.", "np.")):
        return frozenset((NDARRAY,))
    if name.startswith("math."):
        return frozenset((DATA if _has_tensor(_all_args(args)) else PY,))
    return ONLY_UNKNOWN


def _has_tensor(found: frozenset) -> bool:
    return any(isinstance(value, KindV) and value.kind in (Kind.TENSOR, Kind.MAYBE_TENSOR, Kind.DATA)
               for value in found)


def _library(frame: "Expressions", name: str, args: Args, where: Optional[ast.AST],
             spelled: Optional[str]) -> Optional[frozenset]:
    """Functools, dataclasses, copy and torch's own meaning; None for a name the table does not know."""
    if name in _IDENTITY_DECORATORS or name.startswith("torch.jit."):
        return _positional(args, 0) if args.positional else frozenset((ExternalV("<identity>"),))
    if name == "<identity>":
        return _positional(args, 0)
    if name == "functools.partial":
        if not args.positional:
            return ONLY_UNKNOWN
        return frozenset((PartialV(args.positional[0], tuple(args.positional[1:]),
                                   tuple(sorted(args.keywords.items(), key=lambda item: item[0]))),))
    if name in ("functools.wraps", "functools.update_wrapper"):
        return _positional(args, 0) if name == "functools.update_wrapper" else frozenset((ExternalV("<identity>"),))
    if name == "functools.cached_property":
        return frozenset((WrappedV("property", _positional(args, 0)),))
    if name == "functools.reduce":
        function = _positional(args, 0)
        elements = iterate(frame, _positional(args, 1))
        initial = _positional(args, 2)
        first = frame.invoke(function, Args(positional=[join(elements, initial), elements]), where, spelled)
        return frame.invoke(function, Args(positional=[join(first, initial, elements), elements]), where,
                           spelled)
    if name in ("dataclasses.dataclass", "attr.s", "attrs.define", "attr.dataclass"):
        classes = [value for value in _positional(args, 0) if isinstance(value, ClassV)]
        for cls in classes:
            frame.heap.add(("dataclass", cls.key), frozenset((TRUE,)))
        return frozenset(classes) if classes else frozenset((ExternalV("dataclasses.dataclass"),))
    if name in ("copy.copy", "copy.deepcopy", "typing.cast"):
        return _positional(args, 1 if name == "typing.cast" else 0)
    if name in _COMPILE:
        if not args.positional:
            return frozenset((PartialV(frozenset((ExternalV(name),)), (), tuple(sorted(args.keywords.items(),
                                                                                      key=lambda item: item[0]))),))
        register_compile(frame, args.positional[0], where, args.nodes.args[0] if args.nodes is not None
                         and args.nodes.args else None)
        return frozenset((WrappedV("compiled", args.positional[0]),))
    if name in _DISABLE:
        if not args.positional:
            return frozenset((ExternalV("torch.compiler.disable"),)) if name == "torch.compiler.disable" else \
                frozenset((ExternalV(name),))
        return frozenset((WrappedV("disabled", args.positional[0]),))
    if name in _ALLOW:
        for value in _positional(args, 0):
            if isinstance(value, FunctionV):
                frame.heap.add(("allowed", value.key), frozenset((TRUE,)))
        return frozenset((WrappedV("allowed", _positional(args, 0)),))
    if name in _CUSTOM_OPS:
        if len(args.positional) >= 2:
            return frozenset((WrappedV("opaque", args.positional[1]),))
        return frozenset((ExternalV("<custom-op>"),))
    if name == "<custom-op>":
        return frozenset((WrappedV("opaque", _positional(args, 0)),))
    if name in _CONTAINERS:
        kind = _CONTAINERS[name]
        if kind == "moduledict":
            made = _container(frame, "moduledict", where, EMPTY)
            site = next(iter(made)).site
            merge_dict(frame, site, _positional(args, 0))
            return made
        if kind == "sequential" and len(args.positional) != 1:
            elements = join(*args.positional, *(iterate(frame, starred) for starred in args.starred))
        else:
            elements = join(*(iterate(frame, found) for found in args.positional),
                            *(iterate(frame, iterate(frame, starred)) for starred in args.starred))
        return _container(frame, kind, where, elements)
    if name in _CALLS_FIRST:
        if not args.positional:
            return ONLY_UNKNOWN
        rest = Args(list(args.positional[1:]), list(args.starred),
                    {key: value for key, value in args.keywords.items()
                     if key not in ("use_reentrant", "preserve_rng_state", "context_fn", "determinism_check",
                                    "debug")}, list(args.double_starred))
        return frame.invoke(args.positional[0], rest, where, spelled, implicit=True)
    if name in _WRAPS_FIRST:
        return frozenset((PartialV(_positional(args, 0)),)) if args.positional else ONLY_UNKNOWN
    if name in _CONDS:
        return register_cond(frame, args, where, spelled)
    if name in ("torch.nn.Module.__call__", "torch.nn.modules.module.Module.__call__"):
        if not args.positional:
            return ONLY_UNKNOWN
        receiver = args.positional[0]
        rest = Args(list(args.positional[1:]), list(args.starred), dict(args.keywords), list(args.double_starred))
        return join(*(frame.module_forward(value, rest, where, spelled) for value in receiver))
    if name in ("torch.func.functional_call", "torch.nn.utils.stateless.functional_call"):
        module = _positional(args, 0)
        inputs = _positional(args, 2)
        passed = [item for value in inputs if isinstance(value, TupleV) for item in value.items] or [inputs]
        return join(*(frame.module_forward(value, Args(positional=list(passed)), where, spelled)
                      for value in module))
    return None


def _builtin(frame: "Expressions", name: str, args: Args, where: Optional[ast.AST]) -> frozenset:
    short = name[len("builtins."):]
    first = _positional(args, 0)
    if short == "len":
        return frozenset((SHAPE,))
    if short in ("staticmethod", "classmethod", "property"):
        how = {"staticmethod": "static", "classmethod": "class", "property": "property"}[short]
        return frozenset((WrappedV(how, first),))
    if short == "super":
        return _super(frame, args)
    if short == "isinstance":
        return frozenset((_isinstance(frame, first, _positional(args, 1)),))
    if short in ("getattr", "hasattr"):
        names = _positional(args, 1)
        constant = [value.value for value in names if isinstance(value, ConstV) and isinstance(value.value, str)]
        if short == "hasattr":
            return frozenset((PY,))
        patterns = [value for value in names if isinstance(value, PatternV)]
        if patterns and len(patterns) + len(constant) == len(names):
            constant += _matching_attributes(frame, first, patterns)
        if constant and all(isinstance(value, (ConstV, PatternV)) for value in names):
            found = join(*(attribute_values(frame.model, first, attribute, frame, where) for attribute in constant))
            return join(found, _positional(args, 2)) if found or len(args.positional) > 2 else found or ONLY_UNKNOWN
        return join(ONLY_UNKNOWN, _positional(args, 2))
    if short == "setattr":
        names = _positional(args, 1)
        for value in names:
            if isinstance(value, ConstV) and isinstance(value.value, str):
                store_attribute(frame, first, value.value, _positional(args, 2))
        return frozenset((NONE,))
    if short == "type" and len(args.positional) == 1:
        return frozenset((ClassV(value.cls) if isinstance(value, InstanceV) else ExternalV("builtins.type")
                          for value in first)) or ONLY_UNKNOWN
    if short in ("iter", "reversed", "aiter"):
        return _container(frame, "list", where, iterate(frame, first))
    if short in ("next", "anext"):
        return join(iterate(frame, first), _positional(args, 1))
    if short in ("list", "tuple", "set", "frozenset", "sorted"):
        elements = iterate(frame, first)
        key = args.keywords.get("key")
        if key:
            frame.invoke(key, Args(positional=[elements]), where, "key", implicit=True)
        return _container(frame, "set" if short in ("set", "frozenset") else "list", where, elements)
    if short == "dict":
        made = _container(frame, "dict", where, EMPTY)
        site = next(iter(made)).site
        for value in first:
            if isinstance(value, ContainerV) and value.kind == "dict":
                merge_dict(frame, site, frozenset((value,)))
        for key, found in args.keywords.items():
            frame.heap.add(("dk", site), frozenset((ConstV(key),)))
            frame.heap.add(("dv", site, key), found)
        return made
    if short == "enumerate":
        return _container(frame, "list", where, frozenset((TupleV((frozenset((PY,)), iterate(frame, first))),)))
    if short == "zip":
        items = tuple(iterate(frame, found) for found in args.positional)
        return _container(frame, "list", where, frozenset((TupleV(items),)))
    if short in ("map", "filter"):
        # `map(f, xs)`; a callable in another position is called too (as PyCG's benchmark has it).
        callables = [index for index, found in enumerate(args.positional)
                     if any(isinstance(value, (FunctionV, BoundV, PartialV, ClassV, WrappedV)) for value in found)]
        index = callables[0] if callables else 0
        function = _positional(args, index)
        sequences = [iterate(frame, found) for position, found in enumerate(args.positional) if position != index]
        results = frame.invoke(function, Args(positional=sequences), where, short, implicit=True)
        return _container(frame, "list", where, results if short == "map" else join(*sequences))
    if short in ("min", "max", "sum", "abs", "round"):
        elements = iterate(frame, first) if len(args.positional) == 1 and short != "abs" and short != "round" \
            else join(*args.positional)
        key = args.keywords.get("key")
        if key:
            frame.invoke(key, Args(positional=[elements]), where, "key", implicit=True)
        kinds = {value.kind for value in elements if isinstance(value, KindV)}
        if Kind.TENSOR in kinds or Kind.MAYBE_TENSOR in kinds:
            return frozenset((TENSOR,))
        return frozenset(value for value in elements if isinstance(value, (InstanceV, ConstV))) | {PY} \
            if short in ("min", "max") else frozenset((DATA if Kind.DATA in kinds else PY,))
    if short in _TYPE_BUILTINS:
        if _has_tensor(first):
            return frozenset((DATA,))
        constants = [value.value for value in first if isinstance(value, ConstV)]
        if constants and len(constants) == len(first):
            try:
                return frozenset(const(_TYPE_BUILTINS[name](value)) for value in constants)
            except (TypeError, ValueError, OverflowError):
                return frozenset((PY,))
        return frozenset((PY,))
    if short == "print":
        return frozenset((NONE,))
    if short in ("range", "open", "object", "slice", "memoryview", "bytearray"):
        return frozenset((ExternalInstanceV(name),))
    if short[:1].isupper():
        return frozenset((ExternalInstanceV(name),))
    if short in ("callable", "id", "hash", "repr", "format", "ord", "chr", "bin", "hex", "oct", "any", "all",
                 "issubclass", "divmod", "pow", "ascii"):
        return frozenset((PY,))
    return ONLY_UNKNOWN


_MAX_MATCHES = 16


def _matching_attributes(frame: "Expressions", objects: frozenset, patterns: list) -> list[str]:
    """The attribute names of the objects' classes (their order too) that `getattr(obj, f"_{x}_step")` may
    read: at most `_MAX_MATCHES` of them, else none (too loose a pattern says nothing)."""
    names: set[str] = set()
    model = frame.model
    for value in objects:
        key = value.cls if isinstance(value, InstanceV) else value.key if isinstance(value, ClassV) else None
        if key is None:
            continue
        for holder in model.mro(key):
            scope = model.scope(holder.key) if isinstance(holder, ClassV) else None
            if scope is not None:
                names.update(name for name in scope.local_names if any(p.matches(name) for p in patterns))
    return sorted(names) if len(names) <= _MAX_MATCHES else []


def _super(frame: "Expressions", args: Args) -> frozenset:
    """`super()` in a method (its class and first parameter), or `super(Cls, obj)`."""
    if len(args.positional) >= 2:
        return frozenset(SuperV(cls.key, receiver) for cls in args.positional[0] if isinstance(cls, ClassV)
                         for receiver in args.positional[1])
    scope = frame.scope
    while scope is not None and scope.kind not in ("function",):
        scope = scope.parent  # type: ignore[assignment]
    if scope is None or scope.parent is None or scope.parent.kind != "class":
        return ONLY_UNKNOWN
    function = scope.function
    first = function.args.posonlyargs + function.args.args if function is not None else []
    if not first:
        return ONLY_UNKNOWN
    receivers = frame.read_name(first[0].arg)
    cls = (frame.path, scope.parent.qualname)
    return frozenset(SuperV(cls, receiver) for receiver in receivers if isinstance(receiver, (InstanceV, ClassV))) \
        or ONLY_UNKNOWN


def _isinstance(frame: "Expressions", found: frozenset, classes: frozenset) -> Value:
    """`isinstance(x, C)` decided where the values tell (instances of loaded classes, tensors, constants)."""
    wanted: list[Value] = []
    for value in classes:
        if isinstance(value, TupleV):
            for item in value.items:
                wanted.extend(item)
        else:
            wanted.append(value)
    if not found or not wanted:
        return PY
    answers = set()
    for value in found:
        answers.add(_is_instance(frame, value, wanted))
    return TRUE if answers == {True} else FALSE if answers == {False} else PY


def _is_instance(frame: "Expressions", value: Value, wanted: list[Value]) -> Optional[bool]:
    if isinstance(value, InstanceV):
        order = frame.model.mro(value.cls)
        if any(item in order for item in wanted):
            return True
        if all(isinstance(item, ClassV) for item in wanted) and not any(
                isinstance(item, ExternalV) for item in order[1:]):
            return False
        return None
    if isinstance(value, KindV) and value.kind is Kind.TENSOR and not value.by_default:
        names = {item.name for item in wanted if isinstance(item, ExternalV)}
        if names & {"torch.Tensor", "torch.nn.Parameter"}:
            return True
        if all(isinstance(item, ClassV) for item in wanted):
            return False
        return None
    if isinstance(value, ConstV) and value.value is None:
        names = {item.name for item in wanted if isinstance(item, ExternalV)}
        if all(isinstance(item, (ClassV, ExternalV)) for item in wanted) and "builtins.type" not in names \
                and "builtins.object" not in names and not any(name.endswith("NoneType") for name in names):
            return False
    return None


def call_method(frame: "Expressions", name: str, receiver: Value, args: Args, where: Optional[ast.AST],
                spelled: Optional[str], implicit: bool) -> frozenset:
    """Call external method `name` bound to `receiver` (a container's, a tensor's, nn.Module's, ...)."""
    model = frame.model
    model.record_call(frame.node, _site(where), spelled, frame.eager, name, "call", implicit, frame.scope.qualname)
    method = name.rsplit(".", 1)[-1]
    heap = frame.heap
    if isinstance(receiver, ContainerV):
        site = receiver.site
        if receiver.kind not in ("dict", "moduledict") and method in _MUTATORS:
            heap.add(("mut", site), frozenset((TRUE,)))  # its items are no longer known by position
        if method in ("append", "add", "insert", "appendleft"):
            heap.add(("e", site), args.positional[-1] if args.positional else EMPTY)
            return frozenset((NONE,))
        if method in ("extend", "update") and receiver.kind not in ("dict", "moduledict"):
            heap.add(("e", site), iterate(frame, _positional(args, 0)))
            return frozenset((NONE,))
        if receiver.kind in ("dict", "moduledict"):
            return _dict_method(frame, receiver, method, args, where)
        if method in ("pop", "__getitem__"):
            return heap.read(("e", site))
        if method == "copy":
            return frozenset((receiver,))
        return ONLY_UNKNOWN
    if isinstance(receiver, KindV):
        if method in _DATA_METHODS:
            if receiver.kind in (Kind.TENSOR, Kind.MAYBE_TENSOR) and not frame.eager and where is not None:
                model.data_reads.setdefault(frame.node, set()).add(("item", getattr(where, "lineno", 0)))
            return frozenset((DATA,))
        if method in _SIZE_METHODS:
            return frozenset((SHAPE,))
        if receiver.kind in (Kind.TENSOR, Kind.MAYBE_TENSOR):
            return frozenset((KindV(Kind.TENSOR, receiver.by_default),))
        return frozenset((KindV(receiver.kind),)) if receiver.kind is Kind.NDARRAY else frozenset((PY,))
    if name == "builtins.property.setter":
        return frozenset((receiver,))
    if name in ("builtins.type.__call__", "type.__call__") and isinstance(receiver, ClassV):
        return frame.instantiate(receiver, args, where, spelled, implicit=True, through_metaclass=False)
    if method == "apply" and isinstance(receiver, ClassV) and name.startswith("torch.autograd."):
        forward = attribute_values(model, frozenset((receiver,)), "forward", frame, where)
        context = frozenset((ExternalInstanceV("torch.autograd.function.FunctionCtx"),))
        return frame.invoke(forward, args.prepend(context), where, spelled, implicit=True)
    if isinstance(receiver, (InstanceV, ExternalInstanceV)) and name.startswith("torch.nn."):
        return _module_method(frame, receiver, method, args, where, spelled)
    if isinstance(receiver, TupleV) and method in ("index", "count"):
        return frozenset((PY,))
    if isinstance(receiver, ConstV) and isinstance(receiver.value, str):
        return frozenset((PY,))
    if isinstance(receiver, GeneratorV) and method in ("send", "__next__"):
        return heap.read(("y", receiver.node))
    last = name.rsplit(".", 1)[-1]
    if last[:1].isupper():
        return frozenset((ExternalInstanceV(name),))
    return ONLY_UNKNOWN


def _dict_method(frame: "Expressions", receiver: ContainerV, method: str, args: Args,
                 where: Optional[ast.AST]) -> frozenset:

    site = receiver.site
    heap = frame.heap
    keys = heap.read(("dk", site))
    if method in ("get", "pop", "setdefault", "__getitem__"):
        if method == "setdefault" and len(args.positional) > 1:
            store_key(frame, site, _positional(args, 0), args.positional[1])
        return join(dict_values(frame, site, _positional(args, 0)), _positional(args, 1))
    if method == "values":
        return _container(frame, "list", where, dict_values(frame, site, keys | ONLY_UNKNOWN), ":values")
    if method == "keys":
        return _container(frame, "list", where, keys, ":keys")
    if method == "items":
        item = TupleV((keys, dict_values(frame, site, keys | ONLY_UNKNOWN)))
        return _container(frame, "list", where, frozenset((item,)), ":items")
    if method == "update":
        merge_dict(frame, site, _positional(args, 0))
        for key, found in args.keywords.items():
            store_key(frame, site, frozenset((ConstV(key),)), found)
        return frozenset((NONE,))
    if method == "copy":
        return frozenset((receiver,))
    return ONLY_UNKNOWN


def _module_method(frame: "Expressions", receiver: Value, method: str, args: Args, where: Optional[ast.AST],
                   spelled: Optional[str]) -> frozenset:
    """An nn.Module method a loaded class inherits: `to()`/`eval()` give the module, `__call__` runs forward."""
    if method in _RETURNS_SELF:
        if method == "apply":
            frame.invoke(_positional(args, 0), Args(positional=[ONLY_UNKNOWN]), where, spelled, implicit=True)
        return frozenset((receiver,))
    if method == "__call__":
        return frame.module_forward(receiver, args, where, spelled)
    if method in ("register_buffer", "register_parameter", "add_module", "register_module"):
        names = _positional(args, 0)
        found = _positional(args, 1)
        if method in ("register_buffer", "register_parameter"):
            found = join(found, frozenset((TENSOR,))) if found else frozenset((TENSOR,))
        for value in names:
            if isinstance(value, ConstV) and isinstance(value.value, str):
                store_attribute(frame, frozenset((receiver,)), value.value, found)
        return frozenset((NONE,))
    if method == "__init__":
        return frozenset((NONE,))
    if method in ("parameters", "buffers", "modules", "children", "named_parameters", "named_buffers",
                  "named_modules", "named_children", "state_dict"):
        return frozenset((ExternalInstanceV(f"torch.nn.Module.{method}()"),))
    return ONLY_UNKNOWN


def call_external_instance(frame: "Expressions", value: ExternalInstanceV, args: Args, where: Optional[ast.AST],
                           spelled: Optional[str]) -> frozenset:
    """Calling an object of an external class: a torch.nn module's forward gives a tensor; a context-manager
    or decorator object (`@torch.no_grad()`) gives back the function it decorates."""
    if len(args.positional) == 1 and not args.keywords and any(
            isinstance(item, (FunctionV, BoundV, PartialV, WrappedV)) for item in args.positional[0]):
        return args.positional[0]
    frame.model.record_call(frame.node, _site(where), spelled, frame.eager, value.name + ".__call__", "call",
                            scope=frame.scope.qualname)
    if value.name.startswith("torch.nn."):
        return frozenset((TENSOR,))
    return ONLY_UNKNOWN

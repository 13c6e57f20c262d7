"""Calls by meaning: what calling each abstract value runs, and what it gives back.

- a function runs its body with the arguments bound to its parameters, in a context: the
  parameters whose value is one constant or one callable or object (`verbose=False`, a
  function passed in, `self`'s class) are specialised, so a branch they decide is decided
  there, as Dynamo specialises on them;
- a bound method passes its receiver first; a partial its arguments;
- a class runs `__new__` and `__init__` (a dataclass's generated `__init__` binds its
  fields), and its metaclass's `__call__` when a loaded one defines it (an eager-only edge:
  Dynamo does not run it), and gives an instance;
- an instance runs its class's `__call__`, and an nn.Module's `forward`;
- `torch.compile`'s result, a `torch.compiler.disable`d function, a function registered
  with `allow_in_graph` or a custom op runs the function for its values, and the edge says
  how Dynamo treats it (inlined, a break at the call, in the graph untraced);
- everything external goes to `externals.py`.

Each call adds an edge from the calling node at the call's position.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from compile_lint.analysis.model import externals
from compile_lint.analysis.model.arguments import Args, site_of, specialise
from compile_lint.analysis.model.entries import compiled_call
from compile_lint.analysis.model.externals import predicate
from compile_lint.analysis.model.objects import attribute_values, class_lookup, dict_values, iterate
from compile_lint.analysis.model.scopes import parameters
from compile_lint.analysis.model.values import (
    EMPTY,
    ONLY_UNKNOWN,
    TENSOR,
    BoundV,
    ClassV,
    ConstV,
    ContainerV,
    ExternalInstanceV,
    ExternalV,
    FunctionV,
    GeneratorV,
    InstanceV,
    KeywordsV,
    KindV,
    PartialV,
    TupleV,
    UnknownV,
    Value,
    WrappedV,
    join,
)

if TYPE_CHECKING:
    from compile_lint.analysis.model.expressions import Expressions

_PREDICATE_WORDS = frozenset({"is_torchdynamo_compiling", "is_compiling", "is_dynamo_compiling", "is_tracing",
                              "is_torchdynamo_exporting"})


def call(frame: "Expressions", func: frozenset, args: Args, where: ast.AST, spelled: Optional[str]) -> frozenset:
    """The values of a call in the source."""
    return call_values(frame, func, args, where, spelled)


def call_values(frame: "Expressions", func: frozenset, args: Args, where: Optional[ast.AST],
                spelled: Optional[str], implicit: bool = False, how: str = "call") -> frozenset:
    """What calling any value of `func` with `args` gives (edges from the frame's node at `where`)."""
    result: set = set()
    for value in func:
        result.update(call_one(frame, value, args, where, spelled, implicit, how))
    return join(result)


def call_one(frame: "Expressions", value: Value, args: Args, where: Optional[ast.AST], spelled: Optional[str],
             implicit: bool, how: str) -> frozenset:
    """What calling `value` gives."""
    if isinstance(value, FunctionV):
        return call_function(frame, value, args, None, where, spelled, implicit, how)
    if isinstance(value, BoundV):
        function = value.function
        if isinstance(function, FunctionV):
            return call_function(frame, function, args, frozenset((value.receiver,)), where, spelled, implicit, how)
        if isinstance(function, ExternalV):
            return externals.call_method(frame, function.name, value.receiver, args, where, spelled, implicit)
        if isinstance(function, WrappedV):
            return call_one(frame, WrappedV(function.how, frozenset(
                BoundV(inner, value.receiver) for inner in function.function)), args, where, spelled, implicit, how)
        return ONLY_UNKNOWN
    if isinstance(value, ClassV):
        return instantiate(frame, value, args, where, spelled, implicit)
    if isinstance(value, InstanceV):
        return call_instance(frame, value, args, where, spelled)
    if isinstance(value, PartialV):
        merged = Args([*value.args, *args.positional], list(args.starred), dict(value.keywords) | args.keywords,
                      list(args.double_starred), args.positional_after_star, None if value.args else args.nodes)
        return call_values(frame, value.function, merged, where, spelled, implicit, how)
    if isinstance(value, WrappedV):
        if value.how in ("static", "class"):
            return call_values(frame, value.function, args, where, spelled, implicit, how)
        if value.how == "compiled":
            return compiled_call(frame, value.function, args, where, spelled)
        if value.how in ("disabled", "allowed", "opaque"):
            return call_values(frame, value.function, args, where, spelled, implicit,
                               value.how if how == "call" else how)
        return ONLY_UNKNOWN
    if isinstance(value, ExternalV):
        return externals.call_external(frame, value.name, args, where, spelled, implicit)
    if isinstance(value, ExternalInstanceV):
        return externals.call_external_instance(frame, value, args, where, spelled)
    if isinstance(value, ContainerV) and value.kind in ("sequential", "modulelist"):
        elements = frame.heap.read(("e", value.site))
        return call_values(frame, elements, args, where, spelled, True, how) or ONLY_UNKNOWN
    if isinstance(value, KindV):
        return frozenset((KindV(value.kind, value.by_default),))
    return ONLY_UNKNOWN


def call_function(frame: "Expressions", function: FunctionV, args: Args, receiver: Optional[frozenset],
                  where: Optional[ast.AST], spelled: Optional[str], implicit: bool = False,
                  how: str = "call") -> frozenset:
    """Run `function` (bound to `receiver` when given) in the context its arguments make."""
    model = frame.model
    scope = model.scope(function.key)
    if scope is None or scope.function is None:
        return ONLY_UNKNOWN
    if how == "call" and model.heap.read(("allowed", function.key)):
        how = "allowed"
    bound = bind(frame, function, scope.function, args.prepend(receiver) if receiver is not None else args)
    node = (function, model.context_for(function, specialise(bound)))
    site = site_of(where)
    model.record_call(frame.node, site, spelled, frame.eager, node, how, implicit, frame.scope.qualname)
    heap = model.heap
    for name, found in bound.items():
        heap.add(("l", node, name), found)
        heap.add(("p", node, name), found)
        if scope.has_nested:
            heap.add(("la", function.key, name), found)
    model.note_passes(frame.path, function, args.nodes, 1 if receiver is not None else 0, bound)
    if node not in model.evaluations and node not in heap.queued:
        heap.schedule(node)
    if scope.is_generator:
        return frozenset((GeneratorV(node),))
    module = model.modules.get(function.key[0])
    if module is not None and module.library and function.key[1].rsplit(".", 1)[-1].lstrip("_") in _PREDICATE_WORDS:
        flag = predicate(f"{module.name}.{function.key[1]}", len(args.positional) + len(args.keywords))
        if flag is not None:
            return flag  # a library's is-compiling helper means what its name says, whatever its body does
    return heap.read(("r", node))


def bind(frame: "Expressions", function: FunctionV, definition: ast.AST, args: Args) -> dict[str, frozenset]:
    """Parameter name -> the values this call binds it to (defaults where it passes nothing)."""
    heap = frame.heap
    positional = list(args.positional)
    spread: list[frozenset] = []
    for starred in args.starred:
        if len(starred) == 1 and isinstance(next(iter(starred)), TupleV):
            items = next(iter(starred)).items
            if not spread:
                positional.extend(items)
                continue
        spread.append(iterate(frame, starred))
    spread_values = join(*spread) if spread else EMPTY
    keywords = dict(args.keywords)
    open_keywords: list[frozenset] = []
    for splat in args.double_starred:
        for value in splat:
            if isinstance(value, KeywordsV):
                for key, item in value.items:
                    keywords[key] = join(keywords.get(key, EMPTY), item)
                if value.open:
                    open_keywords.append(ONLY_UNKNOWN)
            elif isinstance(value, ContainerV) and value.kind == "dict":
                keys = heap.read(("dk", value.site))
                for key in keys:
                    if isinstance(key, ConstV) and isinstance(key.value, str):
                        found = dict_values(frame, value.site, frozenset((key,)))
                        keywords[key.value] = join(keywords.get(key.value, EMPTY), found)
                if any(not isinstance(key, ConstV) for key in keys) or not keys:
                    open_keywords.append(ONLY_UNKNOWN)
            else:
                open_keywords.append(ONLY_UNKNOWN)
    open_values = join(*open_keywords) if open_keywords else EMPTY
    bound: dict[str, frozenset] = {}
    extra_positional: list[frozenset] = []
    index = 0
    used_keywords: set[str] = set()
    for name, kind in parameters(definition):  # type: ignore[arg-type]
        if kind == "positional":
            if index < len(positional):
                bound[name] = positional[index]
                index += 1
                continue
            passed = keywords.get(name)
            if passed is not None:
                used_keywords.add(name)
                bound[name] = passed
                continue
            alternatives = [spread_values] if spread else []
            default = heap.read(("d", function.key, name))
            if open_keywords:
                alternatives.append(open_values)
            if default:
                alternatives.append(default)
            bound[name] = join(*alternatives) if alternatives else ONLY_UNKNOWN
        elif kind == "varargs":
            extra_positional = positional[index:]
            index = len(positional)
            bound[name] = frozenset((TupleV(tuple(extra_positional)),)) if not spread else ONLY_UNKNOWN
        elif kind == "keyword":
            passed = keywords.get(name)
            if passed is not None:
                used_keywords.add(name)
                bound[name] = passed
                continue
            default = heap.read(("d", function.key, name))
            bound[name] = join(default, open_values) if (default or open_keywords) else ONLY_UNKNOWN
        else:  # **kwargs
            items = tuple((key, value) for key, value in sorted(keywords.items(), key=lambda item: item[0])
                          if key not in used_keywords and key not in bound)
            bound[name] = frozenset((KeywordsV(items, bool(open_keywords)),))
    return bound


def instantiate(frame: "Expressions", cls: ClassV, args: Args, where: Optional[ast.AST], spelled: Optional[str],
                implicit: bool = False, through_metaclass: bool = True) -> frozenset:
    """Calling class `cls`: `__new__` and `__init__`, and its metaclass's `__call__` (eager runs only); an
    instance of it."""
    model = frame.model
    heap = frame.heap
    instance = InstanceV(cls.key)
    result: set = {instance}
    how = "call"
    if through_metaclass:
        for meta in heap.read(("cm", cls.key)):
            if isinstance(meta, ClassV):
                method, holder = class_lookup(model, meta.key, "__call__")
                if isinstance(holder, ClassV):
                    # Eager runs make the instance through the metaclass's `__call__`; Dynamo does not run
                    # it (measured on torch 2.13: it builds the instance with `__new__` and traces
                    # `__init__`), so the edge is eager-only and `__init__` is called from here too.
                    bound = frozenset(BoundV(item, cls) for item in method if isinstance(item, FunctionV))
                    result.update(call_values(frame, bound, args, where, spelled, implicit=True, how="eager"))
                    how = "dynamo"  # Python's calls of `__new__` and `__init__` are the metaclass's
    new, holder = class_lookup(model, cls.key, "__new__")
    if isinstance(holder, ClassV):
        functions = frozenset(item for value in new for item in (
            value.function if isinstance(value, WrappedV) else (value,)) if isinstance(item, FunctionV))
        made = call_values(frame, functions, args.prepend(frozenset((cls,))), where, spelled, implicit=True,
                           how=how)
        result.update(value for value in made if isinstance(value, InstanceV))
    init, holder = class_lookup(model, cls.key, "__init__")
    if isinstance(holder, ClassV):
        bound = frozenset(BoundV(item, instance) for item in init if isinstance(item, FunctionV))
        call_values(frame, bound, args, where, spelled, implicit=True, how=how)
    elif heap.read(("dataclass", cls.key)):
        _dataclass_init(frame, cls, instance, args)
    elif isinstance(holder, ExternalV) and not holder.name.startswith(("builtins.", "typing.")):
        for value in init:
            if isinstance(value, ExternalV):
                externals.call_method(frame, value.name, instance, args, where, spelled, implicit=True)
    return frozenset(result)


def _dataclass_init(frame: "Expressions", cls: ClassV, instance: InstanceV, args: Args) -> None:
    """A dataclass's (or NamedTuple's) generated `__init__`: its annotated fields, in order, bases first."""
    model = frame.model
    fields: list[str] = []
    for holder in reversed(model.mro(cls.key)):
        if not isinstance(holder, ClassV):
            continue
        scope = model.scope(holder.key)
        if scope is None or not isinstance(scope.node, ast.ClassDef):
            continue
        for statement in scope.node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                    and statement.target.id not in fields and "ClassVar" not in ast.dump(statement.annotation):
                fields.append(statement.target.id)
    for position, name in enumerate(fields):
        found = args.positional[position] if position < len(args.positional) else args.keywords.get(name)
        if found is None:
            found = frame.heap.read(("ca", cls.key, name))
        if found:
            frame.heap.add(("ia", cls.key, name), found)


def call_instance(frame: "Expressions", instance: InstanceV, args: Args, where: Optional[ast.AST],
                  spelled: Optional[str]) -> frozenset:
    """Calling an instance: its class's `__call__`; an nn.Module's `forward` when no loaded class overrides it."""
    model = frame.model
    method, holder = class_lookup(model, instance.cls, "__call__")
    if isinstance(holder, ClassV):
        return call_values(frame, attribute_values(model, frozenset((instance,)), "__call__", frame, where), args,
                           where, spelled, implicit=True)
    if model.is_module_class(instance.cls):
        return module_forward(frame, instance, args, where, spelled)
    if isinstance(holder, ExternalV):
        return ONLY_UNKNOWN
    return EMPTY


def module_forward(frame: "Expressions", instance: Value, args: Args, where: Optional[ast.AST],
                   spelled: Optional[str]) -> frozenset:
    """nn.Module.__call__ on `instance`: its class's `forward`."""
    if not isinstance(instance, InstanceV):
        return frozenset((TENSOR,))
    forward = attribute_values(frame.model, frozenset((instance,)), "forward", frame, where)
    known = frozenset(value for value in forward if not isinstance(value, (UnknownV, ExternalV)))
    if not known:
        return frozenset((TENSOR,))
    return call_values(frame, known, args, where, spelled, implicit=True)


def is_callable_value(value: Value) -> bool:
    """Whether a value is one the model can call into (for the call graph's guesses)."""
    return isinstance(value, (FunctionV, BoundV, ClassV, InstanceV, PartialV, WrappedV))

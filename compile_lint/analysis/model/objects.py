"""Objects: attribute reads and writes, subscripts, iteration, and classes' method resolution order.

An attribute read means what Python makes it mean: a module's global (or its submodule),
a class attribute through the method resolution order (a method bound to the instance,
a classmethod bound to the class, a staticmethod as is, a property's getter called), an
instance attribute any method of the class or its bases assigned, else a loaded
`__getattr__`; an external object's attribute is the external name it spells
(`torch.nn.functional` . `relu`). Reads that run code (a property getter, `__getattr__`)
are calls of the frame that reads, at the attribute's position.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from compile_lint.analysis.kinds.lattice import Kind
from compile_lint.analysis.model.arguments import Args, site_of
from compile_lint.analysis.model.values import (
    DATA,
    EMPTY,
    ONLY_UNKNOWN,
    PY,
    SHAPE,
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
    ModuleV,
    SuperV,
    TupleV,
    Value,
    WrappedV,
    join,
)

if TYPE_CHECKING:
    from compile_lint.analysis.model.expressions import Expressions
    from compile_lint.analysis.model.program import Model

# Tensor attributes that are sizes, and methods that read data out of a tensor.
_SIZE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "requires_grad", "layout", "T", "mT"})
_SIZE_METHODS = frozenset({"size", "dim", "numel", "ndimension", "nelement", "stride", "element_size",
                           "get_device", "is_contiguous", "is_floating_point", "is_complex"})
_DATA_METHODS = frozenset({"item", "tolist", "__bool__", "__int__", "__float__", "data_ptr"})
_CONTAINER_KINDS = {"list", "set", "modulelist", "sequential", "tuple"}


def attribute_values(model: "Model", found: frozenset, name: str, frame: Optional["Expressions"] = None,
                     where: Optional[ast.AST] = None) -> frozenset:
    """The values of `value.name` for every value of `found`."""
    result: set = set()
    for value in found:
        result.update(_attribute(model, value, name, frame, where))
    return join(result)


def _attribute(model: "Model", value: Value, name: str, frame: Optional["Expressions"],
               where: Optional[ast.AST]) -> frozenset:
    heap = model.heap
    if isinstance(value, ModuleV):
        module = model.modules.get(value.path)
        if module is not None and module.library:
            model.library_global(value.path, name)  # only what binds the name runs
        elif (value, ()) not in model.evaluations:
            heap.schedule((value, ()))  # a module's globals are its code's: run it once it is used
        found = heap.read(("g", value.path, name))
        if found or (module is not None and name in module.scopes.module.local_names):
            return found  # the module binds it (maybe not yet evaluated): a submodule of that name is shadowed
        submodule = model.submodule(value, name)
        return frozenset((submodule,)) if submodule is not None else EMPTY
    if isinstance(value, ExternalV):
        return frozenset((ExternalV(f"{value.name}.{name}"),))
    if isinstance(value, InstanceV):
        return _instance_attribute(model, value, name, frame, where)
    if isinstance(value, ClassV):
        return _class_attribute(model, value, name, frame, where)
    if isinstance(value, SuperV):
        return _super_attribute(model, value, name)
    if isinstance(value, KindV):
        return _data_attribute(value, name)
    if isinstance(value, ExternalInstanceV):
        return frozenset((BoundV(ExternalV(f"{value.name}.{name}"), value),))
    if isinstance(value, (ContainerV, TupleV, KeywordsV, ConstV, GeneratorV)):
        kind = value.kind if isinstance(value, ContainerV) else type(value).__name__
        return frozenset((BoundV(ExternalV(f"<{kind}>.{name}"), value),))
    if isinstance(value, WrappedV) and value.how == "property" and name in ("setter", "getter", "deleter"):
        return frozenset((BoundV(ExternalV("builtins.property.setter"), value),))
    if isinstance(value, (FunctionV, BoundV)) and name in ("__wrapped__", "__func__"):
        return frozenset((value.function,)) if isinstance(value, BoundV) else frozenset((value,))
    if isinstance(value, (FunctionV, BoundV, WrappedV)) and name == "apply":
        return EMPTY
    return ONLY_UNKNOWN


def _data_attribute(value: KindV, name: str) -> frozenset:
    if value.kind in (Kind.TENSOR, Kind.MAYBE_TENSOR):
        if name in _SIZE_ATTRIBUTES:
            return frozenset((SHAPE,))
        return frozenset((BoundV(ExternalV(f"torch.Tensor.{name}"), value),))
    if value.kind is Kind.NDARRAY:
        return frozenset((BoundV(ExternalV(f"numpy.ndarray.{name}"), value),))
    return frozenset((BoundV(ExternalV(f"<{value.kind.value}>.{name}"), value),))


def class_lookup(model: "Model", key: tuple[str, str], name: str, start_after: Optional[tuple[str, str]] = None,
                 ) -> tuple[frozenset, Optional[Value]]:
    """`name` in class `key`'s order (after `start_after` for `super()`): (its values, the class holding it).

    An external class in the order ends the search with that class's attribute (`torch.nn.Module.__call__`).
    """
    order = model.mro(key)
    started = start_after is None
    for holder in order:
        if not started:
            started = isinstance(holder, ClassV) and holder.key == start_after
            continue
        if isinstance(holder, ClassV):
            found = model.heap.read(("ca", holder.key, name))
            if found:
                return found, holder
        elif isinstance(holder, ExternalV) and holder.name not in ("builtins.object", "object"):
            return frozenset((ExternalV(f"{holder.name}.{name}"),)), holder
    return EMPTY, None


def _bind(model: "Model", found: frozenset, receiver: Value, cls: ClassV, frame: Optional["Expressions"],
          where: Optional[ast.AST], name: str) -> frozenset:
    """Class attribute values as read through `receiver` (an instance, or the class itself)."""
    result: set = set()
    on_instance = isinstance(receiver, InstanceV)
    for value in found:
        if isinstance(value, FunctionV):
            result.add(BoundV(value, receiver) if on_instance else value)
        elif isinstance(value, WrappedV) and value.how == "class":
            result.update(BoundV(function, cls) for function in value.function)
        elif isinstance(value, WrappedV) and value.how == "static":
            result.update(value.function)
        elif isinstance(value, WrappedV) and value.how == "property":
            if on_instance and frame is not None and where is not None:
                bound = frozenset(BoundV(getter, receiver) for getter in value.function)
                result.update(frame.invoke(bound, Args(), where, name, implicit=True))
            elif not on_instance:
                result.add(value)
        elif isinstance(value, ExternalV) and on_instance:
            result.add(BoundV(value, receiver))
        elif isinstance(value, WrappedV) and value.how in ("compiled", "disabled", "allowed") and on_instance:
            result.add(BoundV(value, receiver))
        else:
            result.add(value)
    return frozenset(result)


def _instance_attribute(model: "Model", value: InstanceV, name: str, frame: Optional["Expressions"],
                        where: Optional[ast.AST]) -> frozenset:
    heap = model.heap
    order = model.mro(value.cls)
    found: set = set()
    external_base = False
    for base in order:
        if isinstance(base, ClassV):
            found.update(heap.read(("ia", base.key, name)))
        elif isinstance(base, ExternalV) and base.name not in ("builtins.object", "object"):
            external_base = True
    cls = ClassV(value.cls)
    attribute, holder = class_lookup(model, value.cls, name)
    if attribute and isinstance(holder, ClassV):
        found.update(_bind(model, attribute, value, cls, frame, where, name))
    elif not found and attribute and isinstance(holder, ExternalV):
        found.update(BoundV(item, value) for item in attribute)
    if not found and name not in ("__call__", "forward", "__enter__", "__iter__"):
        getter, getter_holder = class_lookup(model, value.cls, "__getattr__")
        if getter and isinstance(getter_holder, ClassV) and frame is not None and where is not None:
            bound = _bind(model, getter, value, cls, None, None, "__getattr__")
            found.update(frame.invoke(bound, Args(positional=[frozenset((ConstV(name),))]), where,
                                     "__getattr__", implicit=True))
        elif external_base and not found:
            found.add(ExternalV(f"{_first_external(order)}.{name}"))
    return frozenset(found)


def _first_external(order: tuple) -> str:
    return next((holder.name for holder in order if isinstance(holder, ExternalV)), "builtins.object")


def _class_attribute(model: "Model", value: ClassV, name: str, frame: Optional["Expressions"],
                     where: Optional[ast.AST]) -> frozenset:
    attribute, holder = class_lookup(model, value.key, name)
    if isinstance(holder, ClassV):
        return _bind(model, attribute, value, value, frame, where, name)
    if isinstance(holder, ExternalV):
        return frozenset((BoundV(item, value) for item in attribute))
    metaclass = model.heap.read(("cm", value.key))
    for meta in metaclass:
        if isinstance(meta, ClassV):
            found, meta_holder = class_lookup(model, meta.key, name)
            if isinstance(meta_holder, ClassV):
                return _bind(model, found, InstanceV(meta.key), meta, frame, where, name) | frozenset(
                    BoundV(item, value) for item in found if isinstance(item, FunctionV))
    return EMPTY


def _super_attribute(model: "Model", value: SuperV, name: str) -> frozenset:
    receiver = value.receiver
    start = receiver.cls if isinstance(receiver, InstanceV) else receiver.key if isinstance(receiver, ClassV) else None
    if start is None:
        return ONLY_UNKNOWN
    if isinstance(receiver, ClassV) and ClassV(value.cls) not in model.mro(start):
        start = value.cls  # `super()` in a metaclass method: the receiver is a class, an instance of it
    found, holder = class_lookup(model, start, name, start_after=value.cls)
    if isinstance(holder, ExternalV):
        return frozenset(BoundV(item, receiver) for item in found)
    cls = ClassV(start)
    return _bind(model, found, receiver, cls, None, None, name)


def store_attribute(frame: "Expressions", targets: frozenset, name: str, found: frozenset) -> None:
    """`target.name = found` for every value of `targets`."""
    heap = frame.heap
    for target in targets:
        if isinstance(target, InstanceV):
            heap.add(("ia", target.cls, name), found)
        elif isinstance(target, ClassV):
            heap.add(("ca", target.key, name), found)
        elif isinstance(target, ModuleV):
            heap.add(("g", target.path, name), found)


def subscript(frame: "Expressions", found: frozenset, index: frozenset, where: ast.AST) -> frozenset:
    """`value[index]` for every value of `found`."""
    result: set = set()
    for value in found:
        if isinstance(value, TupleV):
            positions = [item.value for item in index if isinstance(item, ConstV) and isinstance(item.value, int)]
            if positions and len(positions) == len(index):
                for position in positions:
                    if -len(value.items) <= position < len(value.items):
                        result.update(value.items[position])
            elif any(isinstance(item, KindV) and item.kind is Kind.PY for item in index) and _is_slice(where):
                result.add(value)
            else:
                for item in value.items:
                    result.update(item)
        elif isinstance(value, ContainerV):
            if value.kind == "dict" or value.kind == "moduledict":
                result.update(dict_values(frame, value.site, index))
            elif _is_slice(where):
                result.update(_sliced(frame, value, where))
            else:
                result.update(list_items(frame, value, index))
        elif isinstance(value, KeywordsV):
            keys = [item.value for item in index if isinstance(item, ConstV)]
            for key, item in value.items:
                if not keys or key in keys:
                    result.update(item)
            if value.open:
                result.update(ONLY_UNKNOWN)
        elif isinstance(value, KindV):
            if value.kind in (Kind.TENSOR, Kind.MAYBE_TENSOR):
                result.add(KindV(Kind.TENSOR, value.by_default))
            elif value.kind is Kind.SHAPE:
                result.add(SHAPE)
            elif value.kind is Kind.DATA:
                result.add(DATA)
            else:
                result.add(value)
        elif isinstance(value, InstanceV):
            method = attribute_values(frame.model, frozenset((value,)), "__getitem__", frame, where)
            if method:
                result.update(frame.invoke(method, Args(positional=[index]), where, "__getitem__",
                                          implicit=True))
        elif isinstance(value, (ClassV, ExternalV)):
            result.add(value)  # `List[int]`, `Optional[Tensor]`: a type
        else:
            result.update(ONLY_UNKNOWN)
    return join(result)


def positions(frame: "Expressions", value: ContainerV) -> Optional[int]:
    """The length of a list display never mutated (its items known by position), else None."""
    heap = frame.heap
    if value.kind != "list" or heap.read(("mut", value.site)):
        return None
    length = heap.read(("len", value.site))
    if len(length) != 1:
        return None
    only = next(iter(length))
    return only.value if isinstance(only, ConstV) and isinstance(only.value, int) else None


def list_items(frame: "Expressions", value: ContainerV, index: frozenset) -> frozenset:
    """`ls[i]`: the item at a constant position of a list known by position, else any element."""
    length = positions(frame, value)
    wanted = [item.value for item in index if isinstance(item, ConstV) and isinstance(item.value, int)
              and not isinstance(item.value, bool)]
    if not index:
        return EMPTY  # the index is not known yet: nothing, until it is
    if length is None or not wanted or len(wanted) != len(index):
        return frame.heap.read(("e", value.site))
    found: set = set()
    for position in wanted:
        if -length <= position < length:
            found.update(frame.heap.read(("ei", value.site, position % length)))
    return frozenset(found)


def _sliced(frame: "Expressions", value: ContainerV, where: ast.AST) -> frozenset:
    """`ls[a:b]` of a list known by position, with constant bounds: a new list of those items."""
    length = positions(frame, value)
    bounds = where.slice if isinstance(where, ast.Subscript) else None
    if length is None or not isinstance(bounds, ast.Slice) or bounds.step is not None:
        return frozenset((value,))
    ends = []
    for bound, missing in ((bounds.lower, 0), (bounds.upper, length)):
        if bound is None:
            ends.append(missing)
        elif isinstance(bound, ast.Constant) and isinstance(bound.value, int):
            ends.append(bound.value)
        else:
            return frozenset((value,))
    chosen = list(range(length))[ends[0]:ends[1]]
    line, column = site_of(where)
    site = (frame.path, line, column)
    heap = frame.heap
    heap.add(("len", site), frozenset((ConstV(len(chosen)),)))
    for new, old in enumerate(chosen):
        items = heap.read(("ei", value.site, old))
        heap.add(("ei", site, new), items)
        heap.add(("e", site), items)
    return frozenset((ContainerV("list", site),))


def _is_slice(where: ast.AST) -> bool:
    return isinstance(where, ast.Subscript) and isinstance(where.slice, ast.Slice)


def dict_values(frame: "Expressions", site: tuple, index: frozenset) -> frozenset:
    """`d[key]` of the dict made at `site`: the constant key's values (and those of unknown keys)."""
    heap = frame.heap
    if not index:
        return EMPTY  # the key is not known yet: nothing, until it is
    keys = [item.value for item in index if isinstance(item, ConstV)]
    found = set(heap.read(("dv", site, None)))
    if keys and len(keys) == len(index):
        for key in keys:
            found.update(heap.read(("dv", site, key)))
        return frozenset(found)
    for key in heap.read(("dk", site)):
        found.update(heap.read(("dv", site, key.value if isinstance(key, ConstV) else None)))
    return frozenset(found)


def store_subscript(frame: "Expressions", targets: frozenset, index: frozenset, found: frozenset) -> None:
    """`target[index] = found`."""
    for target in targets:
        if isinstance(target, ContainerV):
            if target.kind in ("dict", "moduledict"):
                store_key(frame, target.site, index, found)
                continue
            frame.heap.add(("e", target.site), found)
            exact = [item.value for item in index if isinstance(item, ConstV) and isinstance(item.value, int)]
            length = positions(frame, target)
            if length is not None and len(exact) == len(index) == 1 and -length <= exact[0] < length:
                frame.heap.add(("ei", target.site, exact[0] % length), found)
            else:
                frame.heap.add(("mut", target.site), frozenset((ConstV(True),)))
        elif isinstance(target, InstanceV):
            method = attribute_values(frame.model, frozenset((target,)), "__setitem__", None, None)
            if method:
                frame.invoke(method, Args(positional=[index, found]), None, "__setitem__", implicit=True)


def store_key(frame: Expressions, site: tuple, keys: frozenset, found: frozenset) -> None:
    """`d[key] = found` for dict `site`: by the constant key when there is one."""
    frame.heap.add(("dk", site), keys)
    exact = [value.value for value in keys if isinstance(value, ConstV)]
    if len(exact) == len(keys) and exact:
        for key in exact:
            frame.heap.add(("dv", site, key), found)
    else:
        frame.heap.add(("dv", site, None), found)


def merge_dict(frame: "Expressions", site: tuple, found: frozenset) -> None:
    """`{**other}`: the other dict's keys and values into dict `site`."""
    for value in found:
        if isinstance(value, ContainerV) and value.kind == "dict":
            for key in frame.heap.read(("dk", value.site)):
                store_key(frame, site, frozenset((key,)), dict_values(frame, value.site, frozenset((key,))))
        elif isinstance(value, KeywordsV):
            for key, item in value.items:
                store_key(frame, site, frozenset((ConstV(key),)), item)


def iterate(frame: "Expressions", found: frozenset) -> frozenset:
    """What iterating over any value of `found` gives."""
    result: set = set()
    heap = frame.heap
    for value in found:
        if isinstance(value, ContainerV):
            if value.kind in ("dict", "moduledict"):
                result.update(heap.read(("dk", value.site)))
            else:
                result.update(heap.read(("e", value.site)))
        elif isinstance(value, TupleV):
            for item in value.items:
                result.update(item)
        elif isinstance(value, GeneratorV):
            result.update(heap.read(("y", value.node)))
        elif isinstance(value, KeywordsV):
            result.update(ConstV(key) for key, _ in value.items)
        elif isinstance(value, KindV):
            result.add(KindV(Kind.TENSOR, value.by_default) if value.kind in (Kind.TENSOR, Kind.MAYBE_TENSOR) else
                       SHAPE if value.kind is Kind.SHAPE else DATA if value.kind is Kind.DATA else PY)
        elif isinstance(value, ConstV) and isinstance(value.value, str):
            result.add(PY)
        elif isinstance(value, InstanceV):
            method = attribute_values(frame.model, frozenset((value,)), "__iter__", frame, None)
            if method:
                iterator = frame.invoke(method, Args(), None, "__iter__", implicit=True)
                result.update(iterate(frame, frozenset(item for item in iterator if item != value)))
                nexts = attribute_values(frame.model, iterator, "__next__", frame, None)
                if nexts:
                    result.update(frame.invoke(nexts, Args(), None, "__next__", implicit=True))
            else:
                result.update(ONLY_UNKNOWN)
        elif isinstance(value, ExternalInstanceV) and value.name == "builtins.range":
            result.add(PY)
        else:
            result.update(ONLY_UNKNOWN)
    return join(result)

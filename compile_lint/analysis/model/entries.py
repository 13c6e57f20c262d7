"""Where tracing starts, found in the model: what `torch.compile` is given, wherever and however.

- the value `torch.compile(X)` is given, evaluated like any other: a function, a bound
  method of an object built anywhere (`torch.compile(Model().generate)`), an instance
  (its `__call__` override, else `forward`), a partial, a lambda, `@torch.compile`,
  `model.compile()`; calling the compiled wrapper runs the target with the call's
  arguments, as an entry;
- `forward` of every nn.Module class of the project (inherited ones included: the class
  is the receiver, so its overrides are what `self.m()` runs), after a generic
  construction of the class (its `__init__` with unknown arguments), since the user
  compiles a model built elsewhere;
- the branches of `torch.cond` (compiled even when cond is called eagerly);
- the `entry-points` setting.

An entry runs with its untyped parameters as tensors by default (`KindV(TENSOR,
by_default=True)`), its defaulted ones as the default or a tensor, its receiver bound.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from compile_lint.analysis.model.arguments import Args, site_of, specialise
from compile_lint.analysis.model.objects import attribute_values, class_lookup
from compile_lint.analysis.model.scopes import parameters
from compile_lint.analysis.model.values import (
    EMPTY,
    ONLY_UNKNOWN,
    TENSOR_BY_DEFAULT,
    BoundV,
    ClassV,
    FunctionV,
    InstanceV,
    KeywordsV,
    Node,
    PartialV,
    TupleV,
    UnknownV,
    Value,
    WrappedV,
    join,
)

if TYPE_CHECKING:
    from compile_lint.analysis.model.expressions import Expressions
    from compile_lint.analysis.model.program import Model

_GUESSED = 5  # methods named like the compiled attribute, at most, when its object is unknown


def compiled_call(frame: "Expressions", functions: frozenset, args: Args, where: Optional[ast.AST],
                  spelled: Optional[str]) -> frozenset:
    """Calling `torch.compile(f)`'s result: `f` runs traced (an entry when the caller is not)."""
    return frame.invoke(functions, args, where, spelled, how="compiled")


def register_compile(frame: "Expressions", target: frozenset, where: Optional[ast.AST],
                     argument: Optional[ast.expr]) -> None:
    """`torch.compile(target)`: each callable it may be becomes an entry, with generic arguments."""
    model = frame.model
    made = (frame.path, where.lineno) if where is not None and hasattr(where, "lineno") else (frame.path, 0)
    found = False
    for value in target:
        found |= enter(frame, value, made, where)
    if not found and isinstance(argument, ast.Attribute):
        for key, owner in _methods_named(model, argument.attr):
            enter(frame, BoundV(FunctionV(key), InstanceV(owner)), made, where)


def register_cond(frame: "Expressions", args: Args, where: Optional[ast.AST], spelled: Optional[str]) -> frozenset:
    """`torch.cond(pred, true_fn, false_fn, operands)`: both branches run on the operands, compiled."""
    operands = args.positional[3] if len(args.positional) > 3 else args.keywords.get("operands", EMPTY)
    passed: list[frozenset] = []
    for value in operands:
        if isinstance(value, TupleV):
            passed = list(value.items)
            break
    branches = join(*args.positional[1:3], args.keywords.get("true_fn", EMPTY), args.keywords.get("false_fn", EMPTY))
    results = frame.invoke(branches, Args(positional=passed), where, spelled, implicit=True)
    model = frame.model
    made = (frame.path, where.lineno if where is not None and hasattr(where, "lineno") else 0, "cond")
    for record in model.edges.get(frame.node, {}).values():
        if where is not None and (record.line, record.column) == site_of(where):
            for target, _ in record.targets:
                if isinstance(target, tuple) and target not in model.entries:
                    model.cond_branches[target] = made
    return results


def enter(frame: "Expressions", value: Value, made: tuple, where: Optional[ast.AST]) -> bool:
    """Make an entry of compiled `value` (a function, bound method, instance, partial); whether it was one."""
    model = frame.model
    if isinstance(value, WrappedV):
        return any(enter(frame, inner, made, where) for inner in value.function)
    if isinstance(value, PartialV):
        return any(enter_function(model, inner, made, list(value.args)) for inner in value.function
                   if isinstance(inner, (FunctionV, BoundV)))
    if isinstance(value, (FunctionV, BoundV)):
        return enter_function(model, value, made)
    if isinstance(value, InstanceV):
        method, holder = class_lookup(model, value.cls, "__call__")
        if not isinstance(holder, ClassV):
            method = attribute_values(model, frozenset((value,)), "forward")
        else:
            method = attribute_values(model, frozenset((value,)), "__call__")
        return any(enter_function(model, item, made) for item in method if isinstance(item, (FunctionV, BoundV)))
    return False


def enter_function(model: "Model", value: Value, made: Optional[tuple], passed: Optional[list] = None) -> bool:
    """An entry node for function `value` (bound or not), its parameters generic; whether there was one."""
    receiver: Optional[Value] = None
    function = value
    if isinstance(value, BoundV):
        function, receiver = value.function, value.receiver
    if not isinstance(function, FunctionV):
        return False
    node = generic_node(model, function, receiver, entry=True, passed=passed)
    if node is None:
        return False
    model.entries.setdefault(node, made)
    return True


def generic_node(model: "Model", function: FunctionV, receiver: Optional[Value], entry: bool,
                 passed: Optional[list] = None) -> Optional[Node]:
    """The node of `function` called with arguments nobody in the program shows: tensors by default for an
    entry's untyped parameters, unknown otherwise; defaults kept alongside."""
    scope = model.scope(function.key)
    if scope is None or scope.function is None:
        return None
    heap = model.heap
    bound: dict[str, frozenset] = {}
    given = list(passed or ())
    first = True
    for name, kind in parameters(scope.function):
        if first and receiver is not None and kind == "positional":
            bound[name] = frozenset((receiver,))
            first = False
            continue
        first = False
        if kind == "positional" and given:
            bound[name] = given.pop(0)
            continue
        default = heap.peek(("d", function.key, name))
        unknown = _untyped(scope.function, name, entry)
        if kind == "varargs":
            bound[name] = ONLY_UNKNOWN
        elif kind == "varkeywords":
            bound[name] = frozenset((KeywordsV((), open=True),))
        else:
            bound[name] = join(default, unknown) if default else unknown
    node = (function, model.context_for(function, specialise(bound)))
    for name, found in bound.items():
        heap.add(("l", node, name), found)
        heap.add(("p", node, name), found)
        if scope.has_nested:
            heap.add(("la", function.key, name), found)
    if node not in model.evaluations:
        heap.schedule(node)
    return node


def _untyped(function: ast.AST, name: str, entry: bool) -> frozenset:
    """An entry's parameter nobody passes: a tensor by default (its annotation decides otherwise)."""
    if not entry:
        return ONLY_UNKNOWN
    arguments = function.args  # type: ignore[attr-defined]
    for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        if argument.arg == name and argument.annotation is not None:
            text = ast.unparse(argument.annotation)
            if "Tensor" not in text:
                return ONLY_UNKNOWN
    return frozenset((TENSOR_BY_DEFAULT,))


def _methods_named(model: "Model", name: str) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """(method key, its class) of the project classes defining `name` (module classes first), a few at most."""
    if name.startswith("__") or name == "forward":
        return []
    modules: list = []
    others: list = []
    for path in model.project_files:
        module = model.modules.get(path)
        if module is None:
            continue
        for qualname in module.scopes.classes:
            key = (path, qualname)
            method = f"{qualname}.{name}"
            if method in module.scopes.functions:
                (modules if model.is_module_class(key) else others).append(((path, method), key))
    found = modules or others
    return found if len(found) <= _GUESSED else []


def module_class_entries(model: "Model") -> bool:
    """Entries for `forward` of every nn.Module class of the project; whether any was new."""
    added = False
    for path in model.project_files:
        module = model.modules.get(path)
        if module is None:
            continue
        for qualname in module.scopes.classes:
            key = (path, qualname)
            if key in model.constructed or not model.is_module_class(key):
                continue
            model.constructed.add(key)
            construct(model, key)
            forward, holder = class_lookup(model, key, "forward")
            forward = join(*(value.function if isinstance(value, WrappedV) else frozenset((value,))
                             for value in forward))
            for value in forward:
                if isinstance(value, FunctionV) and isinstance(holder, ClassV):
                    node = generic_node(model, value, InstanceV(key), entry=True)
                    if node is not None:
                        model.entries.setdefault(node, None)
                        added = True
    return added


def construct(model: "Model", key: tuple[str, str]) -> None:
    """Build an instance of class `key` as its users would, with arguments unknown: its `__init__` runs."""
    init, holder = class_lookup(model, key, "__init__")
    if not isinstance(holder, ClassV):
        return
    for value in init:
        if isinstance(value, FunctionV):
            generic_node(model, value, InstanceV(key), entry=False)


def configured_entries(model: "Model", keys: list[tuple[str, str]]) -> None:
    """The `entry-points` setting's functions (`file.py:Class.method`), with the class as receiver."""
    for key in keys:
        scope = model.scope(key)
        if scope is None or scope.function is None:
            continue
        receiver: Optional[Value] = None
        parent = scope.parent
        if parent is not None and parent.kind == "class" and not _static(scope.function):
            owner = (key[0], parent.qualname)
            receiver = InstanceV(owner)
            if owner not in model.constructed:
                model.constructed.add(owner)
                construct(model, owner)
        node = generic_node(model, FunctionV(key), receiver, entry=True)
        if node is not None:
            model.entries.setdefault(node, None)


def evaluate_everything(model: "Model", which: str = "all") -> bool:
    """Give every function of the project's files a node (its arguments unknown) that has none yet:
    "all" for the whole call graph, "compiling" for those that spell a compile call (where entries are
    made). Whether any was added."""
    have = {node[0] for node in model.evaluations} | {node[0] for node in model.heap.queued}
    added = False
    for path in list(model.project_files) + ([] if which != "all" else []):
        module = model.modules.get(path)
        if module is None:
            continue
        if which == "all" or module.mentions_compile:
            module.scopes.walk_all()
        elif which == "compiling":
            continue
        for qualname, definitions in list(module.scopes.functions.items()):
            function = FunctionV((path, qualname))
            if function in have:
                continue
            scope = definitions[-1]
            if which == "compiling" and not any(each.calls_compile for each in definitions):
                continue
            receiver = _receiver(model, scope, path)
            if generic_node(model, function, receiver, entry=False) is not None:
                added = True
    return added


def _receiver(model: "Model", scope, path: str) -> Optional[Value]:
    parent = scope.parent
    if parent is None or parent.kind != "class" or scope.kind != "function" or _static(scope.function):
        return None
    key = (path, parent.qualname)
    if _classmethod(scope.function):
        return ClassV(key)
    return InstanceV(key)


def _static(function: ast.AST) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod"
               for d in getattr(function, "decorator_list", ()))


def _classmethod(function: ast.AST) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "classmethod"
               for d in getattr(function, "decorator_list", ()))


def is_unknown(found: frozenset) -> bool:
    """Whether a value set says nothing the model can follow."""
    return not found or all(isinstance(value, UnknownV) for value in found)

"""Calls resolved across the project's files: which function of which file a spelled callee runs.

A callee is resolved in the scope that spells it: the function's local aliases (`fn = a if
c else b`, `fn = partial(a)`, `blk` of `for blk in self.blocks`), its nested functions, then
the file's functions, classes, top-level aliases and imports; an import is followed into
the project file it names (`from .commons import f`, `from . import commons;
commons.f()`, `import pkg.commons as c`). `self.NAME` is looked up in the class and its
bases in Python's method resolution order (`classes.py`; bases followed across files:
mixins, `super().m()`), and in what the class assigns to
`self.NAME` (`self.enc = Encoder()` -> `Encoder.forward` when called, `Encoder.m` for
`self.enc.m()`; `nn.ModuleList([Block() ...])` elements; `self.act = gelu`). Calling a class
instance runs the `__call__` the class (or a project base) defines, else `forward` for an
nn.Module (an override's `super().__call__(...)` runs `self.forward`); `Search(model).run(x)`
runs `Search.run`, and `make(...).run(x)` (or `s = make(...); s.run(x)`) the `run` of
each class a project function `make` returns. Anything unsure resolves to nothing: the reach under-approximates.
"""

from __future__ import annotations

import os
from typing import Iterable, Optional

from compile_lint.analysis.project.classes import ClassResolver
from compile_lint.analysis.project.dispatch import (
    MAX_MATCHES,
    class_table,
    element_targets,
    matching,
    pattern_attribute,
    returned_targets,
    table_values,
)
from compile_lint.analysis.project.dispatch_spellings import PATTERN, TABLE_ENTRY
from compile_lint.analysis.project.expressions import MODULE_SELF_METHODS
from compile_lint.analysis.project.libraries import LibraryIndex
from compile_lint.analysis.project.modules import ModuleResolver
from compile_lint.analysis.project.properties import READ, getter_targets, is_property
from compile_lint.analysis.project.summary import (
    MODULE_SCOPE,
    TENSOR,
    UNKNOWN,
    Arg,
    CallSite,
    ClassInfo,
    FileSummary,
    FunctionInfo,
)
from compile_lint.analysis.syntax.predicates import DEFAULT_MODULE_BASE_NAMES, MODULE_BASE_PREFIX

Key = tuple[str, str]  # (absolute path, function qualname)
# (kind, path, qualname): kind is "function", "class", "instance", "elements" or "module" (qualname "").
Target = tuple[str, str, str]
_MAX_DEPTH = 12
# Higher-order ops Dynamo traces into on torch 2.13 (measured: a `print` in the function
# passed breaks `fullgraph=True` under each), and which positional arguments are functions.
HIGHER_ORDER_OPS: dict[str, tuple[int, ...]] = {
    "torch.cond": (1, 2),
    "torch._higher_order_ops.cond.cond": (1, 2),
    "torch._higher_order_ops.cond": (1, 2),
    "torch.utils.checkpoint.checkpoint": (0,),
    "torch.func.vmap": (0,),
    "torch.vmap": (0,),
    "torch.func.grad": (0,),
    "torch.func.grad_and_value": (0,),
}
# nn.Module's own `__call__` as an override may spell it (it runs the module's forward).
NN_MODULE_CALLS = frozenset({"torch.nn.Module.__call__", "torch.nn.modules.module.Module.__call__"})
# torch.cond compiles its branches even when called eagerly (measured on 2.13).
ALWAYS_TRACED_OPS = frozenset({"torch.cond", "torch._higher_order_ops.cond.cond", "torch._higher_order_ops.cond"})


class CallGraph:
    """Resolution over the summaries of the project's files."""

    def __init__(self, summaries: dict[str, FileSummary], modules: ModuleResolver,
                 module_bases: Iterable[str] = ()) -> None:
        # A copy: installed libraries' files join it while the traced set is walked (`follow_libraries`).
        self.summaries = dict(summaries)
        self.project_files = tuple(summaries)
        self.modules = modules
        self.base_names = frozenset(DEFAULT_MODULE_BASE_NAMES | set(module_bases))
        self.classes = ClassResolver(lambda key: self.cls(*key), self._bases, self._qualify)
        self.libraries: Optional[LibraryIndex] = None
        # Installed libraries' classes the project makes objects of (library_reach.instantiated_classes).
        self.instantiated: tuple[Key, ...] = ()
        self._files: dict[tuple[str, str], Optional[tuple[str, tuple[str, ...]]]] = {}
        self._subclasses: Optional[dict[tuple[str, str], list[tuple[str, str]]]] = None
        self._property_names: Optional[frozenset[str]] = None
        self._starred: dict[tuple[str, str], list[Target]] = {}

    def follow_libraries(self, libraries: LibraryIndex) -> None:
        """From now on, resolve names into installed libraries' files too (summarised when first named).

        What was resolved before without them (the entry points) is resolved again: a class's
        order may now hold a library base.
        """
        self.libraries = libraries
        self._files = {key: found for key, found in self._files.items() if found is not None}
        self.classes = ClassResolver(lambda key: self.cls(*key), self._bases, self._qualify)
        self._subclasses = None
        self._starred = {key: found for key, found in self._starred.items() if found}

    # ----- lookups -----
    def function(self, key: Key) -> Optional[FunctionInfo]:
        summary = self.summaries.get(key[0])
        return summary.functions.get(key[1]) if summary is not None else None

    def cls(self, path: str, qualname: str) -> Optional[ClassInfo]:
        summary = self.summaries.get(path)
        return summary.classes.get(qualname) if summary is not None else None

    def _module_file(self, qualified: str, path: str) -> Optional[tuple[str, tuple[str, ...]]]:
        key = (qualified, os.path.dirname(path) if qualified.startswith(".") else "")
        if key not in self._files:
            file, rest = self.modules.module_file(qualified, path)
            found = os.path.abspath(file) if file else None
            if found is not None and found not in self.summaries and self.libraries is not None:
                library = self.libraries.summary(found)
                if library is not None:
                    self.summaries[found] = library
            self._files[key] = (found, rest) if found is not None and found in self.summaries else None
        return self._files[key]

    # ----- classes -----
    def _bases(self, key: tuple[str, str], spelling: str) -> list[tuple[str, str]]:
        """The project classes a base of class `key`, spelled `spelling` in its file, may name."""
        return [(path, qualname) for kind, path, qualname in self.resolve(key[0], None, spelling) if kind == "class"]

    def _qualify(self, path: str, spelling: str) -> str:
        summary = self.summaries.get(path)
        return summary.qualify(spelling) if summary is not None else spelling

    def mro(self, path: str, qualname: str) -> list[tuple[str, str]]:
        """The class and its project bases, in Python's method resolution order."""
        return self.classes.mro((path, qualname))

    def is_module_class(self, path: str, qualname: str) -> bool:
        """Whether the class derives from an nn.Module (its bases followed through the project's files)."""
        return self.classes.is_module_class((path, qualname), self.base_names, MODULE_BASE_PREFIX)

    def method(self, path: str, qualname: str, name: str, after_self: bool = False) -> Optional[Key]:
        """The method `name` of the class or the first base (after the class, for `super()`) that defines it."""
        found = self.classes.method((path, qualname), name, after_self)
        return (found[0][0], found[1]) if found is not None else None

    def subclasses(self, path: str, qualname: str) -> list[tuple[str, str]]:
        """The project's classes that derive from the class, directly or not."""
        if self._subclasses is None:
            table: dict[tuple[str, str], list[tuple[str, str]]] = {}
            for file in self.project_files:  # a library's classes never derive from the project's
                summary = self.summaries[file]
                for name in summary.classes:
                    for base in self.mro(file, name)[1:]:
                        table.setdefault(base, []).append((file, name))
            self._subclasses = table
        return self._subclasses.get((path, qualname), [])

    def property_names(self) -> frozenset[str]:
        """The names of the project's property getters (a read of any other attribute calls nothing)."""
        if self._property_names is None:
            self._property_names = frozenset(
                function.name for summary in self.summaries.values() for function in summary.functions.values()
                if function.owner and function.decorators and is_property(function))
        return self._property_names

    def overrides(self, path: str, qualname: str, name: str) -> list[Key]:
        """`name` as the project's subclasses of the class define it, and as the installed libraries' classes the
        project makes objects of resolve it when they derive from the class: what `self.name()` may run."""
        found = []
        for sub_path, sub_name in self.subclasses(path, qualname):
            info = self.cls(sub_path, sub_name)
            if info is None:
                continue
            methods = matching(info.methods, name)  # `name` may be a getattr pattern
            if len(methods) <= MAX_MATCHES:  # a pattern matching more of one class's methods enumerates nothing
                found += [(sub_path, info.methods[method]) for method in methods]
        for made in self.instantiated:  # a library object the project makes runs its own class's `name`
            if (path, qualname) in self.mro(*made)[1:]:
                method = self.method(*made, name)
                if method is not None and method != self.method(path, qualname, name) and method not in found:
                    found.append(method)
        return found

    def _makers(self, path: str, qualname: str, attribute: str) -> list[Target]:
        """What the class (or the nearest base that assigns it) makes `self.attribute` from."""
        for cls_path, cls_name in self.mro(path, qualname):
            info = self.cls(cls_path, cls_name)
            if info is None or attribute not in info.makers:
                continue
            found: list[Target] = []
            for binding in info.makers[attribute]:
                for spelling in binding.spellings:
                    if spelling != UNKNOWN:
                        found.extend(self.resolve(cls_path, None, spelling))
            return found
        return []

    # ----- resolution -----
    def resolve(self, path: str, scope: Optional[FunctionInfo], spelling: str, depth: int = 0) -> list[Target]:
        """What `spelling` names in file `path`, inside function `scope` (None: at module level)."""
        if depth > _MAX_DEPTH or not spelling or spelling == UNKNOWN:
            return []
        if spelling.startswith(TABLE_ENTRY):
            return table_values(self.resolve(path, scope, spelling[len(TABLE_ENTRY):], depth + 1))
        if spelling.startswith("[]"):
            return [("elements", p, q) for kind, p, q in self.resolve(path, scope, spelling[2:], depth + 1)
                    if kind == "class"]
        if spelling.startswith("super()."):
            return self._super(path, scope, spelling[len("super()."):])
        receiver, dot, method = spelling[:-2].rpartition(".")
        if dot and method in MODULE_SELF_METHODS and spelling.endswith("()"):
            # `Net(...).eval()`, `model.to(device)`: the module itself, unless its class redefines the method.
            return [target for target in self.resolve(path, scope, receiver, depth + 1)
                    if target[0] == "instance" and self.is_module_class(target[1], target[2])
                    and self.method(target[1], target[2], method) is None]
        if "()." in spelling:
            maker, _, rest = spelling.partition("().")
            return self._continue(self.resolve(path, scope, maker + "()", depth + 1), rest.split("."), depth)
        if spelling.endswith("()"):
            made: list[Target] = []
            for kind, made_path, qualname in self.resolve(path, scope, spelling[:-2], depth + 1):
                if kind == "class":
                    made.append(("instance", made_path, qualname))
                elif kind == "function":  # what it returns: objects it builds, a dispatch (`getattr(self, ...)`)
                    returned = self._returned((made_path, qualname), depth + 1)
                    returned += returned_targets(self, made_path, qualname, depth + 1)
                    made.extend(target for target in dict.fromkeys(returned) if target not in made)
            return made
        if "[]" in spelling:
            container, _, rest = spelling.partition("[]")
            elements = element_targets(self.resolve(path, scope, container, depth + 1))
            return self._continue(elements, [part for part in rest.split(".") if part], depth)
        head, *attributes = spelling.split(".")
        return self._continue(self._name(path, scope, head, depth), attributes, depth)

    def _returned(self, key: Key, depth: int) -> list[Target]:
        """What a call of function `key` gives: what each of its traced `return`s names (a factory's instances)."""
        function = self.function(key)
        found: list[Target] = []
        for spelling in function.returned_spellings if function is not None else ():
            for target in self.resolve(key[0], function, spelling, depth + 1):
                if target not in found:
                    found.append(target)
        return found

    def _super(self, path: str, scope: Optional[FunctionInfo], name: str) -> list[Target]:
        if scope is None or not scope.owner or "." in name:
            return []
        found = self.method(path, scope.owner, name, after_self=True)
        return [("function", *found)] if found is not None else []

    def _name(self, path: str, scope: Optional[FunctionInfo], name: str, depth: int) -> list[Target]:
        summary = self.summaries.get(path)
        if summary is None:
            return []
        current = scope
        while current is not None and current.qualname != MODULE_SCOPE:
            if name == "self" and current.owner and current.params[:1] and current.params[0][0] == "self":
                return [("instance", path, current.owner)]
            if name == "cls" and current.owner and current.params[:1] and current.params[0][0] == "cls":
                return [("class", path, current.owner)]
            nested = f"{current.qualname}.{name}"
            if nested in current.nested:
                return [("function", path, nested)]
            if name in current.aliases:
                found: list[Target] = []
                for spelling in current.aliases[name]:
                    head = spelling.removeprefix(TABLE_ENTRY).split(".")[0].partition("(")[0].partition("[")[0]
                    if spelling != UNKNOWN and head != name:
                        found.extend(self.resolve(path, current, spelling, depth + 1))
                return found
            if any(param == name for param, _, _ in current.params):
                return []
            current = summary.functions.get(current.parent) if current.parent else None
        return self._module_name(path, name, depth)

    def _module_name(self, path: str, name: str, depth: int) -> list[Target]:
        summary = self.summaries.get(path)
        if summary is None or depth > _MAX_DEPTH:
            return []
        if name in summary.functions and name != MODULE_SCOPE:
            return [("function", path, name)]
        if name in summary.classes:
            return [("class", path, name)]
        if name in summary.aliases:
            found: list[Target] = []
            for spelling in summary.aliases[name].spellings:
                if spelling.split(".")[0] != name:
                    found.extend(self.resolve(path, None, spelling, depth + 1))
            return found
        qualified = summary.imports.get(name)
        if qualified is None:
            if os.path.basename(path) == "__init__.py":
                located = self._module_file("." + name, path)
                if located is not None and located[0] != path:
                    return self._continue([("module", located[0], "")], list(located[1]), depth)
            return self._star_imported(path, summary, name, depth) if summary.star_imports else []
        located = self._module_file(qualified, path)
        if located is None:
            return []
        file, rest = located
        if not rest:
            bound = self._package_attribute(qualified, path, file, depth)
            if bound is not None:
                return bound
        return self._continue([("module", file, "")], list(rest), depth)

    def qualified_targets(self, path: str, qualified: str) -> list[Target]:
        """What a name qualified by file `path`'s imports (`..utils.memoize.cached`, or a name of the file) names."""
        found = self.resolve(path, None, qualified)
        if found or "." not in qualified:
            return found
        located = self._module_file(qualified, path)
        return self._continue([("module", located[0], "")], list(located[1]), 0) if located is not None else []

    def _star_imported(self, path: str, summary: FileSummary, name: str, depth: int) -> list[Target]:
        """What `from MODULE import *` binds `name` to (the last such import that binds it, as Python
        binds them); a name with a leading underscore is never star-imported."""
        if name.startswith("_"):
            return []
        memo = (path, name)
        if memo in self._starred:
            return self._starred[memo]
        self._starred[memo] = []  # a cycle of star imports finds nothing more
        found: list[Target] = []
        for module in reversed(summary.star_imports):
            located = self._module_file(module, path)
            if located is not None and not located[1] and located[0] != path:
                found = self._module_name(located[0], name, depth + 1)
                if found:
                    break
        self._starred[memo] = found
        return found

    def _package_attribute(self, qualified: str, path: str, module: str, depth: int) -> Optional[list[Target]]:
        """`from pkg import name` takes the package's attribute `name` before its submodule `name`:
        what `pkg/__init__.py` binds `name` to when that is not the submodule `module`
        (`from .odeint import odeint` there), else None."""
        dots = len(qualified) - len(qualified.lstrip("."))
        parts = qualified[dots:].split(".")
        if len(parts) < 2 and not dots:
            return None
        package = self._module_file("." * dots + ".".join(parts[:-1]), path)
        if package is None or package[1] or package[0] == path or os.path.basename(package[0]) != "__init__.py":
            return None
        init, name = package[0], parts[-1]
        summary = self.summaries[init]
        if name in summary.imports:
            named = self._module_file(summary.imports[name], init)
            if named is None or named == (module, ()):
                return None
        elif name not in summary.functions and name not in summary.classes and name not in summary.aliases:
            return None
        return self._module_name(init, name, depth + 1)

    def _continue(self, targets: list[Target], rest: list[str], depth: int) -> list[Target]:
        for part in rest:
            following: list[Target] = []
            for kind, path, qualname in targets:
                following.extend(self._attribute(kind, path, qualname, part, depth + 1))
            targets = following
            if not targets:
                break
        return targets

    def _attribute(self, kind: str, path: str, qualname: str, name: str, depth: int) -> list[Target]:
        if depth > _MAX_DEPTH:
            return []
        if kind == "module":
            return self._module_name(path, name, depth)
        if PATTERN in name:
            return pattern_attribute(self, kind, path, qualname, name)
        if kind in ("class", "instance"):
            found = self.method(path, qualname, name)
            if found is not None:
                return [("function", *found)]
            nested = f"{qualname}.{name}"
            if self.cls(path, nested) is not None:
                return [("class", path, nested)]
            if kind == "instance":
                return self._makers(path, qualname, name)
            return class_table(self, path, qualname, name)  # `cls.TABLE[key]`
        return []

    # ----- calls -----
    def called(self, target: Target) -> Optional[Key]:
        """The function a call of `target` runs: a function, an instance's forward / __call__, a class's __init__."""
        kind, path, qualname = target
        if kind == "function":
            return path, qualname
        if kind == "instance":
            # A `__call__` the class (or a project base) defines runs instead of nn.Module's, which runs forward.
            found = self.method(path, qualname, "__call__")
            if found is None and self.is_module_class(path, qualname):
                found = self.method(path, qualname, "forward")
            return found
        if kind == "class" and not self.is_module_class(path, qualname):
            return self.method(path, qualname, "__init__")
        if kind == "elements":  # an nn.Sequential called: each of its modules' forward
            return self.method(path, qualname, "forward")
        return None

    def call_targets(self, key: Key, scope: FunctionInfo, call: CallSite) -> list[tuple[Key, Key, CallSite]]:
        """The project functions `call` (made in function `key`) runs, each with the call that passes its arguments.

        A function passed as an argument runs with the arguments of the call that calls it:
        `checkpoint(fn, a, b)` calls `fn(a, b)`, `torch.cond(p, f, g, (x,))` calls `f(x)`
        (operands are tensors), and a project callee that calls its parameter (`apply(fn, x)`
        making `fn(x)`) calls it with what that inner call passes.
        """
        if call.callee.startswith(READ):  # an attribute read: a property's getter, if any
            return [(getter, key, call) for getter in getter_targets(self, key, scope, call)]
        path = key[0]
        found: list[tuple[Key, Key, CallSite]] = []
        targets = self.resolve(path, scope, call.callee)
        if not targets and self._calls_module_call(path, scope, call):
            # A `__call__` override handing on to nn.Module's own `__call__`, which runs `self.forward`.
            passed_on = call.args if call.callee == "super().__call__" else call.args[1:]
            call = CallSite("self.forward", call.line, passed_on, call.eager, call.starred)
            targets = self.resolve(path, scope, call.callee)
        for target in targets:
            called = self.called(target)
            if called is not None and all(called != item[0] for item in found):
                found.append((called, key, call))
        head, _, method = call.callee.partition(".")
        if head == "self" and method and "." not in method and scope.owner:
            # `self.m()` in a base class runs the subclass's override when the object is one.
            for override in self.overrides(path, scope.owner, method):
                if all(override != item[0] for item in found):
                    found.append((override, key, call))
        summary = self.summaries[path]
        qualified = summary.qualify(call.callee)
        positions = HIGHER_ORDER_OPS.get(qualified)
        if positions is not None:
            positional = [arg for arg in call.args if arg.keyword is None]
            for index in positions:
                spelling = positional[index].spelling if index < len(positional) else None
                if spelling:
                    if qualified in ALWAYS_TRACED_OPS:
                        inner = CallSite(spelling, call.line, (Arg(None, TENSOR),) * 8, call.eager)
                    elif index == 0 and qualified.endswith("checkpoint"):
                        inner = CallSite(spelling, call.line, tuple(positional[1:]), call.eager)
                    else:
                        inner = CallSite(spelling, call.line, (), call.eager, starred=True)
                    found.extend((k, key, inner) for k in self._functions(path, scope, spelling))
            return found
        for called, _, _ in list(found):
            callee = self.function(called)
            if callee is None or not callee.called_params:
                continue
            for arg, param in passed(callee, call):
                if param in callee.called_params and arg.spelling:
                    inner_calls = [c for c in callee.calls if c.callee == param] or [call]
                    for k in self._functions(path, scope, arg.spelling):
                        found.extend((k, called, inner) for inner in inner_calls)
        return found

    def _calls_module_call(self, path: str, scope: FunctionInfo, call: CallSite) -> bool:
        """Whether `call` in a module class's `__call__` is nn.Module's: `super().__call__(...)`,
        `nn.Module.__call__(self, ...)` (no project base defines one: resolved to nothing)."""
        if scope.name != "__call__" or not scope.owner or not self.is_module_class(path, scope.owner):
            return False
        if call.callee == "super().__call__":
            return True
        return self.summaries[path].qualify(call.callee) in NN_MODULE_CALLS

    def _functions(self, path: str, scope: Optional[FunctionInfo], spelling: str) -> list[Key]:
        keys = []
        for target in self.resolve(path, scope, spelling):
            key = self.called(target) if target[0] != "class" else None
            if key is not None:
                keys.append(key)
        return keys


def passed(callee: FunctionInfo, call: CallSite) -> list[tuple[Arg, str]]:
    """(argument, parameter name) pairs of `call` into `callee` (a method's `self`/`cls` is bound)."""
    names = [name for name, _, _ in callee.params]
    if callee.owner and names[:1] in (["self"], ["cls"]):
        names = names[1:]
    pairs = []
    positional = [arg for arg in call.args if arg.keyword is None]
    if not call.starred:
        for arg, name in zip(positional, names):
            pairs.append((arg, name))
    for arg in call.args:
        if arg.keyword is not None and arg.keyword in names:
            pairs.append((arg, arg.keyword))
    return pairs

"""Where tracing starts: the functions `torch.compile` is given, and those Dynamo always traces.

- `forward` of every nn.Module subclass of the project (bases followed across files);
- `@torch.compile` functions, `torch.compile(fn)`, `torch.compile(obj.method)`,
  `obj.method = torch.compile(obj.method)`, `torch.compile(model)` and `model.compile()`
  (the class's `forward`, when `model` is bound to `Net(...)` or `Net(...).eval()` /
  `.to(...)` in the same scope; `torch.compile(model)` runs a `__call__` override instead);
  `torch.compile(partial(fn, ...))` and `torch.compile(lambda ...: fn(...))`
  (`expressions.compiled_spellings`);
- the branches of `torch.cond` (it compiles them even when called eagerly, torch 2.13);
- the `entry-points` setting: `"path/to/file.py:Class.method"` or `"path/to/file.py:function"`.
"""

from __future__ import annotations

import os
from typing import Iterable, Optional

from compile_lint.analysis.project.callgraph import ALWAYS_TRACED_OPS, HIGHER_ORDER_OPS, CallGraph, Key
from compile_lint.analysis.project.summary import MODULE_SCOPE
from compile_lint.analysis.syntax.predicates import DISABLE_DECORATORS, OPAQUE_OP_DECORATORS


class EntryPointError(ValueError):
    """An `entry-points` target that names no function of the project."""


def is_disabled(graph: CallGraph, key: Key) -> bool:
    """`@torch.compiler.disable` functions and custom-op bodies are never traced."""
    function = graph.function(key)
    return function is None or bool(set(function.decorators) & (DISABLE_DECORATORS | OPAQUE_OP_DECORATORS))


def configured(graph: CallGraph, targets: Iterable[str], root: str) -> list[Key]:
    """The functions the `entry-points` setting names (paths relative to `root`); an unknown one raises."""
    found = []
    for target in targets:
        file, colon, qualname = target.rpartition(":")
        if not colon or not file or not qualname:
            raise EntryPointError(f"entry-points: '{target}' is not 'path/to/file.py:function' or "
                                  f"'path/to/file.py:Class.method'")
        path = os.path.abspath(os.path.join(root, file))
        summary = graph.summaries.get(path)
        if summary is None:
            raise EntryPointError(f"entry-points: '{target}': no Python file {file} in the project ({root})")
        if qualname not in summary.functions or qualname == MODULE_SCOPE:
            raise EntryPointError(f"entry-points: '{target}': {file} defines no function {qualname}")
        found.append((path, qualname))
    return found


def entry_points(graph: CallGraph, configured_keys: Iterable[Key] = ()) -> dict[Key, Optional[tuple]]:
    """Every entry point -> where it is made one: (path, line) of a compile call, (path, line, "cond") of a
    torch.cond call, None for a forward or a configured one."""
    entries: dict[Key, Optional[tuple]] = {}
    for key in configured_keys:
        entries.setdefault(key, None)
    for path, summary in graph.summaries.items():
        for qualname in summary.classes:
            if "forward" in summary.classes[qualname].methods and graph.is_module_class(path, qualname):
                entries.setdefault((path, summary.classes[qualname].methods["forward"]), None)
        for scope_name, line, spelling in summary.compiled:
            scope = summary.functions.get(scope_name)
            if scope_name == MODULE_SCOPE and spelling in summary.functions:
                entries.setdefault((path, spelling), (path, line))  # a decorator
                continue
            targets = graph.resolve(path, scope, spelling)
            for target in targets:
                kind, target_path, qualname = target
                if kind == "class":
                    target = ("instance", target_path, qualname)
                called = graph.called(target)
                if called is not None:
                    entries.setdefault(called, (path, line))
            if not targets and "." in spelling:
                # `torch.compile(model.infer)` with `model` a parameter: the method of that
                # name of the project's module classes (of any class when no module has one).
                for key in _methods_named(graph, spelling.rsplit(".", 1)[1]):
                    entries.setdefault(key, (path, line))
        for function in summary.functions.values():
            for call in function.calls:
                if call.eager or summary.qualify(call.callee) not in ALWAYS_TRACED_OPS:
                    continue
                positional = [arg for arg in call.args if arg.keyword is None]
                for index in HIGHER_ORDER_OPS[summary.qualify(call.callee)]:
                    argument = positional[index].spelling if index < len(positional) else None
                    if argument:
                        for target in graph.resolve(path, function, argument):
                            called = graph.called(target) if target[0] != "class" else None
                            if called is not None:
                                entries.setdefault(called, (path, call.line, "cond"))
    return {key: where for key, where in entries.items() if not is_disabled(graph, key)}


_MAX_GUESSED = 5


def _methods_named(graph: CallGraph, name: str) -> list[Key]:
    """The methods `name` of the project's nn.Module classes, else of its other classes (a few at most)."""
    if name.startswith("__") or name == "forward":
        return []
    modules: list[Key] = []
    others: list[Key] = []
    for path, summary in graph.summaries.items():
        for qualname, cls in summary.classes.items():
            if name in cls.methods:
                (modules if graph.is_module_class(path, qualname) else others).append((path, cls.methods[name]))
    found = modules or others
    return found if len(found) <= _MAX_GUESSED else []

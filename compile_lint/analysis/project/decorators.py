"""The wrappers a project decorator puts around the functions it decorates (`@cached`, `functools.wraps` style).

    def _cached(method=None, name=None):
        if method is None:
            return functools.partial(_cached, name=name)
        @functools.wraps(method)
        def g(self, *args, **kwargs):           # runs on every call of a decorated method
            ...
            return method(self, *args, **kwargs)
        return g

Calling a method decorated with `@cached(name="x")` runs `g` first, and Dynamo traces `g`'s
body too: a `pickle.dumps` there breaks the graph of every caller. A wrapper is a function
nested in the decorator (or in a project function the decorator calls: `cached` ->
`_cached`, at most `_MAX_HOPS` calls away) that calls a parameter of a function enclosing
it: the wrapped function. A nested function that only registers what it is given calls no
parameter and is no wrapper; a decorator that is not a project function has none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compile_lint.analysis.project.summary import FunctionInfo

if TYPE_CHECKING:
    from compile_lint.analysis.project.callgraph import CallGraph, Key

_MAX_HOPS = 2


def decorator_wrappers(graph: "CallGraph", key: "Key", memo: dict) -> tuple["Key", ...]:
    """The wrapper functions the project decorators of function `key` run around it (memoised per decorator)."""
    function = graph.function(key)
    if function is None or not function.decorators:
        return ()
    found: dict["Key", None] = {}
    for decorator in function.decorators:
        cache_key = (key[0], decorator)
        if cache_key not in memo:
            memo[cache_key] = _wrappers_of_decorator(graph, key[0], decorator)
        found.update(dict.fromkeys(memo[cache_key]))
    return tuple(found)


def _wrappers_of_decorator(graph: "CallGraph", path: str, decorator: str) -> tuple["Key", ...]:
    """The wrappers of the decorator spelled (qualified) `decorator` in file `path` (none for a non-project one)."""
    if decorator.startswith(("torch.", "functools.", "typing.")) or decorator in ("property", "staticmethod",
                                                                                   "classmethod"):
        return ()
    decorators = [(p, q) for kind, p, q in graph.qualified_targets(path, decorator) if kind == "function"]
    found: dict["Key", None] = {}
    seen: set["Key"] = set()
    frontier = decorators
    for _ in range(_MAX_HOPS + 1):
        following: list["Key"] = []
        for key in frontier:
            if key in seen:
                continue
            seen.add(key)
            function = graph.function(key)
            if function is None:
                continue
            found.update(dict.fromkeys(_nested_wrappers(graph, key, function)))
            for call in function.calls:
                following += [target for target, _, _ in graph.call_targets(key, function, call)]
        frontier = sorted(set(following))
    return tuple(sorted(found))


def _nested_wrappers(graph: "CallGraph", key: "Key", function: FunctionInfo) -> list["Key"]:
    """The functions nested in `function` that call one of its parameters (the function they wrap)."""
    params = {name for name, _, _ in function.params}
    wrappers = []
    for nested in function.nested:
        inner = graph.function((key[0], nested))
        if inner is None:
            continue
        own = {name for name, _, _ in inner.params}
        if any(call.callee in params and call.callee not in own for call in inner.calls):
            wrappers.append((key[0], nested))
    return wrappers

"""Calls dispatched through a table or `getattr`, resolved over the project (spelled by `dispatch_spellings.py`).

A literal table's name resolves to one `entry:KIND` target per value (`SOLVERS` ->
`entry:class` Dopri5Solver, `entry:class` RK4, ...); an element of it (`SOLVERS[method]`,
`SOLVERS.get(method, Euler)`) is any of the values, so `SOLVERS[method](...)` runs each
class's `__init__`, and `solver = SOLVERS[method](...); solver.integrate(t)` each class's
`integrate` (its own or a base's: `classes.py` orders them). The table may be a module's
(imported from another file too) or a class attribute (`self.TABLE[key]`, `cls.TABLE[key]`).

A `getattr` pattern (`self._reduce_*`) resolves to the methods of the class and its bases
whose names match, and to the matching methods of its subclasses for a call on `self` (a
base's template dispatching to its subclasses' steps); a module's functions and classes
for a module. More than `MAX_MATCHES` matches is no enumeration: nothing is reached.
"""

from __future__ import annotations

import fnmatch
import re
from typing import TYPE_CHECKING, Iterable

from compile_lint.analysis.project.dispatch_spellings import PATTERN, RETURNED_ALIAS, TABLE_ENTRY
from compile_lint.analysis.project.summary import MODULE_SCOPE

if TYPE_CHECKING:
    from compile_lint.analysis.project.callgraph import CallGraph, Target

ENTRY = "entry:"  # the kind prefix of a table's value: "entry:class", "entry:function", "entry:instance"
MAX_MATCHES = 16
_PATTERNS: dict[str, "re.Pattern[str]"] = {}


def table_values(targets: Iterable["Target"]) -> list["Target"]:
    """The targets of a table's values, marked as values (calling the table itself runs none of them)."""
    return [(ENTRY + kind, path, qualname) for kind, path, qualname in targets if not kind.startswith(ENTRY)]


def element_targets(targets: Iterable["Target"]) -> list["Target"]:
    """What an element of a container is: a module of an `nn.ModuleList` (an instance), any value of a table."""
    found: list["Target"] = []
    for kind, path, qualname in targets:
        if kind == "elements":
            found.append(("instance", path, qualname))
        elif kind.startswith(ENTRY):
            found.append((kind[len(ENTRY):], path, qualname))
    return found


def matching(names: Iterable[str], pattern: str) -> list[str]:
    """The names a `getattr` pattern (`_reduce_*`) matches, sorted; [pattern] itself when it is a plain name."""
    if PATTERN not in pattern:
        return [pattern] if pattern in names else []
    compiled = _PATTERNS.get(pattern)
    if compiled is None:
        compiled = _PATTERNS[pattern] = re.compile(fnmatch.translate(pattern))
    return sorted(name for name in names if compiled.match(name))


def pattern_attribute(graph: "CallGraph", kind: str, path: str, qualname: str, pattern: str) -> list["Target"]:
    """The attributes of a class, an instance or a module whose names match `pattern` (none past MAX_MATCHES)."""
    found: list["Target"] = []
    if kind in ("class", "instance"):
        names: set[str] = set()
        for cls_path, cls_name in graph.mro(path, qualname):
            info = graph.cls(cls_path, cls_name)
            if info is not None:
                names.update(info.methods)
        for name in matching(names, pattern):
            method = graph.method(path, qualname, name)
            if method is not None:
                found.append(("function", *method))
    elif kind == "module":
        summary = graph.summaries.get(path)
        if summary is not None:
            functions = [name for name in summary.functions if "." not in name and name != MODULE_SCOPE]
            found += [("function", path, name) for name in matching(functions, pattern)]
            found += [("class", path, name) for name in matching(summary.classes, pattern) if "." not in name]
    return found if len(found) <= MAX_MATCHES else []


def class_table(graph: "CallGraph", path: str, qualname: str, name: str) -> list["Target"]:
    """The values of a table the class (or the nearest base that binds it) keeps as a class attribute `name`."""
    for cls_path, cls_name in graph.mro(path, qualname):
        info = graph.cls(cls_path, cls_name)
        if info is None or name not in info.makers:
            continue
        found: list["Target"] = []
        for binding in info.makers[name]:
            if binding.class_attribute:
                for spelling in binding.spellings:
                    if spelling.startswith(TABLE_ENTRY):
                        found.extend(graph.resolve(cls_path, None, spelling))
        return found
    return []


def returned_targets(graph: "CallGraph", path: str, qualname: str, depth: int) -> list["Target"]:
    """What calling the result of function `qualname` runs, when it returns a dispatch (`RETURNED_ALIAS`):
    `reduction = self.get_reduction_func(kind); reduction(x)` -> the `*_reduction` methods of the
    class, its bases and (the dispatch being on `self`) its subclasses."""
    function = graph.function((path, qualname))
    if function is None or RETURNED_ALIAS not in function.aliases:
        return []
    found: list["Target"] = []
    for spelling in function.aliases[RETURNED_ALIAS]:
        found += graph.resolve(path, function, spelling, depth + 1)
        head, _, name = spelling.partition(".")
        if head == "self" and name and "." not in name and function.owner:
            found += [("function", *key) for key in graph.overrides(path, function.owner, name)]
    return found

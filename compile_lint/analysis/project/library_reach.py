"""The traced set inside installed libraries: how far the walk goes into them, and which user call leads where.

`reach.py` walks the call graph breadth first; once the graph follows names into installed
libraries (`CallGraph.follow_libraries`, `libraries.py`), a call from traced project code
into a library is followed with the same rules (the library's own calls, classes and
bases), bounded: at most `DEPTH` calls deep into a library from the user's call, and at
most `FUNCTION_BUDGET` library functions per project, so that a call into a huge library
cannot explode. The walk is breadth first from sorted entry points, so the bound cuts the
same functions on every run.

For each call of a project file into a library (`LibraryCall`), the library functions it
reaches, each with the calls that lead there from the user's call (`LibraryFunction.via`):
a break the engine finds in one of them is reported at the user's call, which the user can
edit, with the chain into the library. An installed module with no Python source is noted
once (`notes`), with the first traced call into it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Optional

from compile_lint.analysis.project.callgraph import CallGraph, Key
from compile_lint.analysis.project.libraries import LibraryIndex
from compile_lint.analysis.project.summary import CallSite, FunctionInfo

DEPTH = 12  # library calls deep, counting the user's call into it
FUNCTION_BUDGET = 1500  # library functions reached per project


@dataclass(frozen=True)
class LibraryFunction:
    """A library function a user's call reaches, and how."""

    path: str  # absolute
    qualname: str
    first_line: int  # its span, decorators included
    end_line: int
    package: str  # the distribution's name and version, and the path as the package spells it
    version: str
    shown_path: str
    # The calls inside the library from the function the user calls to this one: (path as
    # the package spells it, line, calling function); empty for the function called.
    via: tuple[tuple[str, int, str], ...] = ()


@dataclass(frozen=True)
class LibraryCall:
    """A traced call of a project file into a library: where, the callee as spelled, what it reaches."""

    function: str  # the calling function's qualname
    line: int
    callee: str
    reached: tuple[LibraryFunction, ...]


class LibraryWalk:
    """What the traced set's walk may follow into libraries, and what it followed."""

    def __init__(self, graph: CallGraph, libraries: LibraryIndex) -> None:
        self.graph = graph
        self.libraries = libraries
        self.depth: dict[Key, int] = {}  # library function -> calls deep from the nearest user call
        self.cut = 0  # library calls not followed (deeper than DEPTH, or over the budget)
        self._entries: dict[str, list[tuple[str, int, str, Key]]] = {}  # project file -> its calls into libraries
        self._edges: dict[Key, list[tuple[Key, int]]] = {}  # library function -> (callee, line) it calls
        # module without source -> (path, line) of the first traced call into it
        self.notes: dict[str, tuple[str, int]] = {}

    def is_library(self, key: Key) -> bool:
        """Whether `key` is a library function (its file an installed library's)."""
        return key[0] in self.libraries.files

    def admits(self, caller: Key, target: Key, call: CallSite) -> bool:
        """Whether the walk follows `call` of `caller` to `target` (a project function: always)."""
        if not self.is_library(target):
            return True
        from_project = not self.is_library(caller)
        depth = 1 if from_project else self.depth.get(caller, DEPTH) + 1
        if depth > DEPTH or (target not in self.depth and len(self.depth) >= FUNCTION_BUDGET):
            self.cut += 1
            return False
        if depth < self.depth.get(target, DEPTH + 1):
            self.depth[target] = depth
        if from_project:
            self._entries.setdefault(caller[0], []).append((caller[1], call.line, call.callee, target))
        else:
            self._edges.setdefault(caller, []).append((target, call.line))
        return True

    def unresolved(self, key: Key, call: CallSite) -> None:
        """A traced call that named nothing the graph knows: note a library without Python source it calls."""
        summary = self.graph.summaries.get(key[0])
        if summary is None or call.callee.split(".")[0] not in summary.imports:
            return
        qualified = summary.qualify(call.callee)
        if qualified.startswith("."):
            return
        module = self.libraries.no_source(qualified)
        if module is not None and module not in self.notes:
            self.notes[module] = (key[0], call.line)

    def calls_from(self, path: str) -> tuple[LibraryCall, ...]:
        """The traced calls of project file `path` into libraries, each with the library functions it reaches."""
        grouped: dict[tuple[str, int, str], list[Key]] = {}
        for function, line, callee, target in self._entries.get(path, ()):
            targets = grouped.setdefault((function, line, callee), [])
            if target not in targets:
                targets.append(target)
        return tuple(
            LibraryCall(function, line, callee, self._reached(targets, self._receivers(path, function, callee)))
            for (function, line, callee), targets in sorted(grouped.items()))

    def _receivers(self, path: str, function: str, callee: str) -> tuple[Key, ...]:
        """The classes of the library objects a user's call calls (`loss_func(...)`: its class), if it names any."""
        scope = self.graph.function((path, function))
        return tuple(sorted({(file, qualname) for kind, file, qualname in self.graph.resolve(path, scope, callee)
                             if kind == "instance"}))

    def _other_class(self, caller: Key, callee: Key, receivers: tuple[Key, ...]) -> bool:
        """Whether `callee` overrides, in a subclass, a method of the user's object's class that `caller` is
        a method of, but the object is of no such subclass: `pair_miner(...)` does not run the mine() of
        another miner class the project also makes (`CallGraph.overrides` joins them for the traced set)."""
        made, base = self.graph.function(callee), self.graph.function(caller)
        if not receivers or made is None or base is None or not made.owner or not base.owner:
            return False
        owner, base_class = (callee[0], made.owner), (caller[0], base.owner)
        if owner == base_class or base_class not in self.graph.mro(*owner)[1:]:
            return False
        orders = [self.graph.mro(*receiver) for receiver in receivers]
        return any(base_class in order for order in orders) and not any(owner in order for order in orders)

    def _reached(self, targets: list[Key], receivers: tuple[Key, ...] = ()) -> tuple[LibraryFunction, ...]:
        """Breadth first from the functions a call runs, over the library's own calls: each with its chain."""
        via: dict[Key, tuple[tuple[str, int, str], ...]] = {target: () for target in targets}
        pending = deque(targets)
        while pending:
            key = pending.popleft()
            for callee, line in self._edges.get(key, ()):
                if callee not in via and not self._other_class(key, callee, receivers):
                    via[callee] = via[key] + ((self._shown(key[0]), line, key[1]),)
                    pending.append(callee)
        found = []
        for key, chain in via.items():
            function = self.graph.function(key)
            distribution = self.libraries.files.get(key[0])
            if function is None or distribution is None:
                continue
            found.append(_library_function(key, function, distribution.name, distribution.version,
                                           distribution.relative(key[0]), chain))
        return tuple(found)

    def _shown(self, path: str) -> str:
        distribution = self.libraries.files.get(path)
        return distribution.relative(path) if distribution is not None else path


def _library_function(key: Key, function: FunctionInfo, package: str, version: str, shown: str,
                      via: tuple[tuple[str, int, str], ...]) -> LibraryFunction:
    return LibraryFunction(key[0], key[1], function.first_line, function.end_line, package, version, shown, via)


def instantiated_classes(graph: CallGraph) -> tuple[Key, ...]:
    """The installed libraries' classes the project's files make objects of, sorted: at module level
    (`loss_func = losses.TripletMarginLoss(...)`), in a function, or as `self.x = lib.Cls(...)`.

    A base class's method in the library calling `self.compute_loss()` runs the override of the
    object's class (`CallGraph.overrides`). Only spellings whose head the file imports from an
    installed module are resolved, so a project that makes no library object resolves nothing.
    """
    libraries = graph.libraries
    if libraries is None:
        return ()
    found: set[Key] = set()
    for path in graph.project_files:
        summary = graph.summaries[path]
        spellings = [spelling for binding in summary.aliases.values() for spelling in binding.spellings]
        spellings += [spelling for cls in summary.classes.values() for bindings in cls.makers.values()
                      for binding in bindings for spelling in binding.spellings]
        spellings += [spelling for function in summary.functions.values() for made in function.aliases.values()
                      for spelling in made]
        for spelling in sorted(set(spellings)):
            head = summary.imports.get(spelling.split(".", 1)[0].split("(", 1)[0], ".")
            if not spelling.endswith("()") or head.startswith(".") or head.split(".")[0] in libraries.skipped:
                continue
            found.update((file, qualname) for kind, file, qualname in graph.resolve(path, None, spelling)
                         if kind == "instance" and file in libraries.files)
    return tuple(sorted(found))


def library_notes(walk: Optional[LibraryWalk]) -> tuple[tuple[str, str, int], ...]:
    """(module, path, line) of each installed module without Python source that traced code calls, sorted."""
    if walk is None:
        return ()
    return tuple(sorted((module, path, line) for module, (path, line) in walk.notes.items()))

"""The traced set of a project: what its entry points reach, in any file, and through which calls.

From every entry point (`entry_points.py`) the call graph (`callgraph.py`) is followed
breadth first, skipping calls in eager-only branches and functions Dynamo never traces
(`@torch.compiler.disable`, custom-op bodies). Each reached function keeps the shortest
chain of calls that reaches it (from the entry point's call to the helper's caller: a
finding in it ends "(reached from pkg/model.py:42 in Net.forward)") and what its traced
callers pass to each parameter, joined over every call (`values.py`): "tensor" when every
caller passes a tensor (an untyped parameter of an entry point, by the same default as
`forward`'s own parameters; a torch call; an element of one; what a helper returns for
one), "py" when every caller passes a literal or a size (a caller's local by the bindings
that precede the call, outside loops: `h = gate(h)` passes the earlier `h`); anything else
stays unknown.

`project_reach` keeps one answer per project in the process, re-checked against the
files' stats (new files are found through the directories' stats), so the CLI, flake8
and the language server ask the same question and get the same answer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from compile_lint.analysis.project.callgraph import CallGraph, Key
from compile_lint.analysis.project.decorators import decorator_wrappers
from compile_lint.analysis.project.entry_points import configured, entry_points, is_disabled
from compile_lint.analysis.project.index import IndexStore
from compile_lint.analysis.project.libraries import LibraryIndex, installation_folders
from compile_lint.analysis.project.library_reach import LibraryCall, LibraryWalk, instantiated_classes, library_notes
from compile_lint.analysis.project.modules import ModuleResolver, package_root
from compile_lint.analysis.project.summary import CallSite, FileSummary
from compile_lint.analysis.project.symbols import SymbolIndex
from compile_lint.analysis.project.values import ValueHints
from compile_lint.storage.stamps import stamps as _stamps
from compile_lint.storage.walk import PROJECT_INDEX, python_files


@dataclass(frozen=True)
class Link:
    """One call of a chain: the file, the line of the call, the calling function's qualified name."""

    path: str
    line: int
    function: str


@dataclass(frozen=True)
class Reached:
    """A function the entry points reach: the chain of calls to it, and what its callers pass."""

    qualname: str
    chain: tuple[Link, ...]  # () for an entry point
    entry: bool
    hints: tuple[tuple[str, str], ...] = ()  # (parameter, "tensor" | "py")
    # (parameter, file, line, argument as spelled) of a call from another file that passes a
    # tensor to a parameter hinted "tensor": what a finding resting on the parameter names.
    evidence: tuple[tuple[str, str, int, str], ...] = ()


@dataclass(frozen=True)
class FileReach:
    """What of one file the project's entry points reach, and a digest of it (lint cache keys take it)."""

    path: str
    functions: dict[str, Reached] = field(default_factory=dict)
    digest: str = ""
    project: Optional["ProjectReach | StoredReach"] = field(default=None, compare=False, repr=False)
    # (calling function, callee as spelled) of the file's traced calls of another file's
    # `@torch.compiler.disable` function, or of a parameter a traced caller passes one to: an
    # intended break at the call (JIT611).
    disabled_calls: frozenset[tuple[str, str]] = frozenset()
    # The file's traced calls into installed libraries, with what each reaches there (library_reach.py).
    library_calls: tuple[LibraryCall, ...] = ()

    def reaches(self, path: str, qualname: str) -> bool:
        """Whether the project's entry points reach function `qualname` of file `path` (then it is linted there)."""
        return self.project is not None and (os.path.abspath(path), qualname) in self.project.reached


class ProjectReach:
    """The traced set of one project."""

    def __init__(self, graph: CallGraph, entries: dict[Key, Optional[tuple[str, int]]],
                 libraries: Optional[LibraryIndex] = None) -> None:
        self.graph = graph
        self.entries = entries
        # Calls into installed libraries are followed (bounded) when `libraries` is given.
        self.library: Optional[LibraryWalk] = None
        if libraries is not None:
            graph.follow_libraries(libraries)
            graph.instantiated = instantiated_classes(graph)
            self.library = LibraryWalk(graph, libraries)
        self.parents: dict[Key, tuple[Key, int]] = {}
        self.sites: dict[Key, list[tuple[Key, CallSite]]] = {}
        self.reached: set[Key] = set()
        # file -> (calling function, callee as spelled) of traced calls of another file's disabled function
        self.disabled_calls: dict[str, set[tuple[str, str]]] = {}
        self._decorators: dict = {}  # (file, decorator) -> its wrappers (decorators.py)
        self.values = ValueHints(graph, lambda key: key in self.entries and not self.sites.get(key),
                                 lambda key: self.sites.get(key, []))
        self._files: dict[str, FileReach] = {}
        self._by_file: Optional[dict[str, list[Key]]] = None
        self._walk()

    def _walk(self) -> None:
        # torch.cond branches are entry points of their own only when no traced code reaches
        # them (a cond called eagerly): walked last, so that a traced caller gives them a chain.
        first = sorted(key for key, where in self.entries.items() if not (where and len(where) > 2))
        self._from(first)
        self._from(sorted(key for key in self.entries if key not in self.reached))

    def _from(self, entries: list[Key]) -> None:
        graph = self.graph
        pending = deque(entries)
        self.reached.update(pending)
        while pending:
            key = pending.popleft()
            function = graph.function(key)
            if function is None:
                continue
            # A call of a decorated function runs the decorator's wrapper first, from the same call.
            for wrapper in decorator_wrappers(graph, key, self._decorators):
                if wrapper not in self.reached and not is_disabled(graph, wrapper):
                    self.reached.add(wrapper)
                    self.parents[wrapper] = self.parents.get(key, (key, function.line))
                    pending.append(wrapper)
            for call in function.calls:
                if call.eager:
                    continue
                targets = graph.call_targets(key, function, call)
                if not targets and self.library is not None:
                    self.library.unresolved(key, call)
                for target, caller, site in targets:
                    if is_disabled(graph, target):
                        if graph.function(target) is None:
                            continue
                        if caller != key:
                            if site.eager:
                                continue
                            # Passed as a value (`apply(host_fn, x)`): the callee's call of its
                            # parameter is the disabled call, where Dynamo breaks.
                            self.disabled_calls.setdefault(caller[0], set()).add((caller[1], site.callee))
                        elif target[0] != key[0]:
                            self.disabled_calls.setdefault(key[0], set()).add((key[1], call.callee))
                        continue
                    if target == key or (self.library is not None and not self.library.admits(key, target, call)):
                        continue
                    self.sites.setdefault(target, []).append((caller, site))
                    if target in self.entries and target not in self.parents and target[0] != key[0]:
                        self.parents[target] = (key, call.line)  # an entry point that other code reaches too
                    if target not in self.reached:
                        self.reached.add(target)
                        self.parents[target] = (key, call.line)
                        pending.append(target)

    def chain(self, key: Key) -> tuple[Link, ...]:
        links: list[Link] = []
        seen = {key}
        while key in self.parents:
            caller, line = self.parents[key]
            if caller in seen:
                break
            seen.add(caller)
            links.append(Link(caller[0], line, caller[1]))
            key = caller
        return tuple(reversed(links))

    def hint(self, key: Key, name: str) -> Optional[str]:
        """"tensor", "py" or None: what every traced call of `key` passes to its parameter `name` (`values.py`)."""
        return self.values.parameter(key, name)

    def for_file(self, path: str) -> FileReach:
        """The reached functions of file `path` (absolute), with their chains and parameter hints."""
        path = os.path.abspath(path)
        cached = self._files.get(path)
        if cached is not None:
            return cached
        if self._by_file is None:
            self._by_file = {}
            for key in self.reached:
                self._by_file.setdefault(key[0], []).append(key)
        functions: dict[str, Reached] = {}
        for key in sorted(self._by_file.get(path, ())):
            function = self.graph.function(key)
            if function is None:
                continue
            hints = tuple((name, hint) for name, _, _ in function.params
                          if (hint := self.hint(key, name)) is not None)
            evidence = tuple((name, *found) for name, hint in hints
                             if hint == "tensor" and (found := self.values.evidence(key, name)) is not None)
            functions[key[1]] = Reached(key[1], self.chain(key), key in self.entries and not self.sites.get(key), hints,
                                        evidence)
        library_calls = self.library.calls_from(path) if self.library is not None else ()
        result = self._files[path] = _file_reach(path, functions, frozenset(self.disabled_calls.get(path, ())), self,
                                                 library_calls)
        return result

    @property
    def library_files(self) -> tuple[str, ...]:
        """The installed libraries' files the traced set reaches into, sorted."""
        return tuple(sorted(self.library.libraries.files)) if self.library is not None else ()

    @property
    def library_notes(self) -> tuple[tuple[str, str, int], ...]:
        """(module, path, line of the first traced call) of each installed module without Python source called."""
        return library_notes(self.library)


def _file_reach(path: str, functions: dict[str, Reached], disabled: frozenset[tuple[str, str]],
                project: "ProjectReach | StoredReach", library_calls: tuple[LibraryCall, ...] = ()) -> FileReach:
    """One file's answer, with the digest the lint cache keys its findings on."""
    facts: tuple = (sorted(functions.items()), sorted(disabled))
    if library_calls:
        facts += (library_calls,)
    digest = hashlib.blake2b(repr(facts).encode(), digest_size=16).hexdigest()
    return FileReach(path, functions, digest, project, disabled, library_calls)


class StoredReach:
    """A project's traced set as an earlier run found it, from the index cache (every summary unchanged).

    It answers what `ProjectReach` answers the engine (`for_file`, `reached`) without
    building the call graph again: a cached run of an unchanged project does no resolution.
    """

    def __init__(self, reached: frozenset, files: dict[str, FileReach],
                 library_notes: tuple[tuple[str, str, int], ...] = ()) -> None:
        self.reached = reached
        self._files = {path: dataclasses.replace(answer, project=self) for path, answer in files.items()}
        self.library_notes = library_notes

    def for_file(self, path: str) -> FileReach:
        """The reached functions of file `path`, as `ProjectReach.for_file` gave them."""
        path = os.path.abspath(path)
        found = self._files.get(path)
        if found is None:
            found = self._files[path] = _file_reach(path, {}, frozenset(), self)
        return found


def _stored_answer(reach: ProjectReach, paths: Iterable[str]) -> tuple[frozenset, dict[str, FileReach], tuple]:
    """What `StoredReach` needs of `reach`: the traced set, every file's answer (unbound from the graph;
    the library files it reaches too) and the notes on libraries without source."""
    paths = list(paths) + list(reach.library_files)
    return (frozenset(reach.reached), {path: dataclasses.replace(reach.for_file(path), project=None) for path in paths},
            reach.library_notes)


def project_root(config_root: str, config_source: Optional[str], path: str) -> tuple[str, bool]:
    """The directory whose files make `path`'s project, and whether to walk it recursively.

    The config file's directory when `path` lies under it; else the top package `path` is
    part of; else `path`'s own directory (its files only).
    """
    absolute = os.path.abspath(path)
    if config_source:
        root = os.path.abspath(config_root)
        if absolute == root or absolute.startswith(root + os.sep):
            return root, True
    directory = os.path.dirname(absolute)
    if os.path.isfile(os.path.join(directory, "__init__.py")):
        top = package_root(absolute)
        relative = os.path.relpath(directory, top).split(os.sep)[0]
        return os.path.join(top, relative), True
    return directory, False


@dataclass
class _Memo:
    stamps: dict[str, tuple[int, int]]
    reach: "Optional[ProjectReach | StoredReach]"
    error: Optional[str]


_MEMOS: dict[tuple, _Memo] = {}


def _directories(root: str, files: Iterable[str]) -> set[str]:
    return {root} | {os.path.dirname(path) for path in files}


def project_reach(
    root: str, recursive: bool, symbols: SymbolIndex, *, module_bases: Iterable[str] = (),
    configured_entries: Iterable[str] = (), config_root: str = ".", cache_dir: Optional[str] = None,
    map_function: Optional[Callable] = None, excluded: Callable[[str], bool] = lambda path: False,
    frozen: bool = False, libraries: Optional[Callable[[str], LibraryIndex]] = None,
) -> "ProjectReach | StoredReach":
    """The traced set of the project in `root`; raises `EntryPointError` for an unknown `entry-points` target.

    With `frozen`, a project already answered in this process is not re-checked (a CLI
    worker, forked after the run's index was built). With `libraries` (the project root ->
    its `LibraryIndex`), calls into installed libraries are followed too (library_reach.py).
    """
    key = (root, recursive, tuple(module_bases), tuple(configured_entries), os.path.abspath(config_root),
           libraries is not None, symbols.modules.roots)
    memo = _MEMOS.get(key)
    if memo is not None and frozen:
        return _answer(memo)
    if memo is not None and _stamps(memo.stamps) == memo.stamps:
        return _answer(memo)
    files = python_files(root, PROJECT_INDEX, excluded) if recursive else sorted(
        os.path.join(root, name) for name in _listdir(root) if name.endswith(".py"))
    store = IndexStore(os.path.join(cache_dir, "project-index", hashlib.blake2b(
        f"{root}\0{recursive}".encode(), digest_size=10).hexdigest() + ".pickle") if cache_dir else None)
    # Installing or removing a package changes where imports resolve: the stored answer rests on its folders too.
    environment = tuple(sorted(_stamps(installation_folders()).items())) if libraries is not None else ()
    unchanged = store.unchanged_answer(files, lambda digests: _answer_key(key + environment, digests))
    if unchanged is not None:
        # Every file as the last run found it: its traced set, without loading a summary. The
        # files' stamps were just checked; only the directories are stat'ed for the memo.
        stamped, stored = unchanged
        stamps = {path: stamp for path, (stamp, _) in stamped.items()} | _stamps(_directories(root, stamped))
        if libraries is not None:
            stamps |= _stamps(installation_folders())
        memo = _MEMOS[key] = _Memo(stamps, StoredReach(*stored), None)  # type: ignore[misc]
        return _answer(memo)
    summaries = store.summaries(files, map_function)
    if not recursive:
        _imported_closure(root, summaries, store, symbols.modules)
    symbols.adopt({path: store.entries[path] for path in summaries})
    graph = CallGraph(summaries, symbols.modules, module_bases)
    error = None
    reach: Optional[ProjectReach] = None
    try:
        keys = configured(graph, configured_entries, config_root)
    except ValueError as problem:
        error, keys = str(problem), []
    library_index = libraries(root) if libraries is not None else None
    if error is None:
        reach = ProjectReach(graph, entry_points(graph, keys), library_index)
        if store.cache_file is not None:
            library_files = library_index.stamps() if library_index is not None else {}
            digests = {path: summary.digest for path, summary in summaries.items()}
            digests.update((path, digest) for path, (_, digest) in library_files.items())
            store.keep_answer(_answer_key(key + environment, digests), list(summaries),
                              _stored_answer(reach, summaries), library_files)
    store.save()
    watched = set(summaries) | _directories(root, summaries)
    if library_index is not None:
        library_index.save()
        watched |= set(library_index.files) | set(installation_folders())
    memo = _MEMOS[key] = _Memo(_stamps(watched), reach, error)
    return _answer(memo)


def _answer_key(key: tuple, digests: dict[str, str]) -> str:
    """What a stored answer depends on: the question, every project file's bytes (path -> digest),
    where imports resolve."""
    return hashlib.blake2b(repr((key, sorted(digests.items()), sys.path)).encode(), digest_size=16).hexdigest()


def _answer(memo: _Memo) -> "ProjectReach | StoredReach":
    if memo.error is not None:
        from compile_lint.analysis.project.entry_points import EntryPointError

        raise EntryPointError(memo.error)
    assert memo.reach is not None
    return memo.reach


def _listdir(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _imported_closure(root: str, summaries: dict[str, FileSummary], store: IndexStore,
                      modules: ModuleResolver) -> None:
    """Add the files under `root` that the summarised files import (a package below a loose script)."""
    pending = list(summaries)
    while pending:
        path = pending.pop()
        for qualified in summaries[path].imports.values():
            file, _ = modules.module_file(qualified, path)
            if file is None:
                continue
            file = os.path.abspath(file)
            if file in summaries or not file.startswith(root + os.sep) or not file.endswith(".py"):
                continue
            found = store.summaries([file])
            if file in found:
                summaries[file] = found[file]
                pending.append(file)

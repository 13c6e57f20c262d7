"""The traced set of a project: what its entry points reach, in any file, and through which calls.

From every entry point (`entry_points.py`) the call graph (`callgraph.py`) is followed
breadth first, skipping calls in eager-only branches and functions Dynamo never traces
(`@torch.compiler.disable`, custom-op bodies). Each reached function keeps the shortest
chain of calls that reaches it (from the entry point's call to the helper's caller: a
finding in it ends "(reached from model.py:42 in Net.forward)") and what its traced
callers pass to each parameter, joined over every call: "tensor" when every caller passes
an untyped parameter of an entry point (a tensor by the same default as `forward`'s own
parameters, never by evidence), "py" when every caller passes a literal or a size;
anything else stays unknown.

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

from compile_lint.analysis.project.callgraph import CallGraph, Key, passed
from compile_lint.analysis.project.entry_points import configured, entry_points, is_disabled
from compile_lint.analysis.project.index import IndexStore
from compile_lint.analysis.project.modules import ModuleResolver, package_root
from compile_lint.analysis.project.summary import LOCAL, PARAM, PY, TENSOR, CallSite, FileSummary
from compile_lint.analysis.project.symbols import SymbolIndex
from compile_lint.storage.stamps import stamps as _stamps
from compile_lint.storage.walk import PROJECT_INDEX, python_files

TENSOR_HINT, PY_HINT = "tensor", "py"


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


@dataclass(frozen=True)
class FileReach:
    """What of one file the project's entry points reach, and a digest of it (lint cache keys take it)."""

    path: str
    functions: dict[str, Reached] = field(default_factory=dict)
    digest: str = ""
    project: Optional["ProjectReach | StoredReach"] = field(default=None, compare=False, repr=False)
    # (calling function, callee as spelled) of the file's traced calls of another file's
    # `@torch.compiler.disable` function: an intended break at the call (JIT611).
    disabled_calls: frozenset[tuple[str, str]] = frozenset()

    def reaches(self, path: str, qualname: str) -> bool:
        """Whether the project's entry points reach function `qualname` of file `path` (then it is linted there)."""
        return self.project is not None and (os.path.abspath(path), qualname) in self.project.reached


class ProjectReach:
    """The traced set of one project."""

    def __init__(self, graph: CallGraph, entries: dict[Key, Optional[tuple[str, int]]]) -> None:
        self.graph = graph
        self.entries = entries
        self.parents: dict[Key, tuple[Key, int]] = {}
        self.sites: dict[Key, list[tuple[Key, CallSite]]] = {}
        self.reached: set[Key] = set()
        # file -> (calling function, callee as spelled) of traced calls of another file's disabled function
        self.disabled_calls: dict[str, set[tuple[str, str]]] = {}
        self._hints: dict[tuple[Key, str], Optional[str]] = {}
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
            for call in function.calls:
                if call.eager:
                    continue
                for target, caller, site in graph.call_targets(key, function, call):
                    if is_disabled(graph, target):
                        if graph.function(target) is not None and target[0] != key[0]:
                            self.disabled_calls.setdefault(key[0], set()).add((key[1], call.callee))
                        continue
                    if target == key:
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

    def hint(self, key: Key, name: str, depth: int = 0) -> Optional[str]:
        """"tensor", "py" or None: what every traced call of `key` passes to its parameter `name`."""
        memo = (key, name)
        if memo in self._hints:
            return self._hints[memo]
        self._hints[memo] = None  # a cycle guard
        function = self.graph.function(key)
        result: Optional[str] = None
        if function is not None:
            declared = {param: (annotated, default) for param, annotated, default in function.params}
            if key in self.entries and not self.sites.get(key):
                if name in declared and not declared[name][0] and name not in ("self", "cls"):
                    result = TENSOR_HINT  # the "untyped forward parameter is a tensor" default
            elif depth < 20:
                kinds: set[Optional[str]] = set()
                for caller, call in self.sites.get(key, []):
                    pairs = dict((param, arg) for arg, param in passed(function, call))
                    arg = pairs.get(name)
                    if arg is None:
                        if getattr(call, "starred", False):
                            kinds.add(None)
                        continue
                    kinds.add(self._tag_hint(caller, arg.tag if arg.tag != LOCAL else f"local:{arg.spelling}",
                                             depth, set()) if arg.tag != PARAM else
                              # an argument tagged PARAM is a parameter's name: spelled, never None
                              self.hint(caller, arg.spelling, depth + 1))  # type: ignore[arg-type]
                result = kinds.pop() if len(kinds) == 1 else None
        self._hints[memo] = result
        return result

    def _tag_hint(self, caller: Key, tag: str, depth: int, seen: set) -> Optional[str]:
        """The hint a value of `caller` passes, from its tag: a tensor by syntax, a Python value,
        a parameter, a local."""
        if tag == PY:
            return PY_HINT
        if tag == TENSOR:
            return TENSOR_HINT
        kind, _, name = tag.partition(":")
        if kind == "param":
            return self.hint(caller, name, depth + 1)
        if kind == "local" and name not in seen:
            function = self.graph.function(caller)
            tags = function.local_tags.get(name, ()) if function is not None else ()
            hints = {self._tag_hint(caller, inner, depth, seen | {name}) for inner in tags}
            return hints.pop() if len(hints) == 1 else None
        return None

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
            functions[key[1]] = Reached(key[1], self.chain(key), key in self.entries and not self.sites.get(key), hints)
        result = self._files[path] = _file_reach(path, functions, frozenset(self.disabled_calls.get(path, ())), self)
        return result


def _file_reach(path: str, functions: dict[str, Reached], disabled: frozenset[tuple[str, str]],
                project: "ProjectReach | StoredReach") -> FileReach:
    """One file's answer, with the digest the lint cache keys its findings on."""
    digest = hashlib.blake2b(repr((sorted(functions.items()), sorted(disabled))).encode(),
                             digest_size=16).hexdigest()
    return FileReach(path, functions, digest, project, disabled)


class StoredReach:
    """A project's traced set as an earlier run found it, from the index cache (every summary unchanged).

    It answers what `ProjectReach` answers the engine (`for_file`, `reached`) without
    building the call graph again: a cached run of an unchanged project does no resolution.
    """

    def __init__(self, reached: frozenset, files: dict[str, FileReach]) -> None:
        self.reached = reached
        self._files = {path: dataclasses.replace(answer, project=self) for path, answer in files.items()}

    def for_file(self, path: str) -> FileReach:
        """The reached functions of file `path`, as `ProjectReach.for_file` gave them."""
        path = os.path.abspath(path)
        found = self._files.get(path)
        if found is None:
            found = self._files[path] = _file_reach(path, {}, frozenset(), self)
        return found


def _stored_answer(reach: ProjectReach, paths: Iterable[str]) -> tuple[frozenset, dict[str, FileReach]]:
    """What `StoredReach` needs of `reach`: the traced set and every file's answer (unbound from the graph)."""
    return frozenset(reach.reached), {path: dataclasses.replace(reach.for_file(path), project=None) for path in paths}


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
    frozen: bool = False,
) -> "ProjectReach | StoredReach":
    """The traced set of the project in `root`; raises `EntryPointError` for an unknown `entry-points` target.

    With `frozen`, a project already answered in this process is not re-checked (a CLI
    worker, forked after the run's index was built).
    """
    key = (root, recursive, tuple(module_bases), tuple(configured_entries), os.path.abspath(config_root))
    memo = _MEMOS.get(key)
    if memo is not None and frozen:
        return _answer(memo)
    if memo is not None and _stamps(memo.stamps) == memo.stamps:
        return _answer(memo)
    files = python_files(root, PROJECT_INDEX, excluded) if recursive else sorted(
        os.path.join(root, name) for name in _listdir(root) if name.endswith(".py"))
    store = IndexStore(os.path.join(cache_dir, "project-index", hashlib.blake2b(
        f"{root}\0{recursive}".encode(), digest_size=10).hexdigest() + ".pickle") if cache_dir else None)
    unchanged = store.unchanged_answer(files, lambda digests: _answer_key(key, digests))
    if unchanged is not None:
        # Every file as the last run found it: its traced set, without loading a summary. The
        # files' stamps were just checked; only the directories are stat'ed for the memo.
        stamped, stored = unchanged
        stamps = {path: stamp for path, (stamp, _) in stamped.items()} | _stamps(_directories(root, stamped))
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
    if error is None:
        reach = ProjectReach(graph, entry_points(graph, keys))
        if store.cache_file is not None:
            answer_key = _answer_key(key, {path: summary.digest for path, summary in summaries.items()})
            store.keep_answer(answer_key, list(summaries), _stored_answer(reach, summaries))
    store.save()
    watched = set(summaries) | _directories(root, summaries)
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

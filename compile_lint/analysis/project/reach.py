"""The traced set of a project: what its entry points reach, in any file, and through which calls.

The program model (analysis/model/) evaluates the project's files, and the installed
libraries they call into, to a fixed point; its traced set (`model/traced.py`) is what
the entry points reach through calls Dynamo inlines, leaving out eager-only branches,
branches a constant decides, disabled functions and functions registered to stay out of
the trace. Each reached function keeps the shortest chain of calls that reaches it (a
finding in it ends "(reached from pkg/model.py:42 in Net.forward)"), what its traced
callers pass to each parameter, joined over every traced call ("tensor" when every one is
a tensor, "py" when every one is a Python constant or size), the calls from other files
that make a parameter a tensor, and the branches no traced run of it takes.

`project_reach` keeps one answer per project in the process, re-checked against the
files' stats (new files are found through the directories' stats), so the CLI, flake8
and the language server ask the same question and get the same answer; on disk, the
answer is kept with the digests of every file it rests on (`IndexStore`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from compile_lint.analysis.model.build import build_model
from compile_lint.analysis.model.program import Model
from compile_lint.analysis.model.sites import CallAnswer, CallSite, call_answers, stable_text
from compile_lint.analysis.model.traced import TracedSet, chain, parameter_hint, traced_set, untraced_branches
from compile_lint.analysis.model.values import ClassV
from compile_lint.analysis.project.entry_points import configured
from compile_lint.analysis.project.index import IndexStore
from compile_lint.analysis.project.libraries import LibraryIndex, installation_folders
from compile_lint.analysis.project.library_reach import LibraryCall, library_calls, library_notes
from compile_lint.analysis.project.modules import package_root
from compile_lint.analysis.project.symbols import SymbolIndex
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
    hints: tuple[tuple[str, str], ...] = ()  # (parameter, "tensor" | "py" | "other")
    # (parameter, file, line, argument as spelled) of a call from another file that passes a
    # tensor to a parameter hinted "tensor": what a finding resting on the parameter names.
    evidence: tuple[tuple[str, str, int, str], ...] = ()
    # (first, last) lines of the branches no traced run of it takes (a constant decides their test).
    untraced: tuple[tuple[int, int], ...] = ()
    # Parameters of a compiled function that every call of it the program makes leaves at their default:
    # Dynamo compiles the default in once, no call brings another value.
    defaulted: tuple[str, ...] = ()


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
    # The qualified names of the file's nn.Module classes (bases followed across files and into libraries), and
    # of its mixins whose every subclass in the project is one (their instances are modules).
    module_classes: tuple[str, ...] = ()
    # Whether the program model made this answer (then it is the whole traced set of the file, roots included).
    modelled: bool = True
    # The traced calls of the file that run functions of other files: what the model found of each (sites.py).
    calls: dict[CallSite, CallAnswer] = field(default_factory=dict)
    # (calling function, callee as spelled, cause, callee's file, callee's line) of the file's traced calls of
    # an `allow_in_graph` function that needs tensor data (cause "item": `.item()` and the like, "branch": a
    # tensor `if`): the graph breaks at the call.
    allowed_breaks: frozenset[tuple[str, str, str, str, int]] = frozenset()

    def reaches(self, path: str, qualname: str) -> bool:
        """Whether the project's entry points reach function `qualname` of file `path` (then it is linted there)."""
        return self.project is not None and (os.path.abspath(path), qualname) in self.project.reached

    def call_returns(self, line: int, column: int, spelled: str) -> Optional[frozenset]:
        """The values the call at `line`, `column` (UTF-8 bytes, as `ast` counts) spelled `spelled` returns,
        joined over the contexts the model evaluated its callees in; None when the model has no answer (not
        a traced call of plain functions of other files)."""
        answer = self.calls.get((line, column, spelled))
        return answer.returns if answer is not None else None

    def helpers_reading_item(self, line: int, column: int, spelled: str) -> tuple[tuple[str, str, int], ...]:
        """(path, qualified name, `def` line) of each function of another file that the call at `line`, `column`
        spelled `spelled` runs and that reads tensor data with `.item()` on a tensor on every run."""
        answer = self.calls.get((line, column, spelled))
        return answer.reads_item if answer is not None else ()


class ProjectReach:
    """The traced set of one project, from its program model."""

    def __init__(self, model: Model, libraries: Optional[LibraryIndex] = None) -> None:
        self.model = model
        self.libraries = libraries
        self.traced: TracedSet = traced_set(model, follow_libraries=libraries is not None)
        self._by_file: dict[str, dict[str, list]] = {}
        for key, nodes in self.traced.functions().items():
            self._by_file.setdefault(key[0], {})[key[1]] = nodes
        self.reached = {(path, qualname) for path, functions in self._by_file.items() for qualname in functions}
        # file -> (calling function, callee as spelled) of traced calls of a disabled function
        self.disabled_calls: dict[str, set[tuple[str, str]]] = {}
        for path, function, spelled in self.traced.disabled_calls:
            self.disabled_calls.setdefault(path, set()).add((function, spelled))
        self.allowed_breaks: dict[str, set[tuple[str, str, str, str, int]]] = {}
        for path, function, spelled, cause, callee in self.traced.allowed_breaks:
            scope = model.scope(callee)
            line = scope.node.lineno if scope is not None and hasattr(scope.node, "lineno") else 0
            self.allowed_breaks.setdefault(path, set()).add((function, spelled, cause, callee[0], line))
        self._library_calls = library_calls(model, self.traced, libraries) if libraries is not None else {}
        self._files: dict[str, FileReach] = {}
        self._mixins: Optional[set[tuple[str, str]]] = None

    def for_file(self, path: str) -> FileReach:
        """The reached functions of file `path` (absolute), with their chains and parameter hints."""
        path = os.path.abspath(path)
        cached = self._files.get(path)
        if cached is not None:
            return cached
        functions: dict[str, Reached] = {}
        model, traced = self.model, self.traced
        for qualname, nodes in sorted(self._by_file.get(path, {}).items()):
            scope = model.scope((path, qualname))
            if scope is None or scope.function is None:
                continue
            # The chain of a call that reaches it (the shortest); () for an entry nothing calls.
            called = [chain(model, traced, node) for node in nodes if node in traced.parents]
            shortest = min(called, key=lambda links: (len(links), links)) if called else ()
            links = tuple(Link(*link) for link in shortest)
            # An entry: compiled, or a module's forward no traced code calls (a forward that traced code
            # calls is reached through that call: its findings name it).
            entry = any(node in traced.entries and (traced.entries[node] is not None or node not in traced.parents)
                        for node in nodes)
            names = [argument.arg for argument in (*scope.function.args.posonlyargs, *scope.function.args.args,
                                                   *scope.function.args.kwonlyargs)]
            hints = tuple((name, hint) for name in names if (hint := parameter_hint(model, nodes, name)) is not None)
            evidence = tuple((name, *sorted(model.passes[((path, qualname), name)])[0])
                             for name, hint in hints if hint == "tensor" and ((path, qualname), name) in model.passes)
            defaulted = tuple(name for name in names if _left_at_default(model, nodes, (path, qualname), name))
            functions[qualname] = Reached(qualname, links, entry, hints, evidence, untraced_branches(model, nodes),
                                          defaulted)
        module = model.modules.get(path)
        mixins = self._module_mixins()
        classes = tuple(sorted(qualname for qualname in (module.scopes.classes if module is not None else ())
                               if model.is_module_class((path, qualname)) or (path, qualname) in mixins))
        calls = call_answers(model, path, [node for nodes in self._by_file.get(path, {}).values() for node in nodes])
        result = self._files[path] = _file_reach(path, functions, frozenset(self.disabled_calls.get(path, ())), self,
                                                 self._library_calls.get(path, ()), classes,
                                                 frozenset(self.allowed_breaks.get(path, ())), calls)
        return result

    def _module_mixins(self) -> set[tuple[str, str]]:
        """Classes of the project that are no nn.Module but whose every subclass in the project is one (a
        `GenerationMixin`): their instances are modules (`self(ids)` in them runs forward)."""
        if self._mixins is None:
            model = self.model
            subclasses: dict[tuple[str, str], list[bool]] = {}
            for path in model.project_files:
                module = model.modules.get(path)
                for qualname in (module.scopes.classes if module is not None else ()):
                    is_module = model.is_module_class((path, qualname))
                    for base in model.mro((path, qualname))[1:]:
                        if isinstance(base, ClassV) and not model.is_module_class(base.key):
                            subclasses.setdefault(base.key, []).append(is_module)
            self._mixins = {key for key, found in subclasses.items() if found and all(found)
                            and not _is_library(model, key[0])}
        return self._mixins

    @property
    def library_files(self) -> tuple[str, ...]:
        """The installed libraries' files the traced set reaches into, sorted."""
        return tuple(sorted(path for path in self._by_file if (module := self.model.modules.get(path)) is not None
                            and module.library)) if self.libraries is not None else ()

    @property
    def library_notes(self) -> tuple[tuple[str, str, int], ...]:
        """(module, path, line of the first traced call) of each installed module without Python source called."""
        return library_notes(self.model, self.traced, self.libraries) if self.libraries is not None else ()


def _left_at_default(model: Model, nodes: list, key: tuple[str, str], name: str) -> bool:
    """Whether parameter `name` of function `key`, compiled by the program (`torch.compile(obj.generate)`, no
    module's forward whose callers are unseen), holds its default at every call the model saw of it."""
    registered = [node for node in nodes if node in model.entries]
    called = [node for node in nodes if node not in model.entries]
    default = model.heap.peek(("d", key, name))
    if not registered or not called or not default or any(model.entries[node] is None for node in registered):
        return False
    return all(model.heap.peek(("p", node, name)) and model.heap.peek(("p", node, name)) <= default
               for node in called)


def _file_reach(path: str, functions: dict[str, Reached], disabled: frozenset[tuple[str, str]],
                project: "ProjectReach | StoredReach", library_calls: tuple[LibraryCall, ...] = (),
                module_classes: tuple[str, ...] = (),
                allowed_breaks: frozenset[tuple[str, str, str, str, int]] = frozenset(),
                calls: Optional[dict[CallSite, CallAnswer]] = None) -> FileReach:
    """One file's answer, with the digest the lint cache keys its findings on."""
    facts: tuple = (sorted(functions.items()), sorted(disabled), module_classes)
    if library_calls:
        facts += (library_calls,)
    if allowed_breaks:
        facts += (sorted(allowed_breaks),)
    if calls:
        facts += (stable_text(calls),)
    digest = hashlib.blake2b(repr(facts).encode(), digest_size=16).hexdigest()
    return FileReach(path, functions, digest, project, disabled, library_calls, module_classes,
                     allowed_breaks=allowed_breaks, calls=calls or {})


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
    frozen: bool = False, libraries: Optional[Callable[[str], LibraryIndex]] = None, fresh: bool = False,
    sources: Optional[dict[str, str]] = None,
) -> "ProjectReach | StoredReach":
    """The traced set of the project in `root`; raises `EntryPointError` for an unknown `entry-points` target.

    With `frozen`, a project already answered in this process is not re-checked (a CLI
    worker, forked after the run's index was built); `fresh` builds the model even when an
    answer is kept (in the process or on disk), for a caller that wants the model itself. With
    `libraries` (the project root -> its `LibraryIndex`), calls into installed libraries are
    followed too (library_reach.py). `sources` (path -> text) are files whose unsaved text replaces
    theirs on disk (an editor's buffers): such an answer is neither kept nor taken from what is kept.
    """
    if sources:
        return _unsaved_reach(root, recursive, symbols, module_bases, configured_entries, config_root, excluded,
                              libraries, sources)
    key = (root, recursive, tuple(module_bases), tuple(configured_entries), os.path.abspath(config_root),
           libraries is not None, symbols.modules.roots)
    memo = _MEMOS.get(key) if not fresh else None
    if memo is not None and frozen:
        return _answer(memo)
    if memo is not None and _stamps(memo.stamps) == memo.stamps:
        return _answer(memo)
    files = _project_files(root, recursive, excluded)
    store = IndexStore(os.path.join(cache_dir, "project-index", hashlib.blake2b(
        f"{root}\0{recursive}".encode(), digest_size=10).hexdigest() + ".pickle") if cache_dir else None)
    # Installing or removing a package changes where imports resolve: the stored answer rests on its folders too.
    environment = tuple(sorted(_stamps(installation_folders()).items())) if libraries is not None else ()
    unchanged = None if fresh else store.unchanged_answer(files, lambda digests: _answer_key(key + environment,
                                                                                            digests))
    if unchanged is not None:
        # Every file as the last run found it: its traced set, without evaluating anything. The
        # files' stamps were just checked; only the directories are stat'ed for the memo.
        stamped, stored = unchanged
        stamps = {path: stamp for path, (stamp, _) in stamped.items()} | _stamps(_directories(root, stamped))
        if libraries is not None:
            stamps |= _stamps(installation_folders())
        memo = _MEMOS[key] = _Memo(stamps, StoredReach(*stored), None)  # type: ignore[misc]
        return _answer(memo)
    library_index = libraries(root) if libraries is not None else None
    model = _project_model(root, files, symbols, module_bases, library_index)
    reach: Optional[ProjectReach] = None
    error = _add_configured(model, configured_entries, config_root)
    if error is None:
        reach = ProjectReach(model, library_index)
        if store.cache_file is not None:
            read = [path for path, module in model.modules.items() if module is not None]
            digests = store.digests(read)
            project = [path for path in read if path in set(files) or not _is_library(model, path)]
            store.keep_answer(_answer_key(key + environment, {path: digests[path] for path in project}), project,
                              _stored_answer(reach, files), {path: (store.stamp(path), digests[path])
                                                             for path in read if path not in set(project)})
    store.save()
    watched = set(files) | _directories(root, files) | {path for path, module in model.modules.items()
                                                          if module is not None}
    if library_index is not None:
        watched |= set(installation_folders())
    memo = _MEMOS[key] = _Memo(_stamps(watched), reach, error)
    return _answer(memo)


def _project_files(root: str, recursive: bool, excluded: Callable[[str], bool]) -> list[str]:
    """The project's files: every file under a package root with the scripts beside it, or a directory's own."""
    if not recursive:
        return sorted(os.path.join(root, name) for name in _listdir(root) if name.endswith(".py"))
    return python_files(root, PROJECT_INDEX, excluded) + scripts_beside(root, excluded)


def _project_model(root: str, files: list[str], symbols: SymbolIndex, module_bases: Iterable[str],
                   library_index: Optional[LibraryIndex], sources: Optional[dict[str, str]] = None) -> Model:
    """The solved program model of the project's `files` (calls into libraries followed with `library_index`)."""
    model = build_model(files, root, resolver=symbols.modules, module_bases=module_bases,
                        is_library=_library_test(root, library_index),
                        skipped_modules=library_index.skipped if library_index is not None else (), sources=sources)
    if library_index is not None:
        index = library_index
        model.follows = lambda path: index.distribution(path) is not None
    return model


def _unsaved_reach(root: str, recursive: bool, symbols: SymbolIndex, module_bases: Iterable[str],
                   configured_entries: Iterable[str], config_root: str, excluded: Callable[[str], bool],
                   libraries: Optional[Callable[[str], LibraryIndex]], sources: dict[str, str]) -> ProjectReach:
    """`project_reach`'s answer with `sources` replacing the files' texts on disk, built afresh (a source
    of the project not saved yet is one of its files)."""
    files = _project_files(root, recursive, excluded)
    listed = set(files)
    files += sorted(path for path in map(os.path.abspath, sources) if path not in listed and not excluded(path)
                    and (path.startswith(os.path.join(root, "")) if recursive else os.path.dirname(path) == root))
    library_index = libraries(root) if libraries is not None else None
    model = _project_model(root, files, symbols, module_bases, library_index, sources)
    error = _add_configured(model, configured_entries, config_root)
    if error is not None:
        from compile_lint.analysis.project.entry_points import EntryPointError

        raise EntryPointError(error)
    return ProjectReach(model, library_index)


def _add_configured(model: Model, configured_entries: Iterable[str], config_root: str) -> Optional[str]:
    """Make the `entry-points` setting's targets entries of `model`; what is wrong with the setting, if anything."""
    try:
        keys = configured(model, configured_entries, config_root)
    except ValueError as problem:
        return str(problem)
    if keys:
        from compile_lint.analysis.model.entries import configured_entries as add_configured

        add_configured(model, keys)
        model.solve()
    return None


def scripts_beside(root: str, excluded: Callable[[str], bool] = lambda path: False) -> list[str]:
    """The scripts next to package `root` (`train.py` beside `pkg/`): they import it, and what they compile,
    and the switches they flip before compiling, are the program's too. None beside an installation folder's
    package, nor beside a directory that is no package."""
    parent = os.path.dirname(os.path.abspath(root))
    if not os.path.isfile(os.path.join(root, "__init__.py")) or os.path.basename(parent) in _INSTALLATION_FOLDERS:
        return []
    return sorted(path for name in _listdir(parent) if name.endswith(".py")
                  and os.path.isfile(path := os.path.join(parent, name)) and not excluded(path))


_INSTALLATION_FOLDERS = frozenset({"site-packages", "dist-packages"})


def _library_test(root: str, libraries: Optional[LibraryIndex]) -> Callable[[str], bool]:
    """Which files are installed libraries': those a distribution claims, else any file outside the project."""
    inside = os.path.abspath(root) + os.sep

    def is_library(path: str) -> bool:
        if libraries is not None and libraries.distribution(path) is not None:
            return True
        return not os.path.abspath(path).startswith(inside)

    return is_library


def _is_library(model: Model, path: str) -> bool:
    module = model.modules.get(path)
    return module is not None and module.library


def file_alone(path: str, text: str, resolver, module_bases: Iterable[str] = ()) -> FileReach:
    """The traced set of one file linted without its project (a project of one file): the same model,
    with what the file's imports name read as needed; its calls into libraries are not followed."""
    path = os.path.abspath(path)
    root = package_root(path)
    inside = root + os.sep

    def is_library(candidate: str) -> bool:
        return not os.path.abspath(candidate).startswith(inside)

    model = build_model([path], root, resolver=resolver, module_bases=module_bases, is_library=is_library,
                        sources={path: text})
    return ProjectReach(model).for_file(path)


def buffer_alone(path: str, text: str, resolver, module_bases: Iterable[str] = ()) -> FileReach:
    """The traced set of `text` as file `path` with no other file read (not even what its imports name):
    what an editor shows at once while the project's answer is being built, at the cost of this one file."""
    path = os.path.abspath(path)
    model = build_model([path], package_root(path), resolver=resolver, module_bases=module_bases,
                        is_library=lambda candidate: os.path.abspath(candidate) != path, follow_libraries=False,
                        sources={path: text})
    return ProjectReach(model).for_file(path)


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

"""The project a file belongs to, for the engine: its symbol index and, when asked, what its entry points reach.

What a lint reads is explicit. Without a `ProjectIndex`, a lint reads the file and, lazily,
what its imports name (base classes, helpers: `symbol_index`). With one, it also reads the
whole project the file belongs to, once, to learn which of the file's functions the
project's entry points reach. The CLI, the flake8 plugin and the language server each pass
one, so that they agree on every file's findings; a library caller passes one when it
wants those findings too.

No parser is imported here beyond `ast`: a run answered from the cache asks for reach
digests without loading libcst or the rules.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Callable, Optional, Sequence

from compile_lint.analysis.project.entry_points import EntryPointError
from compile_lint.analysis.project.libraries import LibraryIndex
from compile_lint.analysis.project.reach import FileReach, ProjectReach, StoredReach, project_reach, project_root
from compile_lint.analysis.project.symbols import SymbolIndex
from compile_lint.engine.cache import user_cache_dir
from compile_lint.engine.files import is_excluded
from compile_lint.rules.support.torch_tables import SKIPPED_THIRD_PARTY_MODULES
from compile_lint.settings.config import Config

_SYMBOL_INDEXES: dict[tuple[str, ...], SymbolIndex] = {}


def symbol_index(config: Config) -> SymbolIndex:
    """This process's index of other files' classes and functions, for `config`'s project.

    Absolute imports are looked up in each file's own package root, then the `src`
    setting's directories (default: the project's root and its `src/`), then `sys.path`.
    The index re-reads files that change, so one per project serves a long-lived process
    (the language server) too.
    """
    root = os.path.abspath(config.root)
    sources = [os.path.join(root, path) for path in config.src] or [root, os.path.join(root, "src")]
    roots = tuple(os.path.normpath(path) for path in sources if os.path.isdir(path))
    index = _SYMBOL_INDEXES.get(roots)
    if index is None:
        index = _SYMBOL_INDEXES[roots] = SymbolIndex(roots)
    return index


class ProjectIndex:
    """The project index: which functions of a file the entry points of the file's project reach.

    A file's project is the config file's directory when the file lies under it; without
    one, the top package the file belongs to, or the file's directory (its files, plus the
    files below it they import). Each project is indexed on the first question about it
    (`ast` summaries of every file, analysis/project/), then re-checked against the files'
    stats on each question, until `prepare` makes the answers final for the run (make a
    new one for the next run, as the CLI's --watch does).

    The index is kept on disk in `cache_dir`; without one, in `.compile-lint-cache/` beside
    the project's config file (nowhere without a config file). `keep=False` neither reads
    nor writes it (`--no-cache`).
    """

    def __init__(self, cache_dir: Optional[str] = None, *, keep: bool = True, libraries: bool = True) -> None:
        self.cache_dir = cache_dir
        self.keep = keep
        self.libraries = libraries  # follow traced calls into installed libraries
        self.frozen = False  # prepared: the answers are final for this process and its forked workers

    def _cache_dir(self, config: Config) -> Optional[str]:
        if not self.keep:
            return None
        if self.cache_dir is not None:
            return self.cache_dir
        if config.source:  # next to the project's config file, as the lint cache is
            return os.path.join(os.path.abspath(config.root), ".compile-lint-cache")
        return None

    def _libraries(self, config: Config) -> Optional[Callable[[str], LibraryIndex]]:
        """How a project's `LibraryIndex` is made: its summaries kept with the project index, else in the
        user's cache directory (nowhere with `keep=False`)."""
        if not self.libraries:
            return None
        cache_dir = self._cache_dir(config) or (user_cache_dir() if self.keep else None)
        return lambda root: LibraryIndex(root, cache_dir, SKIPPED_THIRD_PARTY_MODULES)

    def _project_reach(self, config: Config, root: str, recursive: bool,
                       map_function=None, sources: Optional[dict[str, str]] = None) -> "ProjectReach | StoredReach":
        below = dataclasses.replace(config, root=root)
        in_config_project = bool(config.source) and root == os.path.abspath(config.root)
        return project_reach(
            root, recursive, symbol_index(config), module_bases=config.module_bases,
            configured_entries=config.entry_points if in_config_project else (),
            config_root=config.root, cache_dir=self._cache_dir(config), map_function=map_function,
            frozen=self.frozen,
            # Excludes apply below the project's root: a package linted inside a virtualenv is read.
            excluded=lambda candidate: is_excluded(candidate, below), libraries=self._libraries(config),
            sources=sources,
        )

    def reach(self, config: Config, path: str, map_function=None, strict: bool = False,
              sources: Optional[dict[str, str]] = None) -> Optional[FileReach]:
        """What the entry points of `path`'s project reach in `path` (see analysis.project.reach).

        An unknown `entry-points` target raises `EntryPointError` with `strict`; otherwise
        the file is linted without the project's reach (None). `sources` (path -> text) replace
        the texts on disk of the files named (an editor's unsaved buffers; the answer is built afresh).
        """
        # A file named explicitly but excluded from its project (a package inside the virtualenv)
        # has its own package for a project.
        root, recursive = _project_of(config, path)
        try:
            reach = self._project_reach(config, root, recursive, map_function, sources)
        except EntryPointError:
            if strict:
                raise
            return None
        return reach.for_file(path)

    def model_reach(self, config: Config, path: str) -> Optional[ProjectReach]:
        """The traced set of `path`'s project with its program model, built afresh (never a stored answer):
        what `compile-lint graph` shows. None when an `entry-points` target names nothing."""
        root, recursive = _project_of(config, path)
        below = dataclasses.replace(config, root=root)
        in_config_project = bool(config.source) and root == os.path.abspath(config.root)
        try:
            reach = project_reach(
                root, recursive, symbol_index(config), module_bases=config.module_bases,
                configured_entries=config.entry_points if in_config_project else (), config_root=config.root,
                cache_dir=None, excluded=lambda candidate: is_excluded(candidate, below),
                libraries=self._libraries(config), fresh=True)
        except EntryPointError:
            return None
        return reach if isinstance(reach, ProjectReach) else None

    def reached(self, config: Config, path: str) -> bool:
        """Whether the project's entry points reach a function of `path` (then it is linted, torch or not)."""
        reach = self.reach(config, path)
        return reach is not None and bool(reach.functions)

    def digest(self, config: Config, path: str) -> str:
        """A digest of what reaches `path` from the project (the lint cache keys a file's findings on it)."""
        reach = self.reach(config, path)
        return reach.digest if reach is not None and reach.functions else ""

    def library_notes(self, config: Config, paths: Sequence[str]) -> list[tuple[str, str, int]]:
        """(module, path, line of the first traced call) of each installed module without Python source
        that the traced code of `paths`' projects calls, once each, sorted."""
        notes: dict[str, tuple[str, str, int]] = {}
        for root in dict.fromkeys(_project_of(config, path) for path in paths):
            try:
                reach = self._project_reach(config, *root)
            except EntryPointError:
                continue
            for module, path, line in reach.library_notes:
                notes.setdefault(module, (module, path, line))
        return sorted(notes.values())

    def prepare(self, config: Config, paths: Sequence[str], map_function=None) -> None:
        """Index every project `paths` belong to, once, before workers fork; the answers are then final.

        Raises `EntryPointError` for an unknown `entry-points` target. `map_function(function,
        items)` summarises many files at once (the CLI's pool of workers).
        """
        self.frozen = False
        seen = set()
        for path in paths:
            root = _project_of(config, path)
            if root not in seen:
                seen.add(root)
                self.reach(config, path, map_function, strict=True)
        self.frozen = True


def _project_of(config: Config, path: str) -> tuple[str, bool]:
    root, recursive = project_root(config.root, config.source, path)
    if is_excluded(path, dataclasses.replace(config, root=root)):
        return project_root(config.root, None, path)
    return root, recursive

"""The project a file belongs to, for the engine: its symbol index and what its entry points reach.

No parser is imported here beyond `ast`: a run answered from the cache asks for reach
digests without loading libcst or the rules.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Optional, Sequence

from compile_lint.analysis.project.entry_points import EntryPointError
from compile_lint.analysis.project.reach import FileReach, project_reach, project_root
from compile_lint.analysis.project.symbols import SymbolIndex
from compile_lint.settings.config import Config

_SYMBOL_INDEXES: dict[tuple[str, ...], SymbolIndex] = {}


def symbol_index(config: Config) -> SymbolIndex:
    """This process's index of other files' classes and functions, for `config`'s project.

    Absolute imports are looked up in each file's own package root, then the project's
    root and its `src/`, then `sys.path`. The index re-reads files that change, so one
    per project serves a long-lived process (the language server) too.
    """
    root = os.path.abspath(config.root)
    roots = tuple(path for path in (root, os.path.join(root, "src")) if os.path.isdir(path))
    index = _SYMBOL_INDEXES.get(roots)
    if index is None:
        index = _SYMBOL_INDEXES[roots] = SymbolIndex(roots)
    return index


# The project index's disk cache for this process (set by a run that has a lint cache), and
# whether the projects already answered are final for the process (forked CLI workers).
# `--no-cache` sets None: no index is written either.
_INDEX_CACHE: dict[str, object] = {"frozen": False}


def _index_cache_dir(config: Config) -> Optional[str]:
    if "dir" in _INDEX_CACHE:
        return _INDEX_CACHE["dir"]  # type: ignore[return-value]
    if config.source:  # next to the project's config file, as the lint cache is
        return os.path.join(os.path.abspath(config.root), ".compile-lint-cache")
    return None


def file_reach(config: Config, path: str, map_function=None, strict: bool = False) -> Optional[FileReach]:
    """What the entry points of `path`'s project reach in `path` (see analysis.project.reach).

    The project is the config file's directory when `path` lies under it, else the top
    package `path` belongs to, else its directory. An unknown `entry-points` target raises
    `EntryPointError` with `strict`; otherwise the file is linted without the project's reach.
    """
    # A file named explicitly but excluded from its project (a package inside the virtualenv)
    # has its own package for a project.
    root, recursive = _project_of(config, path)
    below = dataclasses.replace(config, root=root)
    in_config_project = bool(config.source) and root == os.path.abspath(config.root)
    try:
        reach = project_reach(
            root, recursive, symbol_index(config), module_bases=config.module_bases,
            configured_entries=config.entry_points if in_config_project else (),
            config_root=config.root, cache_dir=_index_cache_dir(config), map_function=map_function,
            frozen=bool(_INDEX_CACHE["frozen"]),
            # Excludes apply below the project's root: a package linted inside a virtualenv is read.
            excluded=lambda candidate: is_excluded_path(candidate, below),
        )
    except EntryPointError:
        if strict:
            raise
        return None
    return reach.for_file(path)


def prepare_project(paths: Sequence[str], config: Config, cache_dir: Optional[str], map_function=None) -> None:
    """Build the project index of every project `paths` belong to, once, before workers fork.

    Raises `EntryPointError` for an unknown `entry-points` target. Afterwards the answers
    are final for this process and its workers (`frozen`).
    """
    _INDEX_CACHE["dir"] = cache_dir
    _INDEX_CACHE["frozen"] = False  # a run again in this process (--watch) re-checks the files
    seen = set()
    for path in paths:
        root = _project_of(config, path)
        if root not in seen:
            seen.add(root)
            file_reach(config, path, map_function, strict=True)
    _INDEX_CACHE["frozen"] = True


def _project_of(config: Config, path: str) -> tuple[str, bool]:
    root, recursive = project_root(config.root, config.source, path)
    if is_excluded_path(path, dataclasses.replace(config, root=root)):
        return project_root(config.root, None, path)
    return root, recursive


def reach_digest(config: Config, path: str) -> str:
    """A digest of what reaches `path` from the project (the lint cache keys a file's findings on it)."""
    reach = file_reach(config, path)
    return reach.digest if reach is not None and reach.functions else ""


def is_excluded_path(path: str, config: Config) -> bool:
    from compile_lint.engine.files import is_excluded

    return is_excluded(path, config)


def _link_path(path: str) -> str:
    """A chain link's file: relative to the working directory when under it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative



"""Installed packages that traced code calls into: which distribution holds a file, and its summary, on demand.

Dynamo traces an installed library's Python code as it traces the project's, so the call
graph follows calls into it (`library_reach.py`). A file is a *library file* when it lies
outside the project, inside a top-level package (or module) that a distribution's metadata
(`NAME-VERSION.dist-info`, or an `.egg-info`) beside it claims: the layout of
site-packages, and of any folder on `sys.path` that packages were installed into. Such
folders are found through the same `ModuleResolver` that finds project modules
(`modules.py`: `sys.path` through importlib's path finders, which locate files and run
nothing); nothing is imported. torch, numpy, the standard library, compile-lint itself and
the third-party modules Dynamo never traces (its `THIRDPARTY_SKIPLIST`, passed in) stay
unread.

A library file is summarised (`summariser.py`, `ast` only) when the traced set first
reaches it, never the whole package, and its summary is kept on disk per distribution and
version (`library-index/NAME-VERSION-*.pickle` in the cache directory, through the same
`IndexStore` as the project's files): a warm run reads nothing again, and a new version is
a new store. At most `FILE_BUDGET` library files are read per project, so a call into a
huge library cannot make the index explode.

A module that is installed but has no Python source (a C extension) is named by
`no_source`, so the caller can say once that calls into it are not followed.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import re
import sys
from dataclasses import dataclass
from typing import Iterable, Optional

from compile_lint.analysis.project.index import IndexStore
from compile_lint.analysis.project.modules import NEVER_READ, STDLIB
from compile_lint.analysis.project.summary import FileSummary

FILE_BUDGET = 300  # library files read per project
_METADATA_SUFFIXES = (".dist-info", ".egg-info")
_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)
_INSTALLED = frozenset({"site-packages", "dist-packages"})  # the folders packages are installed into


@dataclass(frozen=True)
class Distribution:
    """An installed distribution: its name and version (from its metadata) and the folder it is installed in."""

    name: str
    version: str
    location: str

    def relative(self, path: str) -> str:
        """`path` as the package spells it (`somelib/_impl/steps.py`), for messages."""
        return os.path.relpath(path, self.location).replace(os.sep, "/")

    @property
    def label(self) -> str:
        """`somelib 1.2.0`."""
        return f"{self.name} {self.version}"


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


class LibraryIndex:
    """The installed libraries one project's traced code reaches, for one process.

    `project_root`'s files are never library files. `cache_dir` keeps the summaries (None:
    nowhere). `skipped` are top-level modules never read (Dynamo's skip list).
    """

    def __init__(self, project_root: str, cache_dir: Optional[str], skipped: Iterable[str] = ()) -> None:
        self.project_root = os.path.abspath(project_root)
        self.cache_dir = cache_dir
        self.skipped = frozenset(skipped) | NEVER_READ | STDLIB | {"compile_lint"}
        self.files: dict[str, Distribution] = {}  # every library file read -> its distribution
        self.summarised = 0  # library files summarised from source (not from the store) by this index
        self._in_folder: dict[str, dict[str, Distribution]] = {}
        self._of_directory: dict[str, Optional[Distribution]] = {}
        self._stores: dict[Distribution, IndexStore] = {}
        self._no_source: dict[str, Optional[str]] = {}

    # ----- which distribution -----
    def distribution(self, path: str) -> Optional[Distribution]:
        """The distribution an installed library file belongs to; None for any other file."""
        path = os.path.abspath(path)
        if path.startswith(self.project_root + os.sep) and not _INSTALLED.intersection(
                os.path.relpath(path, self.project_root).split(os.sep)):
            return None  # the project's own file (a virtualenv inside the project is not the project)
        directory = os.path.dirname(path)
        if directory not in self._of_directory:
            self._of_directory[directory] = self._find_distribution(path)
        return self._of_directory[directory]

    def _find_distribution(self, path: str) -> Optional[Distribution]:
        """The distribution whose metadata, in a folder above `path`, claims the top-level module `path` is in."""
        directory = os.path.dirname(path)
        while True:
            top = os.path.relpath(path, directory).split(os.sep)[0]
            top = top[:-3] if top.endswith(".py") else top
            found = self._distributions(directory).get(top)
            if found is not None:
                return None if top in self.skipped else found
            parent = os.path.dirname(directory)
            if parent == directory:
                return None
            directory = parent

    def _distributions(self, folder: str) -> dict[str, Distribution]:
        """Top-level module name -> the distribution that claims it, for the metadata in `folder`."""
        known = self._in_folder.get(folder)
        if known is not None:
            return known
        table: dict[str, Distribution] = {}
        try:
            names = sorted(name for name in os.listdir(folder) if name.endswith(_METADATA_SUFFIXES))
        except OSError:
            names = []
        for name in names:
            distribution = _read_metadata(folder, name)
            if distribution is None:
                continue
            for top in _top_levels(folder, name, distribution.name):
                table.setdefault(top, distribution)
        self._in_folder[folder] = table
        return table

    # ----- summaries -----
    def summary(self, path: str) -> Optional[FileSummary]:
        """The summary of library file `path` (from its distribution's store while unchanged); None for a
        file that is no library file, cannot be read, or is over the budget."""
        path = os.path.abspath(path)
        distribution = self.distribution(path)
        if distribution is None or not path.endswith(".py"):
            return None
        if path not in self.files and len(self.files) >= FILE_BUDGET:
            return None
        store = self._store(distribution)
        kept = store.entries.get(path)
        found = store.summaries([path]).get(path)
        if found is None:
            return None
        self.summarised += kept is None or kept[1] is not found
        self.files[path] = distribution
        return found

    def _store(self, distribution: Distribution) -> IndexStore:
        store = self._stores.get(distribution)
        if store is None:
            cache_file = None
            if self.cache_dir is not None:
                where = hashlib.blake2b(distribution.location.encode(), digest_size=6).hexdigest()
                cache_file = os.path.join(self.cache_dir, "library-index",
                                          f"{_normalised(distribution.name)}-{distribution.version}-{where}.pickle")
            store = self._stores[distribution] = IndexStore(cache_file)
        return store

    def stamps(self) -> dict[str, tuple[tuple[int, int], str]]:
        """Path -> (stat stamp, digest) of every library file read: what an answer resting on them checks."""
        found = {}
        for path, distribution in self.files.items():
            entry = self._stores[distribution].entries.get(path)
            if entry is not None:
                found[path] = (entry[0], entry[1].digest)
        return found

    def save(self) -> None:
        """Write the stores that changed (atomically; silent when they cannot be written)."""
        for store in self._stores.values():
            store.save()

    # ----- modules without source -----
    def no_source(self, qualified: str) -> Optional[str]:
        """The installed module of `qualified` (`fastlib`, `somelib._C`) that has no Python source
        (a C extension, compiled only), or None (it has source, is not installed, or is never read)."""
        parts = qualified.split(".")
        if not parts[0] or parts[0] in self.skipped:
            return None
        if qualified not in self._no_source:
            self._no_source[qualified] = _without_source(parts)
        return self._no_source[qualified]


def installation_folders() -> tuple[str, ...]:
    """The folders of `sys.path` that packages are installed into (site-packages): installing or
    removing a package changes their stamps."""
    return tuple(dict.fromkeys(os.path.abspath(entry) for entry in sys.path
                               if entry and os.path.basename(os.path.normpath(entry)) in _INSTALLED
                               and os.path.isdir(entry)))


def _read_metadata(folder: str, name: str) -> Optional[Distribution]:
    """The distribution a `NAME-VERSION.dist-info` (or `.egg-info`) folder describes."""
    stem = name.rsplit(".", 1)[0]
    dist_name, _, version = stem.partition("-")
    version = version.split("-")[0]
    if not version:  # `name.egg-info`: the version is in its PKG-INFO
        version = _metadata_field(os.path.join(folder, name, "PKG-INFO"), "Version") or "0"
    return Distribution(dist_name, version, folder) if dist_name else None


def _metadata_field(path: str, field: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    break  # the headers end at the first blank line
                key, _, value = line.partition(":")
                if key.strip().lower() == field.lower():
                    return value.strip()
    except OSError:
        return None
    return None


def _top_levels(folder: str, name: str, dist_name: str) -> list[str]:
    """The top-level modules a distribution installs: its top_level.txt, else its RECORD, else its name."""
    metadata = os.path.join(folder, name)
    try:
        with open(os.path.join(metadata, "top_level.txt"), encoding="utf-8") as handle:
            listed = [line.strip() for line in handle if line.strip()]
        if listed:
            return listed
    except OSError:
        pass
    tops: list[str] = []
    try:
        with open(os.path.join(metadata, "RECORD"), encoding="utf-8") as handle:
            for line in handle:
                head = line.split(",", 1)[0].split("/", 1)
                top = head[0][:-3] if head[0].endswith(".py") and len(head) == 1 else head[0]
                if (top and top not in tops and not top.endswith(_METADATA_SUFFIXES)
                        and top not in ("..", "__pycache__")):
                    tops.append(top)
    except OSError:
        pass
    return tops or [_normalised(dist_name)]


def _without_source(parts: list[str]) -> Optional[str]:
    """The dotted name of the first module along `parts` that is installed only as an extension module."""
    try:
        spec = importlib.machinery.PathFinder.find_spec(parts[0])
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or ())
    origin = spec.origin if spec.has_location else None
    if not locations:
        return parts[0] if origin is not None and origin.endswith(_EXTENSION_SUFFIXES) else None
    directory = locations[0]
    for index, part in enumerate(parts[1:], 1):
        candidate = os.path.join(directory, part)
        if os.path.isdir(candidate):
            directory = candidate
            continue
        if os.path.isfile(candidate + ".py"):
            return None
        if any(os.path.isfile(candidate + suffix) for suffix in _EXTENSION_SUFFIXES):
            return ".".join(parts[:index + 1])
        return None
    return None

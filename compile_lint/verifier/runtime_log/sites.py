"""Where each logged break or recompile belongs in the project, and the records grouped by it.

A break's site is the innermost frame of its user stack that lies in the project (DESIGN.md,
"Labelling real code"): a break inside an installed library is reported at the user's call
into it, with the library's frames kept beside it. A file lies in the project when it is
under one of the project's roots and, below that root, neither excluded by the configuration
(`.venv`, `build`...) nor in a `site-packages` / `dist-packages` directory (a virtualenv by
another name).
Records of the same site and reason (the graph-break type; for a recompile, the failed
guard with its numbers left out: `self.calls == 0` and `self.calls == 1` are one trap) are
one group with a count.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from compile_lint.engine.files import is_excluded
from compile_lint.settings.config import Config
from compile_lint.verifier.runtime_log.records import Frame, GraphBreakRecord, RecompileRecord, Record

_INSTALLED = ("site-packages", "dist-packages")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")
_STDLIB = re.compile(r"[\\/]lib[\\/]python\d+\.\d+[\\/]")


class Project:
    """The roots whose files are the user's code; everything else is a library."""

    def __init__(self, roots: Sequence[str], config: Config) -> None:
        self.roots = tuple(os.path.abspath(root) for root in roots)
        self.config = config
        self._answers: dict[str, bool] = {}
        self._configs: dict[str, Config] = {}

    def contains(self, path: str) -> bool:
        """Whether a frame's file is project code (a relative path is taken from the working directory)."""
        answer = self._answers.get(path)
        if answer is None:
            answer = self._answers[path] = self._decide(path)
        return answer

    def _decide(self, path: str) -> bool:
        if not path or path.startswith("<"):  # <string>, <frozen ...>, <eval_with_key>
            return False
        absolute = os.path.abspath(path)
        return any(self._below(absolute, root) for root in self.roots)

    def _below(self, absolute: str, root: str) -> bool:
        """Under `root` and, below it, in no installed-packages or excluded directory (what lies
        above the root does not count: `--project .venv/.../site-packages/pkg` is a project)."""
        if not absolute.startswith(root.rstrip(os.sep) + os.sep):
            return False
        if any(part in _INSTALLED for part in os.path.relpath(absolute, root).split(os.sep)[:-1]):
            return False
        return not is_excluded(absolute, self._excludes_below(root))

    def _excludes_below(self, root: str) -> Config:
        """The config whose excludes apply below `root`: the config itself, or for a root it excludes
        (given on purpose: a package in a virtualenv) the same patterns taken from the root."""
        config = self._configs.get(root)
        if config is None:
            config = self.config
            if is_excluded(root, self.config):
                config = dataclasses.replace(self.config, patterns_root=root)
            self._configs[root] = config
        return config


@dataclass(frozen=True)
class Site:
    """Where a record is reported: the innermost project frame, and the library frames below it.

    `in_project` is False when no frame of the stack is in the project; the site is then where
    Dynamo reported it.
    """

    frame: Frame
    library: tuple[Frame, ...] = ()
    in_project: bool = True


@dataclass
class Group:
    """Records of one site and reason: what the first said, and how many there were."""

    kind: str  # "break" | "recompile"
    site: Site
    reason: str  # the graph-break type, or the failed guard as first logged
    count: int = 0
    gb_id: Optional[str] = None
    explanation: str = ""
    definition: Optional[Frame] = None  # the recompiled function: its name, file and `def` line
    then: list[str] = field(default_factory=list)  # breaks hit while handling this one


@dataclass
class Grouping:
    """The groups in the order first seen, and what was read but is not reported."""

    groups: list[Group] = field(default_factory=list)
    breaks: int = 0
    recompiles: int = 0
    sizes_only: int = 0  # recompiles on tensor sizes alone (automatic dynamic)
    unplaced: int = 0  # records with no location at all (a trace cut short)


def place(frames: Sequence[Frame], project: Project) -> Optional[Site]:
    """The site of a stack (outermost first): its innermost project frame, or its last frame."""
    for index in range(len(frames) - 1, -1, -1):
        if project.contains(frames[index].path):
            return Site(frames[index], tuple(frames[index + 1:]))
    return Site(frames[-1], (), in_project=False) if frames else None


def reason_key(record: Record) -> str:
    """What makes two records at one site the same trap."""
    if isinstance(record, GraphBreakRecord):
        return record.gb_type
    return _NUMBER.sub("N", record.guard)


def group_records(records: Iterable[Record], project: Project) -> Grouping:
    """The records placed in the project and grouped by (kind, site, reason), counted."""
    out = Grouping()
    by_key: dict[tuple, Group] = {}
    for record in records:
        if isinstance(record, RecompileRecord):
            out.recompiles += 1
            if record.sizes_only:
                out.sizes_only += 1
                continue
            frames = record.stack or ((record.function,) if record.function else ())
        else:
            out.breaks += 1
            frames = record.stack or (record.location,)
        site = place(frames, project)
        if site is None:
            out.unplaced += 1
            continue
        kind = "break" if isinstance(record, GraphBreakRecord) else "recompile"
        key = (kind, os.path.abspath(site.frame.path), site.frame.line, reason_key(record))
        group = by_key.get(key)
        if group is None:
            group = by_key[key] = _new_group(kind, site, record)
            out.groups.append(group)
        elif site.library and not group.site.library:
            group.site = site
        group.count += 1
        if isinstance(record, GraphBreakRecord):
            group.then += [gb_type for gb_type in record.then if gb_type not in group.then]
    return out


def _new_group(kind: str, site: Site, record: Record) -> Group:
    if isinstance(record, GraphBreakRecord):
        return Group(kind, site, record.gb_type, gb_id=record.gb_id, explanation=record.explanation)
    return Group(kind, site, record.guard, definition=record.function)


def library_path(path: str) -> str:
    """A library file as people name it: below site-packages (`torch/nn/functional.py`), below the
    standard library (`logging/__init__.py`), else as given."""
    parts = path.replace("\\", "/").split("/")
    for marker in _INSTALLED:
        if marker in parts:
            return "/".join(parts[len(parts) - parts[::-1].index(marker):])
    found = _STDLIB.search(path)
    return path[found.end():].replace("\\", "/") if found else path

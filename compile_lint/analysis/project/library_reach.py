"""The traced set inside installed libraries, per user call: what each call of the project into a library reaches.

The program model (analysis/model/) follows calls into installed libraries' files as into
the project's own (the library's imports, classes and bases; contexts specialised on what
the user's call passes, so a branch on an option the user never passes is not followed).
For each traced call of a project file into a library (`LibraryCall`), the library
functions it reaches through traced calls inside the library, each with the calls that
lead there from the user's call (`LibraryFunction.via`): a break the engine finds in one of
them is reported at the user's call, which the user can edit. An installed module with no
Python source that traced code calls is noted once (`library_notes`), with the first call.
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass
from typing import Optional

from compile_lint.analysis.model.program import Model
from compile_lint.analysis.model.traced import TracedSet
from compile_lint.analysis.model.values import FunctionV, Node
from compile_lint.analysis.project.libraries import LibraryIndex

Key = tuple[str, str]


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


def library_calls(model: Model, traced: TracedSet, libraries: LibraryIndex) -> dict[str, tuple[LibraryCall, ...]]:
    """Project file -> its traced calls into libraries, each with the library functions it reaches."""
    grouped: dict[tuple[str, str, int, str], list[Node]] = {}
    for caller, line, spelled, callee in traced.library_calls:
        value = caller[0]
        if not isinstance(value, FunctionV):
            continue
        targets = grouped.setdefault((value.key[0], value.key[1], line, spelled or callee[0].key[1]), [])  # type: ignore[union-attr]
        if callee not in targets:
            targets.append(callee)
    found: dict[str, list[LibraryCall]] = {}
    for (path, function, line, spelled), targets in sorted(grouped.items()):
        reached = _reached(model, traced, libraries, targets)
        if reached:
            found.setdefault(path, []).append(LibraryCall(function, line, spelled, reached))
    return {path: tuple(calls) for path, calls in found.items()}


def _reached(model: Model, traced: TracedSet, libraries: LibraryIndex,
             targets: list[Node]) -> tuple[LibraryFunction, ...]:
    """Breadth first from the nodes a call runs, over traced calls inside libraries: each function with its chain."""
    via: dict[Key, tuple[tuple[str, int, str], ...]] = {}
    pending: deque[tuple[Node, tuple]] = deque()
    for node in targets:
        key = node[0].key  # type: ignore[union-attr]
        if key not in via:
            via[key] = ()
            pending.append((node, ()))
    seen: set[Node] = set(targets)
    while pending:
        node, chain = pending.popleft()
        caller_key = node[0].key  # type: ignore[union-attr]
        for callee, line in traced.children.get(node, ()):
            value = callee[0]
            if not isinstance(value, FunctionV) or callee in seen:
                continue
            module = model.modules.get(value.key[0])
            if module is None or not module.library:
                continue
            seen.add(callee)
            step = chain + ((_shown(libraries, caller_key[0]), line, caller_key[1]),)
            via.setdefault(value.key, step)
            pending.append((callee, step))
    found = []
    for key, chain in via.items():
        distribution = libraries.distribution(key[0])
        span = _span(model, key)
        if distribution is None or span is None:
            continue
        libraries.files.setdefault(key[0], distribution)
        found.append(LibraryFunction(key[0], key[1], span[0], span[1], distribution.name, distribution.version,
                                     distribution.relative(key[0]), chain))
    return tuple(found)


def _span(model: Model, key: Key) -> Optional[tuple[int, int]]:
    scope = model.scope(key)
    node = scope.function if scope is not None else None
    if node is None or isinstance(node, ast.Lambda):
        return None
    first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
    return first, node.end_lineno or node.lineno


def _shown(libraries: LibraryIndex, path: str) -> str:
    distribution = libraries.distribution(path)
    return distribution.relative(path) if distribution is not None else path


def library_notes(model: Model, traced: TracedSet, libraries: LibraryIndex) -> tuple[tuple[str, str, int], ...]:
    """(module, path, line) of each installed module without Python source that traced project code calls."""
    notes: dict[str, tuple[str, int]] = {}
    for path, line, name in sorted(traced.external_calls):
        module = model.modules.get(path)
        if module is None or module.library:
            continue
        found = libraries.no_source(name)
        if found is not None and found not in notes:
            notes[found] = (path, line)
    return tuple(sorted((module, path, line) for module, (path, line) in notes.items()))

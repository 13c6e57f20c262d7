"""Symbols across files: the classes and functions other modules define, read as source, never imported.

A file's analysis asks about names it imports: is `GradientCheckpointingLayer` (from
`transformers.modeling_layers`) an `nn.Module` subclass? Which of my methods does the
imported base class's `forward` call? What does an imported helper return? The index
finds a module's source as Python's import system would (`modules.py`), without running
anything, and reads each file's one summary (`summary.py`, made by `summariser.py`, the
project index's too) once, again only when its size or modification time changes, so a
long-lived process (the language server) stays current. Class hierarchies are ordered as
Python orders them (`classes.py`).

The index is lazy: only what a question reaches is read. Every file read on behalf of
another is recorded (`dependencies`), so the lint cache can key a file's findings on the
files they depend on, and a change to a base class in another file invalidates them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Optional

from compile_lint.analysis.project.classes import ClassKey, ClassResolver
from compile_lint.analysis.project.modules import ModuleResolver
from compile_lint.analysis.project.summariser import summarise_file
from compile_lint.analysis.project.summary import ClassInfo, FileSummary
from compile_lint.storage.stamps import file_stamp

_MAX_DEPTH = 30


@dataclass(frozen=True)
class Symbol:
    """A class or function found in a source file (`owner` names the class of a method)."""

    path: str
    name: str
    kind: str  # "class" | "function"
    owner: Optional[str] = None


class SymbolIndex:
    """Source-level lookups across modules, for one linting process.

    `roots` are directories absolute imports are looked up in before `sys.path` (the
    project's root, its `src/`); each file's own package root is always searched first.
    """

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self.modules = ModuleResolver(roots)
        self._summaries: dict[str, tuple[Optional[tuple[int, int]], Optional[FileSummary]]] = {}
        self._edges: dict[str, set[str]] = {}
        self._memo: dict[tuple, tuple[tuple[int, int], object]] = {}

    # ----- files ---------------------------------------------------------------------
    def summary(self, path: str) -> Optional[FileSummary]:
        """The summary of the source file `path`, re-read when it changed; None if unreadable."""
        path = os.path.abspath(path)
        stamp = file_stamp(path)
        cached = self._summaries.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        summary = summarise_file(path) if stamp is not None else None
        self._summaries[path] = (stamp, summary)
        return summary

    def adopt(self, summaries: Mapping[str, tuple[tuple[int, int], FileSummary]]) -> None:
        """Take the project index's summaries (absolute path -> (the file's stamp, its summary)):
        the project's files are then not read again while their stamps hold."""
        self._summaries.update(summaries)

    def memo(self, path: str, key: object, build: Callable[[], object]) -> object:
        """`build()` for a question about file `path`, cached while the file is unchanged."""
        stamp = file_stamp(path) or (0, 0)
        cached = self._memo.get((path, key))
        if cached is not None and cached[0] == stamp:
            return cached[1]
        value = build()
        self._memo[(path, key)] = (stamp, value)
        return value

    def mentions(self, path: str, words: frozenset[str]) -> bool:
        """Whether the text of file `path` contains one of `words` (a cheap test before reading its classes)."""
        def read() -> bool:
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                return False
            return any(word.encode() in data for word in words)

        return bool(self.memo(path, ("mentions", words), read))

    def record_read(self, from_path: str, path: str) -> None:
        """Record that the analysis of `from_path` read `path`."""
        if from_path != path:
            self._edges.setdefault(os.path.abspath(from_path), set()).add(os.path.abspath(path))

    def dependencies(self, path: str) -> set[str]:
        """Every file the analysis of `path` read, directly or through other files."""
        start = os.path.abspath(path)
        seen: set[str] = set()
        pending = list(self._edges.get(start, ()))
        while pending:
            current = pending.pop()
            if current in seen or current == start:
                continue
            seen.add(current)
            pending.extend(self._edges.get(current, ()))
        return seen

    # ----- symbols -------------------------------------------------------------------
    def lookup(self, qualified: str, from_path: str, depth: int = 0) -> Optional[Symbol]:
        """The class or function `qualified` names, seen from `from_path` (imports and aliases followed)."""
        if depth > _MAX_DEPTH:
            return None
        file, rest = self.modules.module_file(qualified, from_path)
        if file is None or not rest:
            return None
        self.record_read(from_path, file)
        return self._in_module(file, rest, depth)

    def resolve_in_file(self, path: str, dotted: str, depth: int = 0) -> Optional[Symbol]:
        """What the dotted name `dotted` means inside the source file `path`."""
        self.record_read(path, path)
        return self._in_module(path, tuple(dotted.split(".")), depth)

    def _in_module(self, file: str, parts: tuple[str, ...], depth: int) -> Optional[Symbol]:
        summary = self.summary(file)
        if summary is None or depth > _MAX_DEPTH:
            return None
        head, rest = parts[0], parts[1:]
        cls = summary.classes.get(head)
        if cls is not None:
            if not rest:
                return Symbol(file, head, "class")
            if len(rest) == 1 and rest[0] in cls.methods:
                return Symbol(file, rest[0], "function", owner=head)
            return None
        if head in summary.functions and not rest:
            return Symbol(file, head, "function")
        target = summary.imports.get(head) or summary.alias_target(head)
        if target is not None and target != head:
            return self.lookup(".".join((target,) + rest), file, depth + 1)
        if os.path.basename(file) == "__init__.py":
            # A submodule of the package that the package did not import by name.
            found, remaining = self.modules.descend(os.path.dirname(file), file, parts)
            if found is not None and found != file and remaining:
                self.record_read(file, found)
                return self._in_module(found, remaining, depth + 1)
        return None

    def qualify(self, path: str, dotted: str) -> str:
        """`dotted` as spelled in file `path`, with its head replaced by what the file imported it as."""
        summary = self.summary(path)
        return summary.qualify(dotted) if summary is not None else dotted

    # ----- classes -------------------------------------------------------------------
    def _classes(self) -> ClassResolver:
        """A class resolver over the files as they are now (one per question: files change)."""
        return ClassResolver(self._class_info, self._base, self.qualify)

    def _class_info(self, key: ClassKey) -> Optional[ClassInfo]:
        summary = self.summary(key[0])
        return summary.classes.get(key[1]) if summary is not None else None

    def _base(self, key: ClassKey, spelling: str) -> list[ClassKey]:
        found = self.resolve_in_file(key[0], spelling)
        return [(found.path, found.name)] if found is not None and found.kind == "class" else []

    def is_module_class(self, symbol: Symbol, base_names: frozenset[str], module_prefix: str) -> bool:
        """True when the class `symbol` derives from an nn.Module (a `module_prefix` name or a known base)."""
        return symbol.kind == "class" and self._classes().is_module_class(
            (symbol.path, symbol.name), base_names, module_prefix)

    def base_classes(self, symbol: Symbol) -> list[Symbol]:
        """The classes `symbol` derives from that the index can find, in Python's method resolution order."""
        return [Symbol(path, name, "class") for path, name in self._classes().mro((symbol.path, symbol.name))[1:]]

    def method_owner(self, symbol: Symbol, method: str) -> Optional[Symbol]:
        """The class (`symbol` or a base) whose body defines `method`, as Python finds it."""
        found = self._classes().method((symbol.path, symbol.name), method)
        return Symbol(found[0][0], found[0][1], "class") if found is not None else None

    def inherited_makers(self, symbol: Symbol, attribute: str) -> Optional[list[Optional[str]]]:
        """What makes `self.attribute` in the first base class of `symbol` (in method resolution
        order) whose methods assign it.

        One entry per assignment: the qualified name of the call (`torch.nn.LSTM`, resolved
        with the base's own imports), or None for a value that is no call. None when no
        base the index can read assigns it.
        """
        for base in self.base_classes(symbol):
            cls = self._class_info((base.path, base.name))
            made = cls.made_in_methods(attribute) if cls is not None else None
            if made is not None:
                return [self.qualify(base.path, maker) if maker else None for maker in made]
        return None

    def self_calls(self, symbol: Symbol, method: str) -> set[str]:
        """Names of `self.NAME(...)` methods that `method` of class `symbol` calls, transitively."""
        classes = self._classes()
        names: set[str] = set()
        pending = [method]
        while pending:
            current = pending.pop()
            found = classes.method((symbol.path, symbol.name), current)
            summary = self.summary(found[0][0]) if found is not None else None
            function = summary.functions.get(found[1]) if summary is not None and found is not None else None
            if function is None:
                continue  # the file changed since its class was read
            for name in function.self_calls:
                if name not in names:
                    names.add(name)
                    pending.append(name)
        return names

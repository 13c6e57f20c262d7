"""Symbols across files: the classes and functions other modules define, read as source, never imported.

A file's analysis asks about names it imports: is `GradientCheckpointingLayer` (from
`transformers.modeling_layers`) an `nn.Module` subclass? Which of my methods does the
imported base class's `forward` call? What does an imported helper return? The index
finds a module's source the way Python's import system would, without running anything:
relative imports by path, absolute ones through the linted project's roots, then
`importlib`'s path finders over `sys.path` (they locate files; they execute nothing).
Each file is summarised once with `ast` (classes, bases, methods, functions, imports) and
re-read only when its size or modification time changes, so a long-lived process (the
language server) stays current.

The index is lazy: only what a question reaches is read. Every file read on behalf of
another is recorded (`dependencies`), so the lint cache can key a file's findings on the
files they depend on, and a change to a base class in another file invalidates them.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import os
import sys
import tokenize
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from compile_lint.analysis.syntax.ast_walk import ast_nodes
from compile_lint.storage.stamps import file_stamp

# Packages whose meaning the rules encode themselves (torch), or that never define an
# nn.Module or a traced helper: never read.
_NEVER_READ = frozenset({"torch", "numpy", "scipy", "jax", "triton", "typing_extensions", "libcst"})
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins", "typing", "math", "random"}
_MAX_DEPTH = 30
_RECENT_TREES = 3  # parsed files kept for a detailed summary right after a plain one


@dataclass(frozen=True)
class FunctionSummary:
    """A function or method: where it is, and which `self.NAME(...)` methods it calls.

    `line` is the `def` line; `first_line`..`end_line` span its decorators and body.
    `self_calls` is filled only in a detailed summary (`SymbolIndex.detailed_summary`).
    """

    name: str
    line: int
    self_calls: frozenset[str] = frozenset()
    first_line: int = 0
    end_line: int = 0


@dataclass(frozen=True)
class ClassSummary:
    """A class: its bases as spelled (dotted names), its methods, and what makes its attributes.

    `made` maps `NAME` of every `self.NAME = value` in its methods to one entry per
    assignment: the dotted name the value calls as spelled in the file (`nn.LSTM`), or
    None for a value that is no call. It is filled only in a detailed summary.
    """

    name: str
    line: int
    bases: tuple[str, ...]
    methods: dict[str, FunctionSummary]
    made: dict[str, tuple[Optional[str], ...]] = field(default_factory=dict)


@dataclass
class ModuleSummary:
    """What one source file defines at top level, and what its names are imported from."""

    path: str
    stamp: tuple[int, int]
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    # Local name -> qualified name it was imported as; relative ones keep their dots
    # (`from .utils import f` -> ".utils.f"; `from . import utils` -> ".utils").
    imports: dict[str, str] = field(default_factory=dict)
    # `Alias = some.Name` at top level.
    aliases: dict[str, str] = field(default_factory=dict)
    # (first, last) line of every top-level import statement (also inside top-level if/try).
    import_spans: list[tuple[int, int]] = field(default_factory=list)


@dataclass(frozen=True)
class Symbol:
    """A class or function found in a source file (`owner` names the class of a method)."""

    path: str
    name: str
    kind: str  # "class" | "function"
    owner: Optional[str] = None


def dotted_parts(node: ast.AST) -> Optional[list[str]]:
    """["a", "b", "c"] for the `ast` Name/Attribute chain `a.b.c`, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    parts.reverse()
    return parts


def _dotted(node: ast.AST) -> Optional[str]:
    parts = dotted_parts(node)
    return ".".join(parts) if parts else None


def _method_facts(method: ast.AST, made: dict[str, list[Optional[str]]]) -> frozenset[str]:
    """The `self.NAME(...)` calls of `method`; adds its `self.NAME = value` makers to `made`.

    One walk serves both (summarising big files is a large part of a cross-file lint).
    """
    names = set()
    for node in ast_nodes(method):
        kind = type(node)
        if kind is ast.Call:
            func = node.func
            if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self":
                names.add(func.attr)
            continue
        if kind is ast.Assign:
            pairs = [(target, node.value) for target in node.targets]
        elif kind is ast.AnnAssign and node.value is not None:
            pairs = [(node.target, node.value)]
        else:
            continue
        for target, value in pairs:
            if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                    and target.value.id == "self"):
                maker = _dotted(value.func) if isinstance(value, ast.Call) else None
                made.setdefault(target.attr, []).append(maker)
    return frozenset(names)


def _class_summary(stmt: ast.ClassDef, detailed: bool) -> "ClassSummary":
    bases = tuple(
        name for name in (_dotted(b.value if isinstance(b, ast.Subscript) else b) for b in stmt.bases)
        if name
    )
    methods: dict[str, FunctionSummary] = {}
    made: dict[str, list[Optional[str]]] = {}
    for item in stmt.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # A method defined twice: the last definition is the one the class keeps.
            calls = _method_facts(item, made) if detailed else frozenset()
            methods[item.name] = FunctionSummary(item.name, item.lineno, calls)
    return ClassSummary(stmt.name, stmt.lineno, bases, methods, {name: tuple(makers) for name, makers in made.items()})


def relative_name(level: int, module: Optional[str], name: str = "") -> str:
    """How a relative import spells its target: `from ..a import b` -> "..a.b", `from . import b` -> ".b"."""
    dots = "." * level
    head = dots + (module or "")
    if not name:
        return head
    return f"{head}{name}" if head.endswith(".") or not head else f"{head}.{name}"


def _summarise(path: str, stamp: tuple[int, int], tree: ast.Module, detailed: bool) -> ModuleSummary:
    summary = ModuleSummary(path, stamp)

    def statements(body: Iterable[ast.stmt]) -> Iterable[ast.stmt]:
        # Top-level `if`/`try` blocks (`if is_torch_available():`, `try: import x`) bind names too.
        for stmt in body:
            yield stmt
            if isinstance(stmt, ast.If):
                yield from statements(stmt.body)
                yield from statements(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                for block in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                    yield from statements(block)

    for stmt in statements(tree.body):
        if isinstance(stmt, ast.ClassDef):
            if stmt.name not in summary.classes:
                summary.classes[stmt.name] = _class_summary(stmt, detailed)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([stmt.lineno] + [decorator.lineno for decorator in stmt.decorator_list])
            summary.functions.setdefault(
                stmt.name, FunctionSummary(stmt.name, stmt.lineno, first_line=first, end_line=stmt.end_lineno or stmt.lineno))
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            summary.import_spans.append((stmt.lineno, stmt.end_lineno or stmt.lineno))
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    summary.imports[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    summary.imports[head] = head
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if alias.name != "*":
                    summary.imports[alias.asname or alias.name] = relative_name(stmt.level, stmt.module, alias.name)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target = _dotted(stmt.value)
            if target is not None:
                summary.aliases[stmt.targets[0].id] = target
    return summary


def package_root(path: str) -> str:
    """The directory a file's top-level package sits in (its own directory outside a package)."""
    directory = os.path.dirname(os.path.abspath(path))
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return directory


class SymbolIndex:
    """Source-level lookups across modules, for one linting process.

    `roots` are directories absolute imports are looked up in before `sys.path` (the
    project's root, its `src/`); each file's own package root is always searched first.
    """

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self.roots = tuple(dict.fromkeys(os.path.abspath(root) for root in roots))
        self._summaries: dict[str, Optional[ModuleSummary]] = {}
        self._detailed: dict[str, Optional[ModuleSummary]] = {}
        self._locations: dict[tuple[str, str], Optional[tuple[Optional[str], Optional[str]]]] = {}
        self._edges: dict[str, set[str]] = {}
        self._memo: dict[tuple, tuple[tuple[int, int], object]] = {}
        self._recent_trees: "OrderedDict[tuple[str, tuple[int, int]], ast.Module]" = OrderedDict()

    # ----- files ---------------------------------------------------------------------
    def summary(self, path: str) -> Optional[ModuleSummary]:
        """The summary of the source file `path`, re-read when it changed; None if unreadable.

        Its classes' `made` and methods' `self_calls` are left empty: walking every method
        of every file read costs more than parsing the few files whose classes are asked
        about twice (`detailed_summary`).
        """
        return self._read(path, detailed=False)

    def detailed_summary(self, path: str) -> Optional[ModuleSummary]:
        """`summary(path)` with what each class's methods call on `self` and assign to it."""
        return self._read(path, detailed=True)

    def _read(self, path: str, detailed: bool) -> Optional[ModuleSummary]:
        stamp = file_stamp(path)
        cached = self._detailed.get(path)
        if cached is None and not detailed:
            cached = self._summaries.get(path)
        if cached is not None and cached.stamp == stamp:
            return cached
        store = self._detailed if detailed else self._summaries
        if stamp is None:
            store[path] = None
            return None
        tree = self._recent_trees.get((path, stamp))
        if tree is None:
            try:
                with tokenize.open(path) as handle:
                    text = handle.read()
                tree = ast.parse(text, filename=path)
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
                store[path] = summary = ModuleSummary(path, stamp)
                return summary
            # A file asked about in detail is mostly one just summarised (the file being
            # linted, its bases): keep the last few trees rather than parse them again.
            self._recent_trees[(path, stamp)] = tree
            while len(self._recent_trees) > _RECENT_TREES:
                self._recent_trees.popitem(last=False)
        store[path] = summary = _summarise(path, stamp, tree, detailed)
        return summary

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
        """Whether the text of file `path` contains one of `words` (a cheap test before a detailed summary)."""
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

    # ----- modules -------------------------------------------------------------------
    def module_file(self, qualified: str, from_path: str) -> tuple[Optional[str], tuple[str, ...]]:
        """The source file of the longest module prefix of `qualified`, and the names after it.

        Relative names (leading dots) are resolved from `from_path`'s directory.
        """
        if qualified.startswith("."):
            level = len(qualified) - len(qualified.lstrip("."))
            directory = os.path.dirname(os.path.abspath(from_path))
            for _ in range(level - 1):
                directory = os.path.dirname(directory)
            parts = tuple(p for p in qualified[level:].split(".") if p)
            init = os.path.join(directory, "__init__.py")
            return self._descend(directory, init if os.path.isfile(init) else None, parts)
        parts = tuple(qualified.split("."))
        if not parts[0] or parts[0] in _NEVER_READ or parts[0] in _STDLIB:
            return None, parts
        location = self._top_level(parts[0], from_path)
        if location is None:
            return None, parts
        directory, file = location
        if directory is None:
            return file, parts[1:]
        return self._descend(directory, file, parts[1:])

    def _descend(self, directory: str, file: Optional[str], parts: tuple[str, ...]) -> tuple[Optional[str], tuple[str, ...]]:
        for index, part in enumerate(parts):
            package = os.path.join(directory, part)
            init = os.path.join(package, "__init__.py")
            if os.path.isdir(package) and (os.path.isfile(init) or not os.path.isfile(package + ".py")):
                directory = package
                file = init if os.path.isfile(init) else None
                continue
            if os.path.isfile(package + ".py"):
                return package + ".py", parts[index + 1:]
            return file, parts[index:]
        return file, ()

    def _top_level(self, name: str, from_path: str) -> Optional[tuple[Optional[str], Optional[str]]]:
        """(package directory, its __init__.py) or (None, module file) for a top-level module."""
        roots = (package_root(from_path),) + self.roots
        key = (name, roots[0])
        if key in self._locations:
            return self._locations[key]
        location = None
        for root in roots:
            location = _location_in(root, name)
            if location is not None:
                break
        if location is None:
            location = _installed_location(name)
        self._locations[key] = location
        return location

    # ----- symbols -------------------------------------------------------------------
    def lookup(self, qualified: str, from_path: str, depth: int = 0) -> Optional[Symbol]:
        """The class or function `qualified` names, seen from `from_path` (imports and aliases followed)."""
        if depth > _MAX_DEPTH:
            return None
        file, rest = self.module_file(qualified, from_path)
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
        target = summary.imports.get(head) or summary.aliases.get(head)
        if target is not None and target != head:
            return self.lookup(".".join((target,) + rest), file, depth + 1)
        if os.path.basename(file) == "__init__.py":
            # A submodule of the package that the package did not import by name.
            found, remaining = self._descend(os.path.dirname(file), file, parts)
            if found is not None and found != file and remaining:
                self.record_read(file, found)
                return self._in_module(found, remaining, depth + 1)
        return None

    def class_summary(self, symbol: Symbol, detailed: bool = False) -> Optional[ClassSummary]:
        """The summary of the class `symbol` names (with `detailed`, its `made` and methods' `self_calls` too)."""
        summary = self._read(symbol.path, detailed)
        return summary.classes.get(symbol.name) if summary is not None and symbol.kind == "class" else None

    def qualify(self, path: str, dotted: str) -> str:
        """`dotted` as spelled in file `path`, with its head replaced by what the file imported it as."""
        summary = self.summary(path)
        head, _, rest = dotted.partition(".")
        target = summary.imports.get(head) if summary is not None else None
        if target is None:
            return dotted
        return f"{target}.{rest}" if rest else target

    def is_module_class(self, symbol: Symbol, base_names: frozenset[str], module_prefix: str) -> bool:
        """True when the class `symbol` derives from an nn.Module (a `module_prefix` name or a known base)."""
        return self._module_class(symbol, base_names, module_prefix, 0, set())

    def _module_class(self, symbol: Symbol, base_names: frozenset[str], prefix: str, depth: int, seen: set) -> bool:
        cls = self.class_summary(symbol)
        if cls is None or depth > _MAX_DEPTH or (symbol.path, symbol.name) in seen:
            return False
        seen.add((symbol.path, symbol.name))
        for base in cls.bases:
            qualified = self.qualify(symbol.path, base)
            if qualified.startswith(prefix) or base.rsplit(".", 1)[-1] in base_names:
                return True
            found = self.resolve_in_file(symbol.path, base)
            if found is not None and found.kind == "class" and self._module_class(found, base_names, prefix, depth + 1, seen):
                return True
        return False

    def base_classes(self, symbol: Symbol) -> list[Symbol]:
        """The classes `symbol` derives from that the index can find, nearest first (depth first)."""
        found: list[Symbol] = []
        pending = [symbol]
        while pending and len(found) < _MAX_DEPTH:
            current = pending.pop(0)
            cls = self.class_summary(current)
            if cls is None:
                continue
            for base in cls.bases:
                resolved = self.resolve_in_file(current.path, base)
                if resolved is not None and resolved.kind == "class" and resolved not in found and resolved != symbol:
                    found.append(resolved)
                    pending.append(resolved)
        return found

    def method_owner(self, symbol: Symbol, method: str) -> Optional[Symbol]:
        """The class (`symbol` or a base) whose body defines `method`."""
        for candidate in [symbol, *self.base_classes(symbol)]:
            cls = self.class_summary(candidate)
            if cls is not None and method in cls.methods:
                return candidate
        return None

    def inherited_makers(self, symbol: Symbol, attribute: str) -> Optional[list[Optional[str]]]:
        """What makes `self.attribute` in the nearest base class of `symbol` that assigns it.

        One entry per assignment: the qualified name of the call (`torch.nn.LSTM`, resolved
        with the base's own imports), or None for a value that is no call. None when no
        base the index can read assigns it.
        """
        for base in self.base_classes(symbol):
            cls = self.class_summary(base, detailed=True)
            if cls is not None and attribute in cls.made:
                return [self.qualify(base.path, maker) if maker else None for maker in cls.made[attribute]]
        return None

    def self_calls(self, symbol: Symbol, method: str) -> set[str]:
        """Names of `self.NAME(...)` methods that `method` of class `symbol` calls, transitively."""
        names: set[str] = set()
        pending = [method]
        while pending:
            current = pending.pop()
            owner = self.method_owner(symbol, current)
            if owner is None:
                continue
            cls = self.class_summary(owner, detailed=True)
            if cls is None or current not in cls.methods:
                continue  # the file changed since `method_owner` read it
            for name in cls.methods[current].self_calls:
                if name not in names:
                    names.add(name)
                    pending.append(name)
        return names


def _location_in(root: str, name: str) -> Optional[tuple[Optional[str], Optional[str]]]:
    package = os.path.join(root, name)
    if os.path.isdir(package):
        init = os.path.join(package, "__init__.py")
        if os.path.isfile(init) or not os.path.isfile(package + ".py"):
            return package, init if os.path.isfile(init) else None
    if os.path.isfile(package + ".py"):
        return None, package + ".py"
    return None


def _installed_location(name: str) -> Optional[tuple[Optional[str], Optional[str]]]:
    """Where an installed top-level module's source is, found by the import system's finders.

    Finders only locate modules; nothing is executed. Extension modules and modules
    without a source file give None.
    """
    try:
        spec = importlib.machinery.PathFinder.find_spec(name)
        if spec is None:
            spec = importlib.util.find_spec(name)  # editable installs use meta-path finders
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None:
        return None
    origin = spec.origin if spec.has_location else None
    locations = list(spec.submodule_search_locations or ())
    if locations:
        init = origin if origin and origin.endswith(".py") else None
        return locations[0], init
    if origin and origin.endswith(".py"):
        return None, origin
    return None

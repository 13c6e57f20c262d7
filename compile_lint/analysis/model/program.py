"""The program model: one abstract interpretation of a program's files, solved to a fixed point.

`Model` loads the project's files (and, on demand, installed libraries' files the
evaluation reaches), evaluates each module's code, and every function the evaluation
calls, in a context (the arguments it is specialised on: constants, callables, the
receiver's class), until no value set grows (`heap.py`). Frames (`frames.py`) interpret
statements and expressions; `calls.py` gives calls their meaning, `objects.py` attribute
reads, subscripts and iteration, `externals.py` the library functions the model knows
without reading them (builtins, functools, torch). What comes out: the value of every
cell, every call edge (caller node -> call site -> callees, with how Dynamo treats each),
the entry points `torch.compile` is given, and the branches each node skipped because a
constant decided them. `traced.py` turns that into the traced set; `pycg.py` into PyCG's
call-graph JSON.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from compile_lint.analysis.kinds.lattice import Kind
from compile_lint.analysis.model.heap import Heap
from compile_lint.analysis.model.scopes import FileScopes, Scope
from compile_lint.analysis.model.values import (
    EMPTY,
    JOINED,
    ClassV,
    Context,
    ExternalV,
    FunctionV,
    KindV,
    ModuleV,
    Node,
    Value,
)
from compile_lint.analysis.project.modules import NEVER_READ, STDLIB, ModuleResolver, package_root

# How many contexts one function is analysed in before further calls share a coarser one.
MAX_CONTEXTS = 8
# How often one node may be evaluated, and how many evaluations one program may take
# (per loaded file): a bound on any input, past which the model stops growing (it says so).
MAX_EVALUATIONS_PER_NODE = 40
EVALUATIONS_PER_FILE = 400
# Values joined (values.JOINED), per loaded file: the budget in work, not in evaluations. A node is
# evaluated again each time a cell it read grows, and one statement may join sets of thousands of values
# (x_transformers' partials of partials: no end in 5 minutes); past this the model stops growing and says
# so (`given_up`). Typical projects join 10,000-20,000 values per file (whisper, e3nn).
JOINS_PER_FILE = 40_000
LIBRARY_FILE_BUDGET = 300
# Files of the project that the given files' imports bring in (a file linted alone in a big package:
# transformers' `from ...utils import X` reaches 2,463 files through package `__init__`s): read on demand
# up to this many, past which an import of one is unresolved (the model says so in `unresolved_imports`).
ON_DEMAND_FILE_BUDGET = 40
# Tooling whose code never runs inside a compiled model (test runners, packaging, editors' servers): never read.
TOOLING = frozenset({"pytest", "_pytest", "pluggy", "hypothesis", "hypothesmith", "setuptools", "pkg_resources",
                     "pip", "IPython", "ipykernel", "lsprotocol", "pygls", "psutil", "coverage", "mypy", "ruff",
                     "flake8", "pycodestyle", "pyflakes", "black", "isort", "sphinx", "docutils", "jinja2",
                     "pygments", "_distutils_hack", "virtualenv", "nox", "tox", "watchfiles"})


@dataclass(eq=False)
class LoadedModule:
    """One parsed file: its tree, scopes, dotted name and whether it is a library's."""

    path: str
    name: str
    tree: ast.Module
    scopes: FileScopes
    library: bool
    is_package: bool
    mentions_compile: bool = False  # its text spells `compile`, `cond(` or `optimize(`: entries may be made there


@dataclass
class CallRecord:
    """One call site of a node: where, as spelled, whether only eager runs reach it, and what it calls.

    `targets` holds (callee, how): a callee node, or an external name (`builtins.print`);
    how is "call", "disabled", "allowed" or "opaque" (Dynamo's treatment of the callee), "eager" (a call
    only eager runs make: a metaclass's `__call__`) or "dynamo" (one only Dynamo makes: `__init__` of a class
    whose metaclass defines `__call__`, which Python calls from there).
    """

    line: int
    column: int
    spelled: Optional[str]
    eager: bool
    targets: set = field(default_factory=set)
    implicit: bool = False  # not a call in the source: a property read, a decorator, an `__init__`
    scope: str = ""  # the qualified name of the innermost def, lambda or class body holding the call


class Model:
    """The abstract interpretation of one program."""

    def __init__(self, resolver: ModuleResolver, root: str, *, is_library: Callable[[str], bool] = lambda path: False,
                 module_bases: Iterable[str] = (), follow_libraries: bool = True,
                 skipped_modules: Iterable[str] = (), sources: Optional[dict[str, str]] = None,
                 strict: bool = False) -> None:
        self.resolver = resolver
        self.root = os.path.abspath(root)
        self.is_library = is_library
        self.follow_libraries = follow_libraries
        self.skipped_modules = frozenset(skipped_modules) | NEVER_READ | STDLIB | TOOLING | {"compile_lint"}
        self.module_bases = frozenset(module_bases)
        self.sources = {os.path.abspath(path): text for path, text in (sources or {}).items()}  # unsaved texts
        self.heap = Heap()
        self.modules: dict[str, Optional[LoadedModule]] = {}
        self.project_files: list[str] = []
        self.contexts: dict[FunctionV, list[Context]] = {}
        self.edges: dict[Node, dict[tuple[int, int], CallRecord]] = {}
        # Entry points: node -> where it was made one ((path, line) of a compile call, None for a forward).
        self.entries: dict[Node, Optional[tuple]] = {}
        # Branches a node skipped: node -> (first, last) lines of the statement lists it did not run
        # (a constant decided the test, or an `if is_compiling(): return` left them to eager runs).
        self.skipped: dict[Node, set[tuple[int, int]]] = {}
        # Each node's evaluations so far, and the nodes it gave up on (its budget spent).
        self.evaluations: dict[Node, int] = {}
        self.exhausted: set[Node] = set()
        self.library_files: list[str] = []
        self.on_demand_files = 0  # project files read because an import named them (ON_DEMAND_FILE_BUDGET)
        self._loading_given = False  # whether the given files are all loaded (later loads are on demand)
        self.unresolved_imports: dict[str, tuple[str, int]] = {}  # module name -> (path, line) of the first import
        self.no_source: dict[str, tuple[str, int]] = {}  # installed module without Python source -> first use
        # Classes built generically for their module entry (their `__init__` run with unknown arguments).
        self.constructed: set[tuple[str, str]] = set()
        # torch.cond branches: node -> (path, line, "cond") of the cond call.
        self.cond_branches: dict[Node, tuple] = {}
        # (function key, parameter) -> {(path, line, argument as spelled)}: calls from another file
        # that pass it a tensor, what a finding resting on the parameter names.
        self.passes: dict[tuple[tuple[str, str], str], set[tuple[str, int, str]]] = {}
        # Node -> (cause, line) of each place its traced code needs a tensor's data ("item": `.item()`,
        # `.tolist()`...; "branch": an `if`/`while` on a tensor): what a function registered with
        # `allow_in_graph` cannot do in the fake run Dynamo makes of it.
        self.data_reads: dict[Node, set[tuple[str, int]]] = {}
        self._mro: dict[tuple[str, str], tuple] = {}
        self._linearising: set[tuple[str, str]] = set()
        self._imports: dict[tuple[str, str], tuple] = {}  # (name, directory of a relative import) -> where
        # The evaluator and the attribute reads, given by whoever builds the model (build.py): the program
        # state below knows nothing of how statements run.
        self.evaluate_node: Callable[["Model", Node], None] = lambda model, node: None
        # Which library files the traced set may enter (the project's index: those a distribution claims).
        self.follows: Callable[[str], bool] = lambda path: True
        self.attribute_hook: Callable[["Model", frozenset, tuple[str, ...]], frozenset] = \
            lambda model, value, rest: EMPTY
        self._budget = 0
        self._work_budget = 0
        self._joined_at_start = JOINED[0]
        self.spent = 0
        self.given_up = False  # the program-wide budget ran out: the model is not a fixed point
        # Nodes whose evaluation raised (a bug of the model's, or code it cannot read): what it said.
        # `strict` (the test suite) raises instead.
        self.failures: list[tuple[Node, str]] = []
        self.strict = strict

    # ----- files -----
    def add_project_files(self, paths: Iterable[str]) -> None:
        """Load the project's files and queue their module code."""
        for path in paths:
            path = os.path.abspath(path)
            module = self.load(path, library=False)
            if module is not None:
                self.project_files.append(path)
                self.heap.schedule((ModuleV(path), ()))
        self._loading_given = True

    def load(self, path: str, library: Optional[bool] = None) -> Optional[LoadedModule]:
        """The parsed file `path` (None when it cannot be read or parsed, or a library past the budget)."""
        path = os.path.abspath(path)
        if path in self.modules:
            return self.modules[path]
        if library is None:
            library = self.is_library(path)
        if library and (not self.follow_libraries or len(self.library_files) >= LIBRARY_FILE_BUDGET):
            return None
        if not library and self._loading_given and self.on_demand_files >= ON_DEMAND_FILE_BUDGET:
            return None
        loaded = None
        try:
            if path in self.sources:
                data: bytes = self.sources[path].encode("utf-8", "surrogatepass")
            else:
                with open(path, "rb") as handle:
                    data = handle.read()
            tree = ast.parse(data, filename=path)
            loaded = LoadedModule(path, self.module_name(path), tree, FileScopes(tree, lazy=True), library,
                                  os.path.basename(path) == "__init__.py",
                                  any(word in data for word in (b"compile", b"cond(", b"optimize(")))
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            loaded = None
        self.modules[path] = loaded
        if loaded is not None:
            self._budget += EVALUATIONS_PER_FILE
            self._work_budget += JOINS_PER_FILE
            if library:
                self.library_files.append(path)
            elif self._loading_given:
                self.on_demand_files += 1
        return loaded

    def module_name(self, path: str) -> str:
        """The dotted module name of `path`: relative to the project's root, else to its package root."""
        base = self.root if path.startswith(self.root + os.sep) else package_root(path)
        relative = os.path.relpath(path, base)[:-3]
        parts = relative.split(os.sep)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts) if parts else os.path.basename(os.path.dirname(path))

    def module_of(self, node: Node) -> Optional[LoadedModule]:
        """The loaded file a node's code is in."""
        value = node[0]
        path = value.path if isinstance(value, ModuleV) else value.key[0]
        return self.modules.get(path)

    def scope(self, key: tuple[str, str]) -> Optional[Scope]:
        """The (last) definition of function or class `key`."""
        module = self.modules.get(key[0])
        if module is None:
            return None
        found = module.scopes.functions.get(key[1]) or module.scopes.classes.get(key[1])
        return module.scopes.ensure(found[-1]) if found else None

    def definitions(self, key: tuple[str, str]) -> list[Scope]:
        """Every definition of function `key` (a name defined twice runs as either)."""
        module = self.modules.get(key[0])
        if module is None:
            return []
        return [module.scopes.ensure(scope) for scope in module.scopes.functions.get(key[1], ())]

    # ----- imports -----
    def import_module(self, qualified: str, from_path: str, line: int = 0) -> frozenset:
        """The value of module `qualified` as imported by `from_path`: the loaded module, or an external name."""
        absolute = qualified.lstrip(".")
        if not qualified.startswith(".") and absolute.split(".")[0] in self.skipped_modules:
            return frozenset((ExternalV(absolute),))
        key = (qualified, os.path.dirname(from_path) if qualified.startswith(".") else "")
        found = self._imports.get(key)
        if found is None:
            found = self._imports[key] = self.resolver.module_file(qualified, from_path)
        file, rest = found
        if file is None:
            if qualified.startswith("."):
                return EMPTY
            top = absolute.split(".")[0]
            if top not in self.skipped_modules:
                self.unresolved_imports.setdefault(top, (from_path, line))
            return frozenset((ExternalV(absolute),))
        module = self.load(file)
        if module is None:
            return frozenset((ExternalV(absolute),)) if not qualified.startswith(".") else EMPTY
        if not module.library:
            self.run_module(module.path)  # importing a project module runs its code
            self._run_packages(qualified, from_path)
        value: frozenset = frozenset((ModuleV(module.path),))
        if rest:
            value = self.attribute_hook(self, value, rest)
        return value

    def _run_packages(self, qualified: str, from_path: str) -> None:
        """Importing `a.b.c` runs the packages `a` and `a.b` first: their `__init__.py` code."""
        if qualified.startswith("."):
            return
        parts = qualified.split(".")
        for end in range(1, len(parts)):
            file, rest = self.resolver.module_file(".".join(parts[:end]), from_path)
            if file is None or rest or not file.endswith("__init__.py"):
                continue
            package = self.load(file)
            if package is not None and not package.library:
                self.run_module(package.path)

    def library_global(self, path: str, name: str) -> None:
        """Queue the statements of library module `path` that bind global `name`, once."""
        from compile_lint.analysis.model.values import ConstV  # noqa: PLC0415 - local to this key

        node: Node = (ModuleV(path), (("name", ConstV(name)),))
        if node not in self.evaluations:
            self.heap.schedule(node)

    def run_module(self, path: str) -> None:
        """Queue a loaded module's code, once."""
        node: Node = (ModuleV(path), ())
        if node not in self.evaluations:
            self.heap.schedule(node)

    def submodule(self, module: ModuleV, name: str) -> Optional[ModuleV]:
        """Module `name` inside package `module` (its file loaded), or None."""
        if os.path.basename(module.path) != "__init__.py":
            return None
        file, rest = self.resolver.descend(os.path.dirname(module.path), module.path, (name,))
        if file is None or rest or os.path.abspath(file) == module.path:
            return None
        loaded = self.load(file)
        if loaded is not None and not loaded.library:
            self.run_module(loaded.path)
        return ModuleV(loaded.path) if loaded is not None else None

    # ----- the fixed point -----
    def context_for(self, function: FunctionV, wanted: Context) -> Context:
        """The context `function` is analysed in for a call specialised on `wanted` (coarser past the bound)."""
        known = self.contexts.setdefault(function, [])
        if wanted in known:
            return wanted
        if len(known) < MAX_CONTEXTS:
            known.append(wanted)
            return wanted
        receiver_only = tuple(item for item in wanted if item[0] in ("self", "cls"))
        if receiver_only in known or len(known) < 2 * MAX_CONTEXTS:
            if receiver_only not in known:
                known.append(receiver_only)
            return receiver_only
        if () not in known:
            known.append(())
        return ()

    def solve(self) -> None:
        """Evaluate queued nodes until nothing grows (or the budget is spent)."""
        heap = self.heap
        while True:
            node = heap.next()
            if node is None:
                return
            count = self.evaluations.get(node, 0)
            if count >= MAX_EVALUATIONS_PER_NODE:
                self.exhausted.add(node)
                continue
            if self.spent >= self._budget or JOINED[0] - self._joined_at_start >= self._work_budget:
                self.given_up = True
                continue
            self.evaluations[node] = count + 1
            self.spent += 1
            heap.current = node
            try:
                self.evaluate_node(self, node)
            except Exception as problem:  # noqa: BLE001 - one node the model cannot evaluate costs that node
                if self.strict:
                    raise
                self.failures.append((node, f"{type(problem).__name__}: {problem}"))
                self.exhausted.add(node)
            finally:
                heap.current = None

    def record_call(self, caller: Node, site: tuple[int, int], spelled: Optional[str], eager: bool,
                    target: object, how: str = "call", implicit: bool = False, scope: str = "") -> None:
        """Note that `caller`'s call at `site` (line, column) runs `target` (a node or an external name)."""
        calls = self.edges.setdefault(caller, {})
        record = calls.get(site)
        if record is None:
            record = calls[site] = CallRecord(site[0], site[1], spelled, eager, implicit=implicit, scope=scope)
        elif not eager:
            record.eager = False
        record.targets.add((target, how))

    def note_passes(self, caller_path: str, function: FunctionV, call: Optional[ast.Call], shift: int,
                    bound: dict[str, frozenset]) -> None:
        """Remember each call from another file that passes a certain tensor to a parameter of `function`
        (`shift`: 1 when a receiver fills the first parameter): what a finding resting on it names."""
        if call is None or caller_path == function.key[0]:
            return
        names = list(bound)
        pairs: list[tuple[str, ast.expr]] = []
        for index, argument in enumerate(call.args):
            if isinstance(argument, ast.Starred) or index + shift >= len(names):
                break
            pairs.append((names[index + shift], argument))
        pairs += [(keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg in bound]
        for name, argument in pairs:
            found = bound.get(name, EMPTY)
            if found and all(isinstance(value, KindV) and value.kind is Kind.TENSOR for value in found):
                self.passes.setdefault((function.key, name), set()).add(
                    (caller_path, argument.lineno, _dotted(argument)))

    # ----- classes -----
    def class_bases(self, key: tuple[str, str]) -> list[frozenset]:
        """The values of each base of class `key`, as its definition evaluated them."""
        scope = self.scope(key)
        count = len(scope.node.bases) if scope is not None and isinstance(scope.node, ast.ClassDef) else 0
        return [self.heap.read(("cb", key, index)) for index in range(count)]

    def mro(self, key: tuple[str, str]) -> tuple[Value, ...]:
        """Class `key`'s method resolution order: loaded classes (ClassV) and external bases (ExternalV).

        Kept per class with the bases of every class it rests on; those bases are read on every
        question (the asking node depends on them) and the order is worked out again when one grew.
        """
        found = self._mro.get(key)
        if found is not None and all(self.class_bases(each) == bases for each, bases in found[1]):
            return found[0]
        if key in self._linearising:
            return (ClassV(key),)  # a class among its own bases (`class Linear(Linear)`): left out
        self._linearising.add(key)
        try:
            order = linearise(self, key)
        finally:
            self._linearising.discard(key)
        resting = {key: self.class_bases(key)}
        for holder in order[1:]:
            if isinstance(holder, ClassV):
                for each, bases in self._mro.get(holder.key, ((), ()))[1]:
                    resting.setdefault(each, bases)
        self._mro[key] = (order, tuple(resting.items()))
        return order

    def is_module_class(self, key: tuple[str, str]) -> bool:
        """Whether class `key` derives from torch.nn.Module (or a configured module base)."""
        for value in self.mro(key)[1:]:
            if isinstance(value, ExternalV):
                name = value.name
                if name.startswith("torch.nn.") or name.rsplit(".", 1)[-1] in self.module_bases:
                    return True
            elif isinstance(value, ClassV) and value.key[1].rsplit(".", 1)[-1] in self.module_bases:
                return True
        return False


def _dotted(expression: ast.AST) -> str:
    """An argument as spelled when it is a dotted name (`self.scale`), else "" (it is "a tensor" then)."""
    parts = []
    while isinstance(expression, ast.Attribute):
        parts.append(expression.attr)
        expression = expression.value
    if not isinstance(expression, ast.Name):
        return ""
    parts.append(expression.id)
    return ".".join(reversed(parts))


_MAX_BASE_CHOICES = 4


def linearise(model: Model, key: tuple[str, str]) -> tuple[Value, ...]:
    """Python's C3 order of class `key` over the bases the model evaluated (depth first where C3 fails); the
    bases' own orders come from `model.mro` (kept per class)."""
    sequences: list[list[Value]] = []
    direct: list[Value] = []
    for base_values in model.class_bases(key):
        if sum(isinstance(base, ClassV) for base in base_values) > _MAX_BASE_CHOICES:
            # A base that may be any of many classes (`class Wrapped(dist)` in a loop over them): the model
            # does not follow it (an order over all of them says little and costs a lot).
            base_values = frozenset((ExternalV("<one of many classes>"),))
        for base in sorted(base_values, key=repr):
            if isinstance(base, ClassV) and base.key != key:
                direct.append(base)
                sequences.append(list(model.mro(base.key)))
            elif isinstance(base, ExternalV):
                direct.append(base)
                sequences.append([base])
    sequences.append(list(direct))
    order: list[Value] = [ClassV(key)]
    while any(sequences):
        for sequence in sequences:
            if not sequence:
                continue
            head = sequence[0]
            if not any(head in other[1:] for other in sequences):
                break
        else:
            # No C3 order: depth first, each class once.
            for sequence in sequences:
                for item in sequence:
                    if item not in order:
                        order.append(item)
            return tuple(order)
        order.append(head)
        for sequence in sequences:
            if sequence and sequence[0] == head:
                sequence.pop(0)
    return tuple(order)

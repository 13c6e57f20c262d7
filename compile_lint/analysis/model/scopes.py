"""One file's scopes, found once with `ast`: every function, lambda and class with its qualified name,
its local names, its `global` / `nonlocal` declarations and its parameters.

The model evaluates names the way Python binds them (LEGB): a name a function assigns is
its local (unless declared `global` or `nonlocal`), a free name is looked up in the
enclosing functions, then the module, then the builtins; class bodies are no enclosing
scope of the functions inside them. Qualified names follow the project's spelling: `f`,
`Cls.method`, `outer.inner`, `f.<lambda1>` (lambdas numbered in source order per scope).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterator, Optional, Union

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
ScopeNode = Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef]

# Statements whose bodies Python runs in the scope that holds them (no scope of their own).
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass(eq=False)
class Scope:
    """A module, function, lambda or class body."""

    node: ScopeNode
    qualname: str  # "" for the module
    kind: str  # "module" | "function" | "lambda" | "class"
    parent: Optional["Scope"]
    local_names: set[str] = field(default_factory=set)
    global_names: set[str] = field(default_factory=set)
    nonlocal_names: set[str] = field(default_factory=set)
    is_generator: bool = False
    lambdas: int = 0  # lambdas numbered so far inside it
    has_nested: bool = False  # defines functions, lambdas or classes: its locals may be read as closures
    calls_compile: bool = False  # spells a call of something named `compile`, `cond` or `optimize`

    @property
    def function(self) -> Optional[FunctionNode]:
        """The function or lambda node, None for a module or class scope."""
        return self.node if self.kind in ("function", "lambda") else None  # type: ignore[return-value]

    def enclosing_function(self, name: str) -> Optional["Scope"]:
        """The nearest enclosing function scope that binds `name` (a closure's free variable), or None."""
        scope = self.parent
        while scope is not None and scope.kind != "module":
            if scope.kind in ("function", "lambda") and name in scope.local_names:
                return scope
            scope = scope.parent
        return None


class FileScopes:
    """Every scope of one parsed file, by node and by qualified name."""

    def __init__(self, tree: ast.Module, lazy: bool = False) -> None:
        self.lazy = lazy  # an installed library's file: each scope is walked when the model first needs it
        self._walked: set[int] = set()
        self.module = Scope(tree, "", "module", None)
        self.by_node: dict[int, Scope] = {id(tree): self.module}
        # qualname -> its definition; the n-th definition of a name is `name#n` (a list: the tables' shape).
        self.functions: dict[str, list[Scope]] = {}
        self.classes: dict[str, list[Scope]] = {}
        # Module-level names a function rebinds through `global NAME`, and names stored as an
        # attribute anywhere in the file (`config.DEBUG = True`): their constant value is not final.
        self.rebound_globals: set[str] = set()
        self.stored_attributes: set[str] = set()
        self.nonlocal_anywhere: set[str] = set()  # names some nested function rebinds with `nonlocal`
        self.read_in_scopes: dict[int, set[str]] = {}  # id(scope) -> names its nested scopes read
        self._flows: dict[int, object] = {}
        self._walk(tree, self.module, deep=not lazy)
        self._walked.add(id(self.module))
        self._bindings: Optional[dict[str, list[ast.stmt]]] = None
        self.tree = tree

    def module_bindings(self, name: str) -> list[ast.stmt]:
        """The top-level statements that bind global `name` (also inside top-level if/try/with/for
        blocks), and every `from m import *`: what a library module runs when one of its names is read."""
        if self._bindings is None:
            self._bindings = {}
            for statement in _top_level(self.tree.body):
                for bound in _bound_names(statement):
                    self._bindings.setdefault(bound, []).append(statement)
        return self._bindings.get(name, []) + self._bindings.get("*", [])

    def flow(self, scope: Scope):
        """The reaching definitions of `scope`'s own code (flow.py), computed on first use."""
        found = self._flows.get(id(scope))
        if found is None:
            from compile_lint.analysis.model.flow import ScopeFlow  # noqa: PLC0415 - flow imports nothing here

            node = scope.node
            if scope.kind == "module":
                untracked = self.rebound_globals | self.stored_attributes
            else:
                untracked = set(self.nonlocal_anywhere)
            if isinstance(node, ast.Lambda):
                body: list = []
            else:
                body = list(node.body)
            parameters_here: tuple[str, ...] = ()
            function = scope.function
            if function is not None:
                parameters_here = tuple(name for name, _ in parameters(function))
            found = self._flows[id(scope)] = ScopeFlow(body, untracked, parameters_here,
                                                       frozenset(self.read_in_scopes.get(id(scope), ())))
        return found

    def scope_of(self, node: ast.AST) -> Scope:
        """The scope a function, lambda or class node opens (its code walked)."""
        return self.ensure(self.by_node[id(node)])

    def walk_all(self) -> None:
        """Walk every scope of the file (for questions about all its functions: the whole call graph)."""
        while True:
            pending = [scope for scope in list(self.by_node.values()) if id(scope) not in self._walked]
            if not pending:
                return
            for scope in pending:
                self.ensure(scope)

    def ensure(self, scope: Scope) -> Scope:
        """`scope`, its own code walked: a lazy file walks a class body when the class is defined and a
        function (with everything nested in it) when it is first evaluated."""
        if id(scope) not in self._walked:
            self._walked.add(id(scope))
            self._walk(scope.node, scope, deep=scope.kind != "class", only_body=True)
        return scope

    # ----- the one walk -----
    def _walk(self, node: ast.AST, scope: Scope, deep: bool = True, only_body: bool = False) -> None:
        """Walk `scope`'s code from `node` (its body alone with `only_body`), opening nested scopes; nested
        functions and classes are walked too with `deep` (lambdas always)."""
        if only_body:
            body = [node.body] if isinstance(node, ast.Lambda) else list(getattr(node, "body", []))
            pending: list[tuple[ast.AST, Scope]] = [(child, scope) for child in body]
        else:
            pending = [(child, scope) for child in ast.iter_child_nodes(node)]
        pending.reverse()
        while pending:
            current, owner = pending.pop()
            opened = self._open(current, owner)
            if opened is not None:
                children = self._scope_children(current, owner, opened)
                if deep or opened.kind == "lambda":
                    self._walked.add(id(opened))
                else:
                    children = [(child, parent) for child, parent in children if parent is owner]
            else:
                self._note(current, owner)
                children = [(child, owner) for child in ast.iter_child_nodes(current)]
            children.reverse()
            pending.extend(children)

    def _open(self, node: ast.AST, owner: Scope) -> Optional[Scope]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            owner.has_nested = True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if isinstance(node, ast.Lambda):
                owner.lambdas += 1
                name = f"<lambda{owner.lambdas}>"
            else:
                owner.local_names.add(node.name)
                name = node.name
            kind = "lambda" if isinstance(node, ast.Lambda) else "function"
            scope = self._add(node, self._child_name(owner, name), kind, owner, self.functions)
            scope.local_names.update(parameter for parameter, _ in parameters(node))
            return scope
        if isinstance(node, ast.ClassDef):
            owner.local_names.add(node.name)
            return self._add(node, self._child_name(owner, node.name), "class", owner, self.classes)
        return None

    def _scope_children(self, node: ast.AST, owner: Scope, opened: Scope) -> list[tuple[ast.AST, Scope]]:
        """A scope node's children: decorators, defaults, bases and annotations belong to the enclosing
        scope, the body to the new one."""
        outer: list[ast.AST] = []
        inner: list[ast.AST] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            outer += node.decorator_list + _defaults(node.args)
            inner += node.body
        elif isinstance(node, ast.Lambda):
            outer += _defaults(node.args)
            inner.append(node.body)
        elif isinstance(node, ast.ClassDef):
            outer += node.decorator_list + node.bases + [keyword.value for keyword in node.keywords]
            inner += node.body
        return [(child, owner) for child in outer] + [(child, opened) for child in inner]

    def _add(self, node: ScopeNode, qualname: str, kind: str, owner: Scope,
             table: dict[str, list[Scope]]) -> Scope:
        if qualname in table:
            # A name defined again (a property's setter, a def in each branch of an `if`) is another
            # function: `Cls.total#2` (the file analysis numbers them the same way).
            qualname = f"{qualname}#{len(table[qualname]) + 1}"
        scope = Scope(node, qualname, kind, owner)
        self.by_node[id(node)] = scope
        table.setdefault(qualname, []).append(scope)
        return scope

    @staticmethod
    def _child_name(owner: Scope, name: str) -> str:
        return f"{owner.qualname}.{name}" if owner.qualname else name

    def _note(self, node: ast.AST, scope: Scope) -> None:
        """Record what `node` binds in `scope`, and what it says about the file's globals."""
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and scope.parent is not None:
            outer: Optional[Scope] = scope.parent
            while outer is not None:
                self.read_in_scopes.setdefault(id(outer), set()).add(node.id)
                outer = outer.parent
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            scope.local_names.add(node.id)
        elif isinstance(node, ast.Global):
            scope.global_names.update(node.names)
            self.rebound_globals.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            scope.nonlocal_names.update(node.names)
            self.nonlocal_anywhere.update(node.names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    scope.local_names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            scope.local_names.add(node.name)
        elif isinstance(node, ast.MatchAs) and node.name:
            scope.local_names.add(node.name)
        elif isinstance(node, ast.MatchStar) and node.name:
            scope.local_names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            self.stored_attributes.add(node.attr)
        elif isinstance(node, (ast.Yield, ast.YieldFrom)) and scope.kind in ("function", "lambda"):
            scope.is_generator = True
        elif isinstance(node, ast.Call) and _spelled_name(node.func) in _COMPILE_NAMES:
            scope.calls_compile = True
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            # An assignment expression binds in the nearest function scope, also from a comprehension.
            scope.local_names.add(node.target.id)

    def local(self, scope: Scope, name: str) -> bool:
        """Whether `name` is local to `scope` (not declared global or nonlocal there)."""
        return name in scope.local_names and name not in scope.global_names and name not in scope.nonlocal_names


def _top_level(body: list[ast.stmt]):
    """A module's statements, those inside top-level if/try/with/for blocks included."""
    pending = list(reversed(body))
    while pending:
        statement = pending.pop()
        if isinstance(statement, (ast.If, ast.Try, ast.With, ast.For, ast.While)) or \
                type(statement).__name__ == "TryStar":
            inner: list[ast.stmt] = list(getattr(statement, "body", []))
            inner += getattr(statement, "orelse", [])
            inner += getattr(statement, "finalbody", [])
            for handler in getattr(statement, "handlers", []):
                inner += handler.body
            pending.extend(reversed(inner))
            continue
        yield statement


def _bound_names(statement: ast.stmt) -> list[str]:
    """The names a simple statement binds at module level ("*" for a star import)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".")[0] if alias.name != "*" else "*" for alias in statement.names]
    targets: list[ast.AST] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    return [node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)]


_COMPILE_NAMES = frozenset({"compile", "cond", "optimize"})


def _spelled_name(func: ast.AST) -> Optional[str]:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _defaults(arguments: ast.arguments) -> list[ast.AST]:
    found: list[ast.AST] = list(arguments.defaults)
    found += [default for default in arguments.kw_defaults if default is not None]
    return found


def parameters(function: FunctionNode) -> Iterator[tuple[str, str]]:
    """(name, kind) of each parameter in order; kind is "positional", "keyword", "varargs" or "varkeywords"."""
    arguments = function.args
    for argument in (*arguments.posonlyargs, *arguments.args):
        yield argument.arg, "positional"
    if arguments.vararg is not None:
        yield arguments.vararg.arg, "varargs"
    for argument in arguments.kwonlyargs:
        yield argument.arg, "keyword"
    if arguments.kwarg is not None:
        yield arguments.kwarg.arg, "varkeywords"


def default_nodes(function: FunctionNode) -> dict[str, ast.expr]:
    """Parameter name -> its default expression."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    found: dict[str, ast.expr] = {}
    for argument, default in zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults):
        found[argument.arg] = default
    for argument, keyword_default in zip(arguments.kwonlyargs, arguments.kw_defaults):
        if keyword_default is not None:
            found[argument.arg] = keyword_default
    return found


def comprehension_kinds() -> tuple[type, ...]:
    """The comprehension node types (evaluated inline in the scope that holds them)."""
    return _COMPREHENSIONS

"""One walk of one file's `ast` that makes its `FileSummary` (summary.py), for the project and symbol indexes.

First the module's statements (top level, and inside top-level `if`/`try` blocks, which
bind names too: `if is_torch_available(): from .x import y`) give the import table and
the top-level aliases; then one walk of every statement records the functions, classes,
calls, local aliases and compile calls. Eager-only branches (`if not is_compiling():`) are
judged with the same predicate tables as `regions.py` (imported from `syntax.predicates`,
not copied). Names are interned and equal arguments and makers shared: a project keeps a
summary of every file.
"""

from __future__ import annotations

import ast
import hashlib
import sys
import tokenize
from typing import Iterable, Iterator, Optional, Sequence, Union

from compile_lint.analysis.project.expressions import (
    callee_spelling,
    compiled_spellings,
    dotted,
    value_spellings,
)
from compile_lint.analysis.project.summary import (
    MODULE_SCOPE,
    UNKNOWN,
    Binding,
    CallSite,
    ClassInfo,
    FileSummary,
    FunctionInfo,
)
from compile_lint.analysis.syntax.ast_walk import ast_nodes
from compile_lint.analysis.syntax.predicates import (
    COMPILE_FUNCTIONS,
    COMPILING_PREDICATE_NAMES,
    COMPILING_PREDICATES,
    EAGER_PREDICATE_NAMES,
    EAGER_PREDICATES,
)

_intern = sys.intern
_PARSE_ERRORS = (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError)


def module_statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's statements that bind its names: top level, and inside top-level `if` and `try` blocks."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from module_statements(stmt.body)
            yield from module_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                yield from module_statements(block)


def relative_name(level: int, module: Optional[str], name: str = "") -> str:
    """How a relative import spells its target: `from ..a import b` -> "..a.b", `from . import b` -> ".b"."""
    dots = "." * level
    head = dots + (module or "")
    if not name:
        return head
    return f"{head}{name}" if head.endswith(".") or not head else f"{head}.{name}"


def import_bindings(stmt: ast.stmt) -> list[tuple[str, str]]:
    """(local name, qualified name) of each name an import statement binds, as Python binds them.

    `import a.b` binds `a` to `a`; `import a.b as c`, `c` to `a.b`; `from .m import f as g`,
    `g` to ".m.f" (relative names keep their dots). A star import binds nothing known.
    """
    if isinstance(stmt, ast.Import):
        return [(alias.asname, alias.name) if alias.asname else (alias.name.split(".")[0],) * 2
                for alias in stmt.names]
    if isinstance(stmt, ast.ImportFrom):
        return [(alias.asname or alias.name, relative_name(stmt.level, stmt.module, alias.name))
                for alias in stmt.names if alias.name != "*"]
    return []


def summarise_source(path: str, data: bytes) -> FileSummary:
    """The summary of one file's bytes (an empty one when it does not parse)."""
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    try:
        text = data.decode(tokenize.detect_encoding(iter(data.splitlines(keepends=True)).__next__)[0])
        tree = ast.parse(text, filename=path)
    except _PARSE_ERRORS:
        return FileSummary(path, digest)
    try:
        return _Summariser(tree, FileSummary(path, digest)).run()
    except RecursionError:
        return FileSummary(path, digest)


def summarise_file(path: str) -> Optional[FileSummary]:
    """The summary of the file `path`; None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return summarise_source(path, data)


class _Summariser:
    """One walk of one module's `ast`."""

    def __init__(self, tree: ast.Module, summary: FileSummary) -> None:
        self.summary = summary
        self.tree = tree
        self._calls: dict[int, tuple[FunctionInfo, list[CallSite]]] = {}  # id(scope) -> the scope, its calls
        self._module_level: set[str] = set()
        self._compiled: list[tuple[str, int, str]] = []
        self._shared: dict[object, object] = {}  # one object for equal tuples and bindings
        # The `self.NAME(...)` names of the method being walked (None outside methods).
        self._self_calls: Optional[set[str]] = None

    def _share(self, item):
        """`item`, or the equal one this file already holds (summaries are never changed once made)."""
        return self._shared.setdefault(item, item)

    # ----- names -----
    def _qualified(self, spelling: Optional[str]) -> str:
        return self.summary.qualify(spelling) if spelling else ""

    def _predicate(self, call: ast.Call) -> Optional[str]:
        """The role of an is-compiling / eager predicate call (the tables of regions.py)."""
        spelling = dotted(call.func)
        if spelling is None:
            return None
        name = self._qualified(spelling)
        last = name.rsplit(".", 1)[-1]
        if name in COMPILING_PREDICATES:
            return "compiling"
        if name in EAGER_PREDICATES or (last in EAGER_PREDICATE_NAMES and not call.args):
            return "never"
        if spelling.split(".")[0] in ("self", "cls") or name.startswith("torch.jit."):
            return None
        if last in COMPILING_PREDICATE_NAMES and not call.args:
            return "compiling"
        parts = name.split(".")
        if last == "is_tracing" and len(parts) > 1 and parts[-2] in ("utils", "import_utils") and len(call.args) <= 1:
            return "compiling"
        return None

    def _sense(self, test: ast.AST, eagerly: bool, bindings: dict[str, ast.AST], depth: int = 0) -> Optional[bool]:
        if depth > 10:
            return None
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._sense(test.operand, eagerly, bindings, depth + 1)
            return None if inner is None else not inner
        if isinstance(test, ast.BoolOp):
            senses = [self._sense(v, eagerly, bindings, depth + 1) for v in test.values]
            decisive = isinstance(test.op, ast.Or)
            if decisive in senses:
                return decisive
            return (not decisive) if all(s is (not decisive) for s in senses) else None
        if isinstance(test, ast.Name) and test.id in bindings:
            return self._sense(bindings[test.id], eagerly, bindings, depth + 1)
        if not isinstance(test, ast.Call):
            return None
        if dotted(test.func) == "bool" and len(test.args) == 1:
            return self._sense(test.args[0], eagerly, bindings, depth + 1)
        role = self._predicate(test)
        if role == "compiling":
            return not eagerly
        if role == "never":
            return False
        return None

    # ----- module -----
    def run(self) -> FileSummary:
        self._module_names(self.tree.body)
        self._module_level = set(self.summary.imports) | set(self.summary.aliases) | {
            stmt.name for stmt in module_statements(self.tree.body)
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        module = FunctionInfo(MODULE_SCOPE, MODULE_SCOPE, None, 0, 0, 0)
        self.summary.functions[MODULE_SCOPE] = module
        self._body(self.tree.body, module, None, prefix="", eager=False, bindings={}, params=frozenset())
        for function in self.summary.functions.values():
            function.calls = tuple(self._calls_of(function))
        self.summary.compiled = tuple(self._compiled)
        return self.summary

    def _module_names(self, body: Iterable[ast.stmt]) -> None:
        summary = self.summary
        stars: list[str] = []
        for stmt in module_statements(body):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for local, qualified in import_bindings(stmt):
                    summary.imports[_intern(local)] = _intern(qualified)
                if isinstance(stmt, ast.ImportFrom) and any(alias.name == "*" for alias in stmt.names):
                    stars.append(_intern(relative_name(stmt.level, stmt.module)))
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                spellings = value_spellings(stmt.value)
                if spellings:
                    summary.aliases[_intern(stmt.targets[0].id)] = self._binding(spellings, stmt.value)
        summary.star_imports = tuple(stars)

    def _binding(self, spellings: tuple[str, ...], value: ast.AST, class_attribute: bool = False) -> Binding:
        func = dotted(value.func) if isinstance(value, ast.Call) else None
        spelled = func + "()" if func else dotted(value)
        return self._share(Binding(self._names(spellings), spelled and _intern(spelled), class_attribute))

    def _names(self, spellings: Iterable[str]) -> tuple[str, ...]:
        return self._share(tuple(_intern(spelling) for spelling in spellings))

    def _body(self, body: Sequence[ast.stmt], scope: FunctionInfo, owner: Optional[str], prefix: str,
              eager: bool, bindings: dict[str, ast.AST], params: frozenset[str]) -> None:
        for stmt in body:
            self._statement(stmt, scope, owner, prefix, eager, bindings, params)
            # `if is_compiling(): return x` leaves the rest of the block to eager runs.
            if (isinstance(stmt, ast.If) and not stmt.orelse and stmt.body
                    and isinstance(stmt.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))
                    and self._sense(stmt.test, False, bindings) is True):
                eager = True

    def _statement(self, stmt: ast.stmt, scope: FunctionInfo, owner: Optional[str], prefix: str,
                   eager: bool, bindings: dict[str, ast.AST], params: frozenset[str]) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function(stmt, scope, owner, prefix)
            return
        if isinstance(stmt, ast.ClassDef):
            self._class(stmt, prefix)
            return
        if isinstance(stmt, ast.If):
            self._expression(stmt.test, scope, eager, params)
            compiled = self._sense(stmt.test, False, bindings)
            self._body(stmt.body, scope, owner, prefix, eager or compiled is False, bindings, params)
            self._body(stmt.orelse, scope, owner, prefix, eager or compiled is True, bindings, params)
            return
        self._simple_statement(stmt, scope, owner, prefix, eager, bindings, params)

    def _simple_statement(self, stmt: ast.stmt, scope: FunctionInfo, owner: Optional[str], prefix: str,
                          eager: bool, bindings: dict[str, ast.AST], params: frozenset[str]) -> None:
        if isinstance(stmt, ast.Assign):
            self._assignment(stmt.targets, stmt.value, scope, owner)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._assignment([stmt.target], stmt.value, scope, owner)
        for _, value in ast.iter_fields(stmt):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self._body(value, scope, owner, prefix, eager, bindings, params)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.ExceptHandler):  # the one kind of excepthandler
                        self._text_self_calls(item.type)
                        self._body(item.body, scope, owner, prefix, eager, bindings, params)
                    elif isinstance(item, ast.AST):
                        self._expression(item, scope, eager, params)
            elif isinstance(value, ast.AST):
                self._expression(value, scope, eager, params)

    def _add_alias(self, scope: FunctionInfo, name: str, spellings: tuple[str, ...]) -> None:
        scope.aliases[_intern(name)] = self._share(scope.bound(scope.aliases, name, self._names(spellings)))

    def _assignment(self, targets: Sequence[ast.AST], value: ast.AST, scope: FunctionInfo,
                    owner: Optional[str]) -> None:
        spellings = value_spellings(value)
        for target in targets:
            if isinstance(target, ast.Name) and scope.qualname != MODULE_SCOPE:
                self._add_alias(scope, target.id, spellings or (UNKNOWN,))
            elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                  and target.value.id == "self" and owner is not None):
                cls = self.summary.classes.get(owner)
                if cls is not None:
                    binding = self._binding(spellings or (UNKNOWN,), value)
                    cls.makers[_intern(target.attr)] = cls.makers.get(target.attr, ()) + (binding,)
                # `self.m = torch.compile(self.m)`
                if isinstance(value, ast.Call) and self._qualified(dotted(value.func)) in COMPILE_FUNCTIONS:
                    self._compile_call(value, scope)
            elif isinstance(target, ast.Attribute) and isinstance(value, ast.Call):
                if self._qualified(dotted(value.func)) in COMPILE_FUNCTIONS:
                    self._compile_call(value, scope)

    def _compile_entry(self, scope: str, line: int, spelling: str) -> None:
        entry = (_intern(scope), line, _intern(spelling))
        if entry not in self._compiled:
            self._compiled.append(entry)

    def _compile_call(self, call: ast.Call, scope: FunctionInfo) -> None:
        if call.args:
            for spelling in compiled_spellings(call.args[0]):
                self._compile_entry(scope.qualname, call.lineno, spelling)

    def _expression(self, node: ast.AST, scope: FunctionInfo, eager: bool, params: frozenset[str]) -> None:
        pending = [(node, eager)]
        callees: set[int] = set()  # a call's callee is no attribute read (`self.m(x)`)
        while pending:
            current, branch_eager = pending.pop()
            kind = type(current)
            if kind is ast.Lambda:
                self._text_self_calls(current)  # a lambda's calls are not the function's own
                continue
            if isinstance(current, ast.IfExp):
                compiled = self._sense(current.test, False, {})
                pending.append((current.test, branch_eager))
                pending.append((current.body, branch_eager or compiled is False))
                pending.append((current.orelse, branch_eager or compiled is True))
                continue
            if isinstance(current, ast.Call):
                self._call(current, scope, branch_eager, params)
                callees.add(id(current.func))
            for child in ast.iter_child_nodes(current):
                pending.append((child, branch_eager))

    def _call(self, call: ast.Call, scope: FunctionInfo, eager: bool, params: frozenset[str]) -> None:
        func = call.func
        if (self._self_calls is not None and type(func) is ast.Attribute and type(func.value) is ast.Name
                and func.value.id == "self"):
            self._self_calls.add(func.attr)
        callee = callee_spelling(func)
        if callee is None:
            return
        qualified = self._qualified(callee)
        if qualified in COMPILE_FUNCTIONS:
            self._compile_call(call, scope)
        elif callee.endswith(".compile") and not call.args and isinstance(func, ast.Attribute):
            receiver = dotted(func.value)
            if receiver and receiver != "torch":
                self._compile_entry(scope.qualname, call.lineno, f"{receiver}()")
        self._calls_of(scope).append(CallSite(_intern(callee), call.lineno, eager))

    def _calls_of(self, scope: FunctionInfo) -> list[CallSite]:
        entry = self._calls.get(id(scope))
        if entry is None:  # the scope is kept with its list: its id is not reused while walking
            entry = self._calls[id(scope)] = (scope, [])
        return entry[1]

    def _text_self_calls(self, node: Optional[ast.AST]) -> None:
        """The `self.NAME(...)` calls in a part of a method whose calls the walk does not record
        (a lambda, a decorator)."""
        if self._self_calls is None or node is None:
            return
        for inner in ast_nodes(node):
            if type(inner) is ast.Call:
                func = inner.func
                if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self":
                    self._self_calls.add(func.attr)

    def _function(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef], parent: FunctionInfo,
                  owner: Optional[str], prefix: str, method: bool = False) -> None:
        qualname = _intern(f"{prefix}{node.name}")
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        decorators = []
        for decorator in node.decorator_list:
            called = decorator.func if isinstance(decorator, ast.Call) else decorator
            spelling = dotted(called)
            if spelling:
                decorators.append(self._qualified(spelling))
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
        params = [self._share((_intern(a.arg), a.annotation is not None, d is not None))
                  for a, d in zip(positional, defaults)]
        params += [self._share((_intern(a.arg), a.annotation is not None, d is not None))
                   for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults)]
        names = frozenset(p[0] for p in params)
        info = FunctionInfo(qualname, _intern(node.name), owner, node.lineno, first, node.end_lineno or node.lineno,
                            self._names(decorators), self._share(tuple(params)))
        if parent.qualname != MODULE_SCOPE and parent.owner != "":  # inside a function, not a class body
            info.parent = parent.qualname
            parent.nested = parent.nested + (qualname,)
        self.summary.functions[qualname] = info
        for decorator_name in info.decorators:
            if decorator_name in COMPILE_FUNCTIONS:
                self._compile_entry(MODULE_SCOPE, node.lineno, qualname)
        # Decorators and defaults run where the `def` is: in the enclosing method, if any.
        for decorator in node.decorator_list:
            self._text_self_calls(decorator)
        for default in [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]:
            self._expression(default, parent, False, frozenset())
        enclosing = self._self_calls
        if method:  # its own `self`: a method of a class inside a method calls nothing for that one
            self._self_calls = set()
        bindings = _single_bindings(node)
        self._body(node.body, info, owner, f"{qualname}.", False, bindings, names)
        if method:
            info.self_calls = self._names(sorted(self._self_calls or ()))
            self._self_calls = enclosing

    def _class(self, node: ast.ClassDef, prefix: str) -> None:
        qualname = _intern(f"{prefix}{node.name}")
        bases = self._names(s for s in (dotted(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases)
                            if s)
        cls = ClassInfo(qualname, node.lineno, bases, {})
        self.summary.classes.setdefault(qualname, cls)
        # A class inside a method: its bases and body run where the method's `self` is seen.
        for part in (*node.bases, *node.keywords, *node.decorator_list):
            self._text_self_calls(part)
        scope = FunctionInfo(qualname, node.name, "", node.lineno, node.lineno, node.end_lineno or node.lineno)
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                cls.methods[_intern(stmt.name)] = _intern(f"{qualname}.{stmt.name}")
                self._function(stmt, scope, qualname, f"{qualname}.", method=True)
                continue
            if isinstance(stmt, ast.ClassDef):
                self._class(stmt, f"{qualname}.")
                continue
            self._text_self_calls(stmt)
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                spellings = value_spellings(stmt.value)
                if spellings and all(not s.endswith("()") for s in spellings):
                    # a class attribute alias: `act = staticmethod(gelu)`
                    binding = self._binding(spellings, stmt.value, class_attribute=True)
                    cls.makers[_intern(stmt.targets[0].id)] = (binding,)


def _single_bindings(function: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> dict[str, ast.AST]:
    """Names bound once by a plain `name = value` in `function` (`compiling = is_compiling()`)."""
    counts: dict[str, int] = {}
    values: dict[str, ast.AST] = {}
    for node in ast_nodes(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    counts[target.id] = counts.get(target.id, 0) + 1
                    values[target.id] = node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name):
            counts[node.target.id] = counts.get(node.target.id, 0) + 2
    return {name: values[name] for name, count in counts.items() if count == 1 and name in values}

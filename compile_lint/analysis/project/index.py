"""Per-file summaries of the project, read with `ast` (never libcst), cached on disk by file digest.

One summary per file holds what the call graph needs and nothing a rule needs: every
function and method (qualified name inside the file, span, decorators as spelled, its
parameters), each call it makes (the callee as spelled, e.g. `commons.f`, `self.head.loss`,
`super().forward`, `Search().run`; the arguments that may be functions; which arguments are
literals or sizes and which are the caller's own parameters; whether the call sits in a
branch only eager runs reach), local function aliases (`fn = a if c else b`,
`fn = partial(a, ...)`, `blk` in `for blk in self.blocks`), the classes with their bases,
methods and what makes each `self.NAME` (`Encoder()`, a ModuleList of `Block()`, a function
such as `gelu`), the file's imports and top-level aliases, and its `torch.compile(...)` /
`.compile()` calls. Eager-only branches are judged with the same predicate tables as
`regions.py` (imported from there, not copied).

Summaries are plain data (picklable), built in parallel by the caller's map function when
there are many files, and kept in one cache file per project next to the lint cache: an
entry is reused while the file's stat is unchanged, or, when only the stat changed, while
the digest of its bytes is.
"""

from __future__ import annotations

import ast
import hashlib
import os
import pickle
import tokenize
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

from compile_lint.analysis.syntax.ast_walk import ast_nodes
from compile_lint.analysis.syntax.predicates import (
    COMPILE_FUNCTIONS, COMPILING_PREDICATE_NAMES, COMPILING_PREDICATES, EAGER_PREDICATE_NAMES, EAGER_PREDICATES,
)
from compile_lint.analysis.project.symbols import dotted_parts, relative_name
from compile_lint.storage.atomic import atomic_file
from compile_lint.storage.stamps import file_stamp

INDEX_FORMAT = 2
MODULE_SCOPE = "<module>"
# Spelled argument tags: a literal or a size (a Python value), the caller's own parameter, anything else.
PY, PARAM, OTHER = "py", "param", "other"
# More tags: a tensor by its syntax (`self.proj(x)`, `torch.cat(...)`, `x.abs()` of a tensor),
# and a local of the caller (its bindings' tags, `FunctionInfo.local_tags`, decide).
TENSOR, LOCAL = "tensor", "local"
# Tensor methods whose result is no tensor.
_PYTHON_METHODS = frozenset({"item", "tolist", "size", "dim", "numel", "ndimension", "__len__", "is_contiguous",
                             "is_floating_point", "data_ptr", "element_size", "get_device", "nelement"})
_SIZE_METHODS = frozenset({"size", "dim", "numel", "ndimension", "__len__"})
_SIZE_BUILTINS = frozenset({"len", "int", "float", "bool", "str", "range", "isinstance", "getattr", "hasattr"})
_PARTIAL = frozenset({"functools.partial", "partial"})
_CONTAINERS = frozenset({"nn.ModuleList", "nn.Sequential", "torch.nn.ModuleList", "torch.nn.Sequential",
                         "ModuleList", "Sequential"})

@dataclass(frozen=True)
class Arg:
    """One argument of a call: its spelling when it is a dotted name (maybe a function) and its tag."""

    spelling: Optional[str]
    tag: str  # PY | PARAM | OTHER
    keyword: Optional[str] = None


@dataclass(frozen=True)
class CallSite:
    """A call in a function: the callee as spelled, where, its arguments, and whether only eager runs reach it."""

    callee: str
    line: int
    args: tuple[Arg, ...] = ()
    eager: bool = False
    starred: bool = False


@dataclass
class FunctionInfo:
    """A function or method of the file (`qualname`: `f`, `Cls.method`, `outer.inner`)."""

    qualname: str
    name: str
    owner: Optional[str]  # the qualname of the class of a method (also of its nested functions)
    line: int
    first_line: int
    end_line: int
    decorators: tuple[str, ...] = ()
    params: tuple[tuple[str, bool, bool], ...] = ()  # (name, annotated, has a default)
    calls: list[CallSite] = field(default_factory=list)
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    called_params: frozenset[str] = frozenset()
    nested: tuple[str, ...] = ()
    parent: Optional[str] = None  # the enclosing function of a nested one
    # Local name -> the tag of each value a plain `name = value` binds it to: "tensor", "py",
    # "param:NAME", "local:NAME" or "other" (what a call passing the local passes).
    local_tags: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class ClassInfo:
    """A class: bases and methods as spelled, and what makes each `self.NAME`."""

    qualname: str
    line: int
    bases: tuple[str, ...]
    methods: dict[str, str]  # name -> function qualname
    makers: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass
class FileSummary:
    """What the call graph needs of one file."""

    path: str
    digest: str
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)  # local -> qualified (relative ones keep their dots)
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # top-level `A = b.c` / partial
    # (scope qualname, line, target spelling) of `torch.compile(X)`, `X.compile()`, `@torch.compile`
    compiled: list[tuple[str, int, str]] = field(default_factory=list)

    def qualify(self, spelling: str) -> str:
        """`spelling` with its head replaced by what the file imported it as."""
        head, _, rest = spelling.partition(".")
        target = self.imports.get(head)
        if target is None:
            return spelling
        return f"{target}.{rest}" if rest else target


def _dotted(node: ast.AST) -> Optional[str]:
    parts = dotted_parts(node)
    return ".".join(parts) if parts else None


def callee_spelling(func: ast.AST) -> Optional[str]:
    """How a call's callee is spelled: `a.b`, `super().m`, `Cls().m`, `self.blocks[]` (an element), or None."""
    dotted = _dotted(func)
    if dotted is not None:
        return dotted
    if isinstance(func, ast.Subscript):
        inner = _dotted(func.value)
        return f"{inner}[]" if inner else None
    if isinstance(func, ast.Call):
        inner = callee_spelling(func.func)
        if inner in _PARTIAL and func.args:
            return _dotted(func.args[0])  # partial(f, ...)(x) calls f
        return None
    if isinstance(func, ast.Attribute):
        receiver = func.value
        if isinstance(receiver, ast.Call):
            made = callee_spelling(receiver.func)
            if made == "super":
                return f"super().{func.attr}"
            if made and "(" not in made:
                return f"{made}().{func.attr}"
        elif isinstance(receiver, ast.Subscript):
            inner = _dotted(receiver.value)
            if inner:
                return f"{inner}[].{func.attr}"
    return None


def _value_spellings(value: ast.AST, depth: int = 0) -> tuple[str, ...]:
    """What a binding makes a name call: `a`, `a if c else b`, `partial(a, ...)`, `Cls(...)` (an instance)."""
    if depth > 4:
        return ()
    if isinstance(value, ast.IfExp):
        return _value_spellings(value.body, depth + 1) + _value_spellings(value.orelse, depth + 1)
    dotted = _dotted(value)
    if dotted is not None:
        return (dotted,)
    if isinstance(value, ast.Subscript):
        inner = _dotted(value.value)
        return (f"{inner}[]",) if inner else ()
    if isinstance(value, ast.Call):
        callee = callee_spelling(value.func)
        if callee is None:
            return ()
        if callee.rsplit(".", 1)[-1] == "partial" and value.args:
            return _value_spellings(value.args[0], depth + 1)
        if callee.rsplit(".", 1)[-1] in ("ModuleList", "Sequential"):
            elements = _container_elements(value)
            return tuple(f"[]{e}" for e in elements) if elements else ()
        if "(" not in callee and "[" not in callee:
            return (f"{callee}()",)
    return ()


def _container_elements(call: ast.Call) -> tuple[str, ...]:
    """The class spellings of the modules in `nn.ModuleList([Block() for ...])` / `nn.Sequential(A(), B())`."""
    items: list[ast.AST] = []
    for arg in call.args:
        value = arg.value if isinstance(arg, ast.Starred) else arg
        if isinstance(value, (ast.List, ast.Tuple)):
            items.extend(value.elts)
        elif isinstance(value, (ast.ListComp, ast.GeneratorExp)):
            items.append(value.elt)
        else:
            items.append(value)
    found = []
    for item in items:
        if isinstance(item, ast.Call):
            callee = _dotted(item.func)
            if callee:
                found.append(callee)
    return tuple(dict.fromkeys(found))


def _arg(value: ast.AST, params: frozenset[str], keyword: Optional[str] = None) -> Arg:
    spelling = _dotted(value)
    if isinstance(value, ast.Constant):
        return Arg(None, PY, keyword)
    if isinstance(value, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant) for e in value.elts):
        return Arg(None, PY, keyword)
    if isinstance(value, ast.Name) and value.id in params:
        return Arg(value.id, PARAM, keyword)
    if isinstance(value, ast.Name):
        return Arg(value.id, LOCAL, keyword)
    if isinstance(value, ast.Attribute) and value.attr in ("shape", "ndim", "training", "dtype", "device"):
        return Arg(spelling, PY, keyword)
    if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Attribute) and value.value.attr == "shape":
        return Arg(None, PY, keyword)
    if isinstance(value, ast.Call):
        callee = _dotted(value.func) or ""
        last = callee.rsplit(".", 1)[-1]
        if callee in _SIZE_BUILTINS or (isinstance(value.func, ast.Attribute) and last in _SIZE_METHODS):
            return Arg(None, PY, keyword)
    return Arg(spelling, OTHER, keyword)


def value_tag(value: ast.AST, params: frozenset[str], qualify: Callable[[str], str], depth: int = 0) -> str:
    """What an expression passes, by its syntax: "tensor", "py", "param:NAME", "local:NAME" or "other"."""
    if depth > 6:
        return OTHER
    if isinstance(value, ast.Name):
        return f"param:{value.id}" if value.id in params else f"local:{value.id}"
    spelled = _arg(value, frozenset())
    if spelled.tag == PY:
        return PY
    if isinstance(value, ast.Call):
        func = value.func
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
            return TENSOR  # a submodule's call
        callee = _dotted(func)
        if callee is not None and qualify(callee).startswith("torch.") and not callee.startswith("torch.is_"):
            return TENSOR
        if isinstance(func, ast.Attribute) and func.attr not in _PYTHON_METHODS:
            receiver = value_tag(func.value, params, qualify, depth + 1)
            return receiver if receiver != PY else OTHER
        return OTHER
    if isinstance(value, ast.BinOp):
        tags = [value_tag(value.left, params, qualify, depth + 1), value_tag(value.right, params, qualify, depth + 1)]
        if TENSOR in tags:
            return TENSOR
        open_tags = [tag for tag in tags if tag != PY]
        return open_tags[0] if len(open_tags) == 1 else (PY if not open_tags else OTHER)
    if isinstance(value, ast.UnaryOp) and not isinstance(value.op, ast.Not):
        return value_tag(value.operand, params, qualify, depth + 1)
    if isinstance(value, ast.Subscript):
        inner = value_tag(value.value, params, qualify, depth + 1)
        return inner if inner == TENSOR else OTHER
    return OTHER


class _Summariser:
    """One walk of one module's `ast`."""

    def __init__(self, tree: ast.Module, summary: FileSummary) -> None:
        self.summary = summary
        self.tree = tree
        self._imports_seen = False

    # ----- names -----
    def _qualified(self, spelling: Optional[str]) -> str:
        return self.summary.qualify(spelling) if spelling else ""

    def _predicate(self, call: ast.Call) -> Optional[str]:
        """The role of an is-compiling / eager predicate call (the tables of regions.py)."""
        spelling = _dotted(call.func)
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
        if _dotted(test.func) == "bool" and len(test.args) == 1:
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
        module = FunctionInfo(MODULE_SCOPE, MODULE_SCOPE, None, 0, 0, 0)
        self.summary.functions[MODULE_SCOPE] = module
        self._body(self.tree.body, module, None, prefix="", eager=False, bindings={}, params=frozenset())
        return self.summary

    def _module_names(self, body: Iterable[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        self.summary.imports[alias.asname] = alias.name
                    else:
                        head = alias.name.split(".")[0]
                        self.summary.imports.setdefault(head, head)
            elif isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if alias.name != "*":
                        self.summary.imports[alias.asname or alias.name] = relative_name(
                            stmt.level, stmt.module, alias.name)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                spellings = _value_spellings(stmt.value)
                if spellings:
                    self.summary.aliases[stmt.targets[0].id] = spellings
            elif isinstance(stmt, ast.If):
                self._module_names(stmt.body)
                self._module_names(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                for block in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                    self._module_names(block)

    def _body(self, body: Sequence[ast.stmt], scope: FunctionInfo, owner: Optional[str], prefix: str,
              eager: bool, bindings: dict[str, ast.AST], params: frozenset[str]) -> None:
        for position, stmt in enumerate(body):
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
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._loop_alias(stmt, scope)
            self._untagged(stmt.target, scope)
        elif isinstance(stmt, ast.AugAssign):
            self._untagged(stmt.target, scope)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    self._untagged(item.optional_vars, scope)
        if isinstance(stmt, ast.Assign):
            self._assignment(stmt.targets, stmt.value, scope, owner)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._assignment([stmt.target], stmt.value, scope, owner)
        for name, value in ast.iter_fields(stmt):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self._body(value, scope, owner, prefix, eager, bindings, params)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.excepthandler):
                        self._body(item.body, scope, owner, prefix, eager, bindings, params)
                    elif isinstance(item, ast.AST):
                        self._expression(item, scope, eager, params)
            elif isinstance(value, ast.AST):
                self._expression(value, scope, eager, params)

    def _untagged(self, target: ast.AST, scope: FunctionInfo) -> None:
        """A local bound some other way than `name = value`: what it holds is not known from here."""
        for node in ast_nodes(target):
            if isinstance(node, ast.Name):
                scope.local_tags[node.id] = scope.local_tags.get(node.id, ()) + (OTHER,)

    def _loop_alias(self, stmt: ast.For, scope: FunctionInfo) -> None:
        """`for blk in self.blocks` / `for i, blk in enumerate(self.blocks)`: `blk` is an element."""
        iterable, target = stmt.iter, stmt.target
        if (isinstance(iterable, ast.Call) and _dotted(iterable.func) == "enumerate" and iterable.args
                and isinstance(target, ast.Tuple) and len(target.elts) == 2):
            iterable, target = iterable.args[0], target.elts[1]
        container = _dotted(iterable)
        if container and isinstance(target, ast.Name):
            scope.aliases[target.id] = scope.aliases.get(target.id, ()) + (f"{container}[]",)

    def _assignment(self, targets: list[ast.AST], value: ast.AST, scope: FunctionInfo, owner: Optional[str]) -> None:
        spellings = _value_spellings(value)
        for target in targets:
            if isinstance(target, ast.Name) and scope.qualname not in (MODULE_SCOPE,) and scope.owner != "":
                params = frozenset(name for name, _, _ in scope.params)
                tag = value_tag(value, params, self.summary.qualify)
                scope.local_tags[target.id] = scope.local_tags.get(target.id, ()) + (tag,)
            elif isinstance(target, (ast.Tuple, ast.List)) and scope.qualname != MODULE_SCOPE:
                for element in target.elts:  # unpacked: what each item is, nobody here knows
                    if isinstance(element, ast.Name):
                        scope.local_tags[element.id] = scope.local_tags.get(element.id, ()) + (OTHER,)
            if isinstance(target, ast.Name) and scope.qualname != MODULE_SCOPE:
                if spellings:
                    scope.aliases[target.id] = scope.aliases.get(target.id, ()) + spellings
                else:
                    scope.aliases[target.id] = scope.aliases.get(target.id, ()) + ("?",)
            elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                  and target.value.id == "self" and owner is not None):
                cls = self.summary.classes.get(owner)
                if cls is not None:
                    cls.makers[target.attr] = cls.makers.get(target.attr, ()) + (spellings or ("?",))
                # `self.m = torch.compile(self.m)`
                if isinstance(value, ast.Call) and self._qualified(_dotted(value.func)) in COMPILE_FUNCTIONS:
                    self._compile_call(value, scope)
            elif isinstance(target, ast.Attribute) and isinstance(value, ast.Call):
                if self._qualified(_dotted(value.func)) in COMPILE_FUNCTIONS:
                    self._compile_call(value, scope)

    def _compile_call(self, call: ast.Call, scope: FunctionInfo) -> None:
        if call.args:
            spelling = _dotted(call.args[0])
            if spelling:
                entry = (scope.qualname, call.lineno, spelling)
                if entry not in self.summary.compiled:
                    self.summary.compiled.append(entry)

    def _expression(self, node: ast.AST, scope: FunctionInfo, eager: bool, params: frozenset[str]) -> None:
        pending = [(node, eager)]
        while pending:
            current, branch_eager = pending.pop()
            kind = type(current)
            if kind is ast.Lambda:
                continue
            if kind is ast.IfExp:
                compiled = self._sense(current.test, False, {})
                pending.append((current.test, branch_eager))
                pending.append((current.body, branch_eager or compiled is False))
                pending.append((current.orelse, branch_eager or compiled is True))
                continue
            if kind is ast.Call:
                self._call(current, scope, branch_eager, params)
            for child in ast.iter_child_nodes(current):
                pending.append((child, branch_eager))

    def _call(self, call: ast.Call, scope: FunctionInfo, eager: bool, params: frozenset[str]) -> None:
        callee = callee_spelling(call.func)
        if callee is None:
            return
        qualified = self._qualified(callee)
        if qualified in COMPILE_FUNCTIONS:
            self._compile_call(call, scope)
        elif callee.endswith(".compile") and not call.args and isinstance(call.func, ast.Attribute):
            receiver = _dotted(call.func.value)
            if receiver and receiver != "torch":
                entry = (scope.qualname, call.lineno, f"{receiver}()")
                if entry not in self.summary.compiled:
                    self.summary.compiled.append(entry)
        args = [self._passed(a.value if isinstance(a, ast.Starred) else a, params) for a in call.args]
        args += [self._passed(k.value, params, k.arg) for k in call.keywords if k.arg is not None]
        starred = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
        scope.calls.append(CallSite(callee, call.lineno, tuple(args), eager, starred))

    def _passed(self, value: ast.AST, params: frozenset[str], keyword: Optional[str] = None) -> Arg:
        """An argument: its spelling (a function, maybe) and the tag of what it passes."""
        tag = value_tag(value, params, self.summary.qualify)
        kind, _, name = tag.partition(":")
        if kind == "param":
            return Arg(name, PARAM, keyword)
        if kind == "local":
            return Arg(name, LOCAL, keyword)
        return Arg(_dotted(value), tag if tag in (PY, TENSOR) else OTHER, keyword)

    def _function(self, node: ast.FunctionDef, parent: FunctionInfo, owner: Optional[str], prefix: str) -> None:
        qualname = f"{prefix}{node.name}"
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        decorators = []
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            spelling = _dotted(target)
            if spelling:
                decorators.append(self._qualified(spelling))
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
        params = [(a.arg, a.annotation is not None, d is not None) for a, d in zip(positional, defaults)]
        params += [(a.arg, a.annotation is not None, d is not None)
                   for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults)]
        names = frozenset(p[0] for p in params)
        info = FunctionInfo(qualname, node.name, owner, node.lineno, first, node.end_lineno or node.lineno,
                            tuple(decorators), tuple(params))
        if parent.qualname != MODULE_SCOPE and parent.owner != "":  # inside a function, not a class body
            info.parent = parent.qualname
            parent.nested = parent.nested + (qualname,)
        self.summary.functions[qualname] = info
        for decorator in info.decorators:
            if decorator in COMPILE_FUNCTIONS:
                self.summary.compiled.append((MODULE_SCOPE, node.lineno, qualname))
        bindings = _single_bindings(node)
        for default in [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]:
            self._expression(default, parent, False, frozenset())
        self._body(node.body, info, owner, f"{qualname}.", False, bindings, names)
        info.called_params = frozenset(c.callee for c in info.calls if c.callee in names)

    def _class(self, node: ast.ClassDef, prefix: str) -> None:
        qualname = f"{prefix}{node.name}"
        bases = tuple(s for s in (_dotted(b.value if isinstance(b, ast.Subscript) else b) for b in node.bases) if s)
        cls = ClassInfo(qualname, node.lineno, bases, {})
        self.summary.classes.setdefault(qualname, cls)
        scope = FunctionInfo(qualname, node.name, "", node.lineno, node.lineno, node.end_lineno or node.lineno)
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                cls.methods[stmt.name] = f"{qualname}.{stmt.name}"
                self._function(stmt, scope, qualname, f"{qualname}.")
            elif isinstance(stmt, ast.ClassDef):
                self._class(stmt, f"{qualname}.")
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                spellings = _value_spellings(stmt.value)
                if spellings and all(not s.endswith("()") for s in spellings):
                    cls.makers[stmt.targets[0].id] = spellings  # a class attribute alias: `act = staticmethod(gelu)`


def _single_bindings(function: ast.FunctionDef) -> dict[str, ast.AST]:
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


def summarise_source(path: str, data: bytes) -> FileSummary:
    """The summary of one file's bytes (an empty one when it does not parse)."""
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    summary = FileSummary(path, digest)
    try:
        text = data.decode(tokenize.detect_encoding(iter(data.splitlines(keepends=True)).__next__)[0])
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError):
        return summary
    try:
        return _Summariser(tree, summary).run()
    except RecursionError:
        return FileSummary(path, digest)


def _summarise_path(path: str) -> Optional[FileSummary]:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return summarise_source(path, data)


class IndexStore:
    """The summaries of one project's files, loaded from and saved to one cache file.

    Beside it, a small second file keeps the project's traced set as the last run found
    it, with the stat and digest of every file it rests on: a run over an unchanged project
    checks those stats and reads it back without loading a summary (`unchanged_answer`).
    """

    def __init__(self, cache_file: Optional[str]) -> None:
        self.cache_file = cache_file
        self._entries: Optional[dict[str, tuple[tuple[int, int], FileSummary]]] = None
        self._answer: Optional[tuple[str, dict[str, tuple[tuple[int, int], str]], object]] = None
        self._dirty = False

    @property
    def entries(self) -> dict[str, tuple[tuple[int, int], FileSummary]]:
        """Path -> (stat stamp, summary), loaded from the cache file on first use."""
        if self._entries is None:
            stored = _load(self.cache_file)
            self._entries = stored["entries"] if stored is not None else {}
        return self._entries

    def _answer_file(self) -> Optional[str]:
        return self.cache_file[:-len(".pickle")] + ".answer.pickle" if self.cache_file else None

    def unchanged_answer(self, listed: Sequence[str], key_for: Callable[[dict[str, str]], str],
                         ) -> Optional[tuple[dict[str, tuple[tuple[int, int], str]], object]]:
        """(path -> (stat stamp, digest), answer) of the kept answer, when no file it rests on changed
        its stat (so the stamps are the files' current ones), `listed` names no file it does not
        know, and `key_for(path -> digest)` is the key it was kept under."""
        stored = _load(self._answer_file())
        if stored is None:
            return None
        files: dict[str, tuple[tuple[int, int], str]] = stored["files"]
        if any(path not in files for path in listed):
            return None
        if any(file_stamp(path) != stamp for path, (stamp, _) in files.items()):
            return None
        digests = {path: digest for path, (_, digest) in files.items()}
        return (files, stored["answer"]) if stored["key"] == key_for(digests) else None

    def summaries(self, paths: Sequence[str], map_function=None) -> dict[str, FileSummary]:
        """The summary of each path: from the store while its stat (or digest) is unchanged, else read anew."""
        result: dict[str, FileSummary] = {}
        stale: list[str] = []
        for path in paths:
            stamp = file_stamp(path)
            entry = self.entries.get(path)
            if stamp is None:
                continue
            if entry is not None and entry[0] == stamp:
                result[path] = entry[1]
            else:
                stale.append(path)
        if stale:
            summaries = (map_function(_summarise_path, stale) if map_function is not None and len(stale) > 1
                         else [_summarise_path(path) for path in stale])
            for path, summary in zip(stale, summaries):
                if summary is None:
                    continue
                stamp = file_stamp(path)
                entry = self.entries.get(path)
                if entry is not None and entry[1].digest == summary.digest:
                    summary = entry[1]  # same bytes, new stat: keep the summary, refresh the stamp
                self.entries[path] = (stamp or (0, 0), summary)
                result[path] = summary
            self._dirty = True
        return result

    def keep_answer(self, key: str, paths: Sequence[str], answer: object) -> None:
        """Keep `answer` (picklable), resting on the current summaries of `paths`, for `unchanged_answer`."""
        files = {path: (self.entries[path][0], self.entries[path][1].digest) for path in paths if path in self.entries}
        self._answer = (key, files, answer)

    def save(self) -> None:
        """Write what changed atomically (temp files renamed over the cache files); silent when it cannot."""
        if self.cache_file is None:
            return
        if self._dirty and _dump(self.cache_file, {"format": INDEX_FORMAT, "entries": self.entries}):
            self._dirty = False
        if self._answer is not None:
            key, files, answer = self._answer
            _dump(self._answer_file(), {"format": INDEX_FORMAT, "key": key, "files": files, "answer": answer})
            self._answer = None


def _load(cache_file: Optional[str]) -> Optional[dict]:
    """A cache file's content when it holds this format, else None (missing, unreadable, older)."""
    if cache_file is None:
        return None
    try:
        with open(cache_file, "rb") as handle:
            stored = pickle.load(handle)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, KeyError, TypeError, ValueError, ImportError):
        return None
    return stored if isinstance(stored, dict) and stored.get("format") == INDEX_FORMAT else None


def _dump(cache_file: str, content: dict) -> bool:
    """Write `content` to `cache_file` atomically; False when it cannot."""
    try:
        os.makedirs(os.path.dirname(cache_file), exist_ok=True)
        with atomic_file(cache_file) as stream:
            pickle.dump(content, stream, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError:
        return False
    return True

"""Which functions `torch.compile` traces, and which branches of them only run eagerly.

Roots are `forward` of nn.Module subclasses (direct, aliased, or through a base class
defined in the same file), functions decorated with `@torch.compile` and functions passed
to `torch.compile(...)`. Every function or method they call in the same file is traced
too, transitively. `@torch.compiler.disable` functions are not traced (their call sites
are an intended break), and neither are branches guarded by `not is_compiling()` or
`torch.jit.is_scripting()`, nor the statements after `if is_compiling(): return ...`.
Branches that only run under compile (`if is_compiling():`, the `else` of
`if not is_compiling():`) are traced and recorded, so fixes never guard them with
`not is_compiling()`, which would make them dead code. Those branches are eager_branches.py's
to find, and the names passed to `torch.compile` compile_spellings.py's; this module walks
the file once for both and closes the traced set.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Iterator, Optional

import libcst as cst

from compile_lint.analysis.file.compile_spellings import CompileCalls, may_call_compile
from compile_lint.analysis.file.eager_branches import PREDICATE_WORDS, EagerBranches
from compile_lint.analysis.project.symbols import SymbolIndex
from compile_lint.analysis.syntax.calls import calls_in
from compile_lint.analysis.syntax.imports import ImportMap, dotted_name
from compile_lint.analysis.syntax.predicates import (  # noqa: F401 - one table, re-exported
    COMPILE_FUNCTIONS,
    COMPILING_PREDICATE_NAMES,
    COMPILING_PREDICATES,
    DEFAULT_MODULE_BASE_NAMES,
    DISABLE_DECORATORS,
    EAGER_PREDICATE_NAMES,
    EAGER_PREDICATES,
    MODULE_BASE_PREFIX,
    OPAQUE_OP_DECORATORS,
)
from compile_lint.analysis.syntax.walk import visit

if TYPE_CHECKING:  # the engine passes it; importing it here would load the program model
    from compile_lint.analysis.project.reach import FileReach, Reached


@dataclass
class Regions:
    """The compiled regions of one file."""

    module_classes: dict[str, cst.ClassDef] = field(default_factory=dict)
    functions: set[cst.FunctionDef] = field(default_factory=set)
    roots: set[cst.FunctionDef] = field(default_factory=set)
    disabled: dict[str, cst.FunctionDef] = field(default_factory=dict)
    eager_only: set[cst.CSTNode] = field(default_factory=set)
    # Blocks and statements only compiled runs reach (`if is_compiling():` bodies).
    compile_only: set[cst.CSTNode] = field(default_factory=set)
    owner_class: dict[cst.FunctionDef, cst.ClassDef] = field(default_factory=dict)
    # Functions traced only because the project's entry points reach them from other code
    # (another file, a compiled method, `self.head.loss()`): the project index's record of
    # each root among them (its chain and what its callers pass), and the chain of every one.
    external: dict[cst.FunctionDef, object] = field(default_factory=dict)
    reached_from: dict[cst.FunctionDef, tuple] = field(default_factory=dict)
    # What the program model saw passed to each root's parameters (`Reached.hints`): a root that
    # compiled code calls with known values (`torch.compile(step)` then `step(group, ...)` with a
    # dict) takes those, not `forward`'s tensor default.
    root_hints: dict[cst.FunctionDef, dict[str, str]] = field(default_factory=dict)
    # Every function's qualified name in the file (`f`, `Cls.method`, `outer.inner`), as the project index spells it.
    qualnames: dict[cst.FunctionDef, str] = field(default_factory=dict)


def _decorator_target(decorator: cst.Decorator) -> cst.BaseExpression:
    expr = decorator.decorator
    return expr.func if isinstance(expr, cst.Call) else expr


def _decorator_names(function: cst.FunctionDef, imports: ImportMap) -> set[str]:
    names = set()
    for decorator in function.decorators:
        name = imports.qualname(_decorator_target(decorator))
        if name:
            names.add(name)
    return names


class _Index(cst.CSTVisitor):
    """Classes, functions and `torch.compile(fn)` calls of a file, in one walk."""

    def __init__(self, imports: ImportMap) -> None:
        self.imports = imports
        self.classes: dict[str, cst.ClassDef] = {}
        self.functions: dict[str, cst.FunctionDef] = {}
        self.methods: dict[cst.ClassDef, dict[str, cst.FunctionDef]] = {}
        self.nested: dict[cst.FunctionDef, dict[str, cst.FunctionDef]] = {}
        self.owner: dict[cst.FunctionDef, cst.ClassDef] = {}
        self.compiled_names: set[str] = set()
        # Qualified names inside the file (`f`, `Cls.method`, `outer.inner`), as the project index spells them.
        self.qualnames: dict[str, cst.FunctionDef] = {}
        self.class_qualnames: dict[str, cst.ClassDef] = {}
        self._stack: list[cst.CSTNode] = []
        self._seen: dict[tuple[str, str], int] = {}  # (kind, qualname) -> how often it was defined so far
        self._names: dict[int, str] = {}  # id(def or class) -> its last name part (`total#2`)

    def _qualname(self, node: cst.CSTNode, name: str, kind: str) -> str:
        """`Cls.method`; the n-th definition of a name in its scope is `name#n`, as the program model numbers it."""
        qualname = ".".join([*(self._names[id(outer)] for outer in self._stack), name])
        count = self._seen.get((kind, qualname), 0) + 1
        self._seen[(kind, qualname)] = count
        if count > 1:
            qualname = f"{qualname}#{count}"
        self._names[id(node)] = qualname.rsplit(".", 1)[-1]
        return qualname

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.setdefault(node.name.value, node)
        self.class_qualnames[self._qualname(node, node.name.value, "class")] = node
        self.methods[node] = {}
        self._stack.append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.qualnames[self._qualname(node, node.name.value, "function")] = node
        parent = self._stack[-1] if self._stack else None
        if isinstance(parent, cst.ClassDef):
            self.methods[parent][node.name.value] = node
            self.owner[node] = parent
        elif isinstance(parent, cst.FunctionDef):
            self.nested.setdefault(parent, {})[node.name.value] = node
            if parent in self.owner:
                self.owner[node] = self.owner[parent]
        else:
            self.functions.setdefault(node.name.value, node)
        self._stack.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._stack.pop()


class CompileCallsAndEagerBranches(cst.CSTVisitor):
    """Both collectors in one walk of the module."""

    def __init__(self, calls: CompileCalls, branches: EagerBranches) -> None:
        self.visit_Call = calls.visit_Call  # type: ignore[method-assign]
        self.visit_If = branches.visit_If  # type: ignore[method-assign]
        self.visit_IfExp = branches.visit_IfExp  # type: ignore[method-assign]
        self.visit_IndentedBlock = branches.visit_IndentedBlock  # type: ignore[method-assign]
        self.visit_FunctionDef = branches.visit_FunctionDef  # type: ignore[method-assign]
        self.leave_FunctionDef = branches.leave_FunctionDef  # type: ignore[method-assign]

    def visit_Call(self, node: cst.Call) -> None: ...  # replaced per instance; declared for the walk's plan

    def visit_If(self, node: cst.If) -> None: ...

    def visit_IfExp(self, node: cst.IfExp) -> None: ...

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None: ...

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None: ...

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None: ...


def find_regions(
    module: cst.Module,
    imports: ImportMap,
    extra_module_bases: Iterable[str] = (),
    source: Optional[str] = None,
    symbols: Optional[SymbolIndex] = None,
    path: Optional[str] = None,
    reach: Optional[FileReach] = None,
) -> Regions:
    """Compute the compiled regions of `module`.

    `source`, the module's text when the caller has it, lets the expression-level walk
    be skipped for files that never call a compile function or spell an eager predicate
    (a name can only resolve to one if the file spells it, in the call or its import).
    With `symbols` and the file's `path`, base classes imported from other files are
    followed to their source (is it an nn.Module? which methods does its forward call?).
    `reach`, the project index's `FileReach` for this file, adds the functions the
    project's entry points reach (from other files, compiled methods, submodules' methods)
    as roots of their own, with the chain of calls that reaches them.
    """
    return _RegionFinder(module, imports, extra_module_bases, source, symbols, path, reach).find()


def is_imported_module_class(
    symbols: SymbolIndex, qualified: str, path: str, extra_module_bases: Iterable[str] = (),
) -> bool:
    """True when `qualified`, as imported by the file `path`, names an nn.Module subclass in another file."""
    if qualified.startswith(("builtins.", MODULE_BASE_PREFIX)):
        return False
    symbol = symbols.lookup(qualified, path)
    if symbol is None or symbol.kind != "class":
        return False
    return symbols.is_module_class(symbol, frozenset(DEFAULT_MODULE_BASE_NAMES | set(extra_module_bases)),
                                   MODULE_BASE_PREFIX)


class _RegionFinder:
    """Roots (module forwards, compiled functions), then everything they call, transitively."""

    def __init__(
        self, module: cst.Module, imports: ImportMap, extra_module_bases: Iterable[str], source: Optional[str],
        symbols: Optional[SymbolIndex] = None, path: Optional[str] = None, reach: Optional[FileReach] = None,
    ) -> None:
        self.imports = imports
        self.reach = reach
        self._abspath = os.path.abspath(path) if path else ""
        self.symbols = symbols if path is not None else None
        self.path = path or ""
        self.index = _Index(imports)
        visit(module, self.index, statements_only=True)
        self.regions = Regions(owner_class=dict(self.index.owner),
                               qualnames={function: name for name, function in self.index.qualnames.items()})
        calls = branches = None
        if source is None or may_call_compile(source):
            calls = CompileCalls(imports, self.index.compiled_names)
        if source is None or any(word in source for word in PREDICATE_WORDS):
            branches = EagerBranches(imports, self.regions.eager_only, self.regions.compile_only)
        if calls is not None and branches is not None:
            visit(module, CompileCallsAndEagerBranches(calls, branches))
        elif calls is not None:
            visit(module, calls)
        elif branches is not None:
            visit(module, branches)
        self.base_names = frozenset(DEFAULT_MODULE_BASE_NAMES | set(extra_module_bases))

    def find(self) -> Regions:
        """The regions: module classes, disabled functions, roots and every traced function."""
        regions, index = self.regions, self.index
        all_functions = list(index.functions.values())
        for methods in index.methods.values():
            all_functions.extend(methods.values())
        for nested in index.nested.values():
            all_functions.extend(nested.values())
        for function in all_functions:
            if self._disabled(function):
                regions.disabled[function.name.value] = function
        if self.reach is not None and self.reach.modelled:
            self._from_model(self.reach)
            return regions
        for name, cls in index.classes.items():
            if self._is_module_class(cls):
                regions.module_classes[name] = cls
        roots = self._roots(all_functions)
        regions.roots = set(roots)
        self._close(roots)
        if self.reach is not None:
            self._add_reached(self.reach)
        return regions

    def _from_model(self, reach: FileReach) -> None:
        """The program model's answer (analysis/model/): its traced functions of this file are the regions.

        Entries (what torch.compile is given, module forwards) are roots, with `forward`'s parameter
        defaults. The file's own calls from the roots partition the rest as before: a function they reach
        takes its parameters' kinds from those calls; any other traced function is `external`, with the
        model's hints, and, when another file's code reaches it, the chain that names how.
        """
        regions, index = self.regions, self.index
        for qualname in reach.module_classes:
            cls = index.class_qualnames.get(qualname)
            if cls is not None:
                regions.module_classes.setdefault(cls.name.value, cls)
        traced: dict[cst.FunctionDef, Reached] = {}
        for qualname, record in reach.functions.items():
            function = index.qualnames.get(qualname)
            if function is not None and not self._disabled(function) and not self._opaque(function):
                traced[function] = record
        self.allowed = set(traced)
        pending = list(traced)
        while pending:  # functions defined inside a traced function run traced when called
            for nested in index.nested.get(pending.pop(), {}).values():
                if nested not in self.allowed:
                    self.allowed.add(nested)
                    pending.append(nested)
        roots = [function for function, record in traced.items() if record.entry]
        regions.roots = set(roots)
        regions.root_hints = {function: dict(traced[function].hints) for function in roots}
        self._close(roots)
        for function in sorted(traced, key=lambda f: (len(traced[f].chain), regions.qualnames.get(f, ""))):
            record = traced[function]
            chain = record.chain
            if function in regions.functions:
                if function in regions.roots and chain and chain[0].path != self._abspath:
                    self._chain_closure(function, chain)
                continue
            regions.external[function] = record
            self._close([function], chain or None)

    def _close(self, roots: Iterable[cst.FunctionDef], chain: Optional[tuple] = None) -> None:
        """Add `roots` and everything they call in the file, transitively (with `chain`: how the project
        reaches them)."""
        regions, index = self.regions, self.index
        pending = list(roots)
        allowed = getattr(self, "allowed", None)
        while pending:
            function = pending.pop()
            if function in regions.functions or (allowed is not None and function not in allowed):
                continue
            regions.functions.add(function)
            if chain is not None:
                regions.reached_from[function] = chain
            # Functions defined inside a traced function run traced when called.
            pending.extend(index.nested.get(function, {}).values())
            pending.extend(self._callees(function))

    def _add_reached(self, reach: FileReach) -> None:
        """The functions of this file the project's entry points reach that the file's own roots do not."""
        reached = sorted(reach.functions.values(), key=lambda r: (len(r.chain), r.qualname))
        for record in reached:
            function = self.index.qualnames.get(record.qualname)
            if function is None:
                continue
            if function in self.regions.functions:
                if function in self.regions.roots and record.chain and record.chain[0].path != self._abspath:
                    # A root of its own (a submodule's forward) that another file's traced code calls:
                    # its findings say how that code reaches it.
                    self._chain_closure(function, record.chain)
                continue
            if self._disabled(function) or self._opaque(function):
                continue
            if record.entry:
                self.regions.roots.add(function)  # compiled itself: its parameters as `forward`'s
                self.regions.root_hints[function] = dict(record.hints)
            else:
                self.regions.external[function] = record
            self._close([function], record.chain)

    def _chain_closure(self, root: cst.FunctionDef, chain: tuple) -> None:
        pending, seen = [root], set()
        while pending:
            function = pending.pop()
            if function in seen or function in self.regions.reached_from:
                continue
            seen.add(function)
            self.regions.reached_from[function] = chain
            pending.extend(self.index.nested.get(function, {}).values())
            pending.extend(self._callees(function))

    def _roots(self, all_functions: list[cst.FunctionDef]) -> list[cst.FunctionDef]:
        """`forward` of module classes, `@torch.compile` functions, functions passed to torch.compile."""
        roots: list[cst.FunctionDef] = []
        for cls in self.regions.module_classes.values():
            forward = self.index.methods[cls].get("forward")
            if forward is not None and not self._disabled(forward):
                roots.append(forward)
            elif forward is None:
                roots.extend(self._overrides_called_by_inherited_forward(cls))
        top_level = set(self.index.functions.values())
        for function in all_functions:
            if self._disabled(function):
                continue
            if _decorator_names(function, self.imports) & COMPILE_FUNCTIONS:
                roots.append(function)
            elif function.name.value in self.index.compiled_names and function in top_level:
                roots.append(function)
        return roots

    def _is_module_class(self, cls: cst.ClassDef, seen: frozenset = frozenset()) -> bool:
        for arg in cls.bases:
            qualified = self.imports.qualname(arg.value)
            name = qualified or dotted_name(arg.value) or ""
            short = name.rsplit(".", 1)[-1]
            if name.startswith(MODULE_BASE_PREFIX) or name in self.base_names or short in self.base_names:
                return True
            local = self.index.classes.get(dotted_name(arg.value) or "")
            if local is not None and local.name.value not in seen and local is not cls:
                if self._is_module_class(local, seen | {cls.name.value}):
                    return True
            elif local is None and qualified is not None and self.symbols is not None:
                if is_imported_module_class(self.symbols, qualified, self.path, self.base_names):
                    return True
        return False

    def _imported_class(self, qualified: str):
        """The class an imported name refers to, found in its source file (None without an index)."""
        if self.symbols is None or qualified.startswith(("builtins.", MODULE_BASE_PREFIX)):
            return None
        symbol = self.symbols.lookup(qualified, self.path)
        return symbol if symbol is not None and symbol.kind == "class" else None

    def _overrides_called_by_inherited_forward(self, cls: cst.ClassDef) -> list[cst.FunctionDef]:
        """Methods of `cls` that the `forward` it inherits from another file calls on `self`.

        `class ViT(timm.VisionTransformer): def _pos_embed(self, x): ...` has no forward of
        its own; the imported forward calls `self._pos_embed`, so this override is traced.
        """
        if self.symbols is None:
            return []
        local_classes = [cls, *self._local_ancestors(cls)]
        called: set[str] = set()
        for local in local_classes:
            for arg in local.bases:
                qualified = self.imports.qualname(arg.value)
                if qualified is None or dotted_name(arg.value) in self.index.classes:
                    continue
                symbol = self._imported_class(qualified)
                if symbol is not None and self.symbols.method_owner(symbol, "forward") is not None:
                    called |= self.symbols.self_calls(symbol, "forward")
        roots = []
        for name in sorted(called):
            method = self._find_method(cls, name)
            if method is not None and not self._disabled(method):
                roots.append(method)
        return roots

    def _local_ancestors(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        found: list[cst.ClassDef] = []
        pending = list(self._bases_of(cls))
        while pending and len(found) < 20:
            base = pending.pop(0)
            if base not in found and base is not cls:
                found.append(base)
                pending.extend(self._bases_of(base))
        return found

    def _disabled(self, function: cst.FunctionDef) -> bool:
        return bool(_decorator_names(function, self.imports) & DISABLE_DECORATORS)

    def _opaque(self, function: cst.FunctionDef) -> bool:
        return bool(_decorator_names(function, self.imports) & OPAQUE_OP_DECORATORS)

    def _bases_of(self, cls: cst.ClassDef) -> Iterator[cst.ClassDef]:
        for arg in cls.bases:
            local = self.index.classes.get(dotted_name(arg.value) or "")
            if local is not None and local is not cls:
                yield local

    def _find_method(self, cls: cst.ClassDef, name: str, depth: int = 0) -> Optional[cst.FunctionDef]:
        method = self.index.methods.get(cls, {}).get(name)
        if method is not None or depth > 20:
            return method
        for base in self._bases_of(cls):
            found = self._find_method(base, name, depth + 1)
            if found is not None:
                return found
        return None

    def _callees(self, function: cst.FunctionDef) -> Iterator[cst.FunctionDef]:
        """Same-file functions `function` calls: by name, `self.method()` or `super().method()`."""
        owner = self.index.owner.get(function)
        nested = self.index.nested.get(function, {})
        for call in calls_in(function, self.regions.eager_only, into_classes=False):
            func = call.func
            target: Optional[cst.FunctionDef] = None
            if isinstance(func, cst.Name):
                target = nested.get(func.value) or self.index.functions.get(func.value)
            elif isinstance(func, cst.Attribute) and owner is not None:
                receiver = func.value
                is_self = isinstance(receiver, cst.Name) and receiver.value == "self"
                is_super = (
                    isinstance(receiver, cst.Call)
                    and isinstance(receiver.func, cst.Name)
                    and receiver.func.value == "super"
                )
                if is_self:
                    target = self._find_method(owner, func.attr.value)
                elif is_super:
                    for base in self._bases_of(owner):
                        target = self._find_method(base, func.attr.value)
                        if target is not None:
                            break
            if target is not None and not self._disabled(target) and not self._opaque(target):
                yield target

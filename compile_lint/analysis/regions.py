"""Which functions `torch.compile` traces, and which branches of them only run eagerly.

Roots are `forward` of nn.Module subclasses (direct, aliased, or through a base class
defined in the same file), functions decorated with `@torch.compile` and functions passed
to `torch.compile(...)`. Every function or method they call in the same file is traced
too, transitively. `@torch.compiler.disable` functions are not traced (their call sites
are an intended break), and neither are branches guarded by `not is_compiling()` or
`torch.jit.is_scripting()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

import libcst as cst

from compile_lint.analysis.imports import ImportMap, dotted_name
from compile_lint.analysis.symbols import SymbolIndex
from compile_lint.analysis.walk import WHITESPACE_TYPES, visit, walk

COMPILE_FUNCTIONS = frozenset({"torch.compile", "torch._dynamo.optimize"})
# `torch.jit.ignore` / `torch.jit.unused` only affect TorchScript: Dynamo traces such
# functions (measured on torch 2.13), so they are not listed here.
DISABLE_DECORATORS = frozenset(
    {
        "torch.compiler.disable",
        "torch._dynamo.disable",
        "torch._disable_dynamo",
    }
)
# Custom ops are opaque to Dynamo: it calls them through their fake implementation and
# never traces their bodies, so code inside them is not part of a compiled region.
OPAQUE_OP_DECORATORS = frozenset({"torch.library.custom_op", "torch._library.custom_ops.custom_op"})
# True while Dynamo traces: `if not is_compiling():` bodies run only eagerly.
COMPILING_PREDICATES = frozenset(
    {
        "torch.compiler.is_compiling",
        "torch.compiler.is_dynamo_compiling",
        "torch._dynamo.is_compiling",
        "torch._dynamo.external_utils.is_compiling",
        "torch._utils.is_compiling",
    }
)
COMPILING_PREDICATE_SUFFIXES = ("is_torchdynamo_compiling",)
# False while Dynamo traces: `if is_scripting():` bodies never run under torch.compile.
EAGER_PREDICATES = frozenset({"torch.jit.is_scripting", "torch.jit.is_tracing"})
MODULE_BASE_PREFIX = "torch.nn."
DEFAULT_MODULE_BASE_NAMES = frozenset({"PreTrainedModel", "ModelMixin", "LightningModule"})


@dataclass
class Regions:
    """The compiled regions of one file."""

    module_classes: dict[str, cst.ClassDef] = field(default_factory=dict)
    functions: set[cst.FunctionDef] = field(default_factory=set)
    roots: set[cst.FunctionDef] = field(default_factory=set)
    disabled: dict[str, cst.FunctionDef] = field(default_factory=dict)
    eager_only: set[cst.CSTNode] = field(default_factory=set)
    owner_class: dict[cst.FunctionDef, cst.ClassDef] = field(default_factory=dict)


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


def predicate_sense(test: cst.BaseExpression, imports: ImportMap) -> Optional[bool]:
    """Whether `test` is known True (or False) while Dynamo traces; None when unknown.

    `not`, `and` and `or` combine known parts: `not is_compiling() and logger.isEnabledFor(x)`
    is False under compile whatever the logger says.
    """
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = predicate_sense(test.expression, imports)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = predicate_sense(test.left, imports), predicate_sense(test.right, imports)
        decisive = isinstance(test.operator, cst.Or)  # True decides `or`, False decides `and`
        if decisive in (left, right):
            return decisive
        return (not decisive) if left is right is (not decisive) else None
    if not isinstance(test, cst.Call):
        return None
    name = imports.qualname(test.func) or dotted_name(test.func) or ""
    if name in COMPILING_PREDICATES or name.endswith(COMPILING_PREDICATE_SUFFIXES):
        return True
    if name in EAGER_PREDICATES:
        return False
    return None


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
        self._stack: list[cst.CSTNode] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.classes.setdefault(node.name.value, node)
        self.methods[node] = {}
        self._stack.append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
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


class _CompileCalls(cst.CSTVisitor):
    """Names of functions passed to `torch.compile(...)` anywhere in a file."""

    def __init__(self, imports: ImportMap, names: set[str]) -> None:
        self.imports = imports
        self.names = names

    def visit_Call(self, node: cst.Call) -> None:
        if self.imports.qualname(node.func) in COMPILE_FUNCTIONS and node.args:
            name = dotted_name(node.args[0].value)
            if name:
                self.names.add(name.split(".")[-1])


def _calls_in(function: cst.FunctionDef, eager_only: set[cst.CSTNode]) -> Iterator[cst.Call]:
    """Calls in `function`'s body, skipping nested defs and eager-only branches."""
    found: list[cst.Call] = []

    def on_visit(node: cst.CSTNode) -> bool:
        if node in eager_only:
            return False
        kind = type(node)
        if kind is cst.Call:
            found.append(node)  # type: ignore[arg-type]
        elif kind is cst.FunctionDef:
            return node is function
        elif kind is cst.ClassDef:
            return False
        return True

    walk(function, on_visit, None, WHITESPACE_TYPES)
    return iter(found)


class _EagerBranches(cst.CSTVisitor):
    def __init__(self, imports: ImportMap, eager_only: set[cst.CSTNode]) -> None:
        self.imports = imports
        self.eager_only = eager_only

    def visit_If(self, node: cst.If) -> None:
        sense = predicate_sense(node.test, self.imports)
        if sense is False:
            self.eager_only.add(node.body)
        elif sense is True and node.orelse is not None:
            self.eager_only.add(node.orelse)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        sense = predicate_sense(node.test, self.imports)
        if sense is False:
            self.eager_only.add(node.body)
        elif sense is True:
            self.eager_only.add(node.orelse)


# Every compile function's name ends in one of these, and so does every eager predicate's.
_COMPILE_WORDS = ("compile", "optimize")
_PREDICATE_WORDS = ("compiling", "is_scripting", "is_tracing")


def find_regions(
    module: cst.Module,
    imports: ImportMap,
    extra_module_bases: Iterable[str] = (),
    source: Optional[str] = None,
    symbols: Optional[SymbolIndex] = None,
    path: Optional[str] = None,
) -> Regions:
    """Compute the compiled regions of `module`.

    `source`, the module's text when the caller has it, lets the expression-level walks
    be skipped for files that never spell a compile function or an eager predicate
    (a name can only resolve to one if the file spells it, in the call or its import).
    With `symbols` and the file's `path`, base classes imported from other files are
    followed to their source (is it an nn.Module? which methods does its forward call?).
    """
    return _RegionFinder(module, imports, extra_module_bases, source, symbols, path).find()


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
        symbols: Optional[SymbolIndex] = None, path: Optional[str] = None,
    ) -> None:
        self.imports = imports
        self.symbols = symbols if path is not None else None
        self.path = path or ""
        self.index = _Index(imports)
        visit(module, self.index, statements_only=True)
        if source is None or any(word in source for word in _COMPILE_WORDS):
            visit(module, _CompileCalls(imports, self.index.compiled_names))
        self.regions = Regions(owner_class=dict(self.index.owner))
        if source is None or any(word in source for word in _PREDICATE_WORDS):
            visit(module, _EagerBranches(imports, self.regions.eager_only))
        self.base_names = frozenset(DEFAULT_MODULE_BASE_NAMES | set(extra_module_bases))

    def find(self) -> Regions:
        """The regions: module classes, disabled functions, roots and every traced function."""
        regions, index = self.regions, self.index
        for name, cls in index.classes.items():
            if self._is_module_class(cls):
                regions.module_classes[name] = cls
        all_functions = list(index.functions.values())
        for methods in index.methods.values():
            all_functions.extend(methods.values())
        for nested in index.nested.values():
            all_functions.extend(nested.values())
        for function in all_functions:
            if self._disabled(function):
                regions.disabled[function.name.value] = function
        roots = self._roots(all_functions)
        regions.roots = set(roots)
        pending = list(roots)
        while pending:
            function = pending.pop()
            if function in regions.functions:
                continue
            regions.functions.add(function)
            # Functions defined inside a traced function run traced when called.
            pending.extend(index.nested.get(function, {}).values())
            pending.extend(self._callees(function))
        return regions

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
        for call in _calls_in(function, self.regions.eager_only):
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

"""Module-wide facts rules share, each computed from the module index (no walk of its own).

Which names hold a `torch.compile` result, which ops have a fake implementation, which
ops a `torch.library.Library` defines and with which kernels, which names hold a loaded
native library, and what top-level names are bound to.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.file.module_index import ModuleIndex
from compile_lint.analysis.file.regions import COMPILE_FUNCTIONS
from compile_lint.analysis.syntax.imports import ImportMap, dotted_name

FAKE_REGISTRARS = frozenset({"torch.library.register_fake", "torch.library.impl_abstract"})

# Calls that load native code whose functions Dynamo cannot trace.
NATIVE_LOADERS = frozenset(
    {
        "ctypes.CDLL", "ctypes.PyDLL", "ctypes.WinDLL", "ctypes.OleDLL",
        "ctypes.cdll.LoadLibrary", "ctypes.pydll.LoadLibrary", "ctypes.windll.LoadLibrary",
        "numpy.ctypeslib.load_library",
        "torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline",
    }
)
# Every loader's qualified name holds one of these, so a file that spells none loads nothing.
NATIVE_LOADER_WORDS = ("ctypes", "cpp_extension")
LIBRARY_CLASS = "torch.library.Library"
KERNEL_REGISTRARS = frozenset({"torch.library.impl", "torch.library.register_kernel"})


def string_value(expr: cst.BaseExpression) -> Optional[str]:
    """The text of a plain string literal, else None."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def op_reference(expr: cst.BaseExpression) -> Optional[str]:
    """What a registration call names: "ns::name", a Python name, or "torch.ops.ns.name"."""
    text = string_value(expr)
    if text is not None:
        return text.split(".")[0]  # "ns::name.default" -> "ns::name"
    dotted = dotted_name(expr)
    if dotted and dotted.startswith("torch.ops.") and dotted.count(".") >= 3:
        parts = dotted.split(".")
        return f"{parts[2]}::{parts[3]}"
    return dotted


def strings_in(expr: cst.BaseExpression) -> list[str]:
    """String literals of an argument: a string, or the strings of a list/tuple."""
    value = string_value(expr)
    if value is not None:
        return [value]
    if isinstance(expr, (cst.List, cst.Tuple)):
        return [s for element in expr.elements for s in strings_in(element.value)]
    return []


def compiled_callables(index: ModuleIndex, imports: ImportMap) -> dict[str, Optional[cst.Call]]:
    """Every name this file binds to a compiled callable, with the compile call (None: bare decorator)."""
    collector = _CompiledCallables(imports)
    index.replay(collector, cst.Assign, cst.FunctionDef)
    return collector.calls


def compiled_bindings(index: ModuleIndex,
                      imports: ImportMap) -> dict[str, list[tuple[cst.CSTNode, Optional[cst.Call]]]]:
    """Every binding of each compiled name, in source order: (the `Assign` or decorated `FunctionDef`,
    its compile call).

    `compiled_callables` keeps one call per name (the last); a module that binds a name
    in several places (two functions each with its own `model`, a class defined twice)
    needs the binding that the use sees, which these let a rule choose.
    """
    collector = _CompiledCallables(imports)
    index.replay(collector, cst.Assign, cst.FunctionDef)
    return collector.bindings


class _CompiledCallables:
    """Names (`model`, `self.model`, decorated `fn`) bound to a torch.compile result."""

    def __init__(self, imports: ImportMap) -> None:
        self.imports = imports
        self.calls: dict[str, Optional[cst.Call]] = {}  # name -> the torch.compile call (None: bare decorator)
        # name -> every (binding node, compile call), in the order the replay meets them
        self.bindings: dict[str, list[tuple[cst.CSTNode, Optional[cst.Call]]]] = {}

    def _bind(self, name: str, node: cst.CSTNode, call: Optional[cst.Call]) -> None:
        self.calls[name] = call
        self.bindings.setdefault(name, []).append((node, call))

    def _is_compile(self, expr: cst.BaseExpression) -> bool:
        return self.imports.qualname(expr) in COMPILE_FUNCTIONS

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if isinstance(value, cst.Call) and self._is_compile(value.func):
            for target in node.targets:
                name = dotted_name(target.target)
                if name:
                    self._bind(name, node, value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            expr = decorator.decorator
            if isinstance(expr, cst.Call) and self._is_compile(expr.func):
                self._bind(node.name.value, node, expr)
            elif self._is_compile(expr):
                self._bind(node.name.value, node, None)


def fake_registrations(index: ModuleIndex, imports: ImportMap) -> set[str]:
    """Every op this file gives a fake (abstract) implementation, by name or "ns::name"."""
    collector = _FakeRegistrations(imports)
    index.replay(collector, cst.Call, cst.Decorator)
    return collector.registered


# Methods of an op object that register its fake. `impl_abstract` exists only on the old
# `torch._custom_ops` objects; on a `custom_op` it raises at import, which is JIT706's,
# so the op is not also reported as having no fake (JIT701).
FAKE_METHODS = frozenset({"register_fake", "impl_abstract"})


class _FakeRegistrations:
    """Every op this file gives a fake (abstract) implementation, by name or "ns::name"."""

    def __init__(self, imports: ImportMap) -> None:
        self.imports = imports
        self.registered: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if self.imports.qualname(node.func) in FAKE_REGISTRARS and node.args:
            reference = op_reference(node.args[0].value)
            if reference:
                self.registered.add(reference)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in FAKE_METHODS:
            owner = dotted_name(node.func.value)
            if owner:
                self.registered.add(owner)

    def visit_Decorator(self, node: cst.Decorator) -> None:
        expr = node.decorator
        if isinstance(expr, cst.Attribute) and expr.attr.value in FAKE_METHODS:
            owner = dotted_name(expr.value)
            if owner:
                self.registered.add(owner)


def library_ops(index: ModuleIndex, imports: ImportMap) -> "LibraryOps":
    """The ops this file defines through `torch.library`, and the keys of their kernels."""
    collector = LibraryOps(imports)
    index.replay(collector, cst.Assign, cst.Call)
    return collector


class LibraryOps:
    """Ops a file defines with `Library.define` / `torch.library.define`, and their kernels' keys."""

    def __init__(self, imports: ImportMap) -> None:
        self.imports = imports
        self.namespaces: dict[str, str] = {}  # library variable -> namespace
        self.defined: dict[str, cst.Call] = {}  # "ns::name" -> the define call
        self.keys: dict[str, set[str]] = {}  # "ns::name" -> lower-cased dispatch keys, "?" when unknown
        self.fake: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if isinstance(value, cst.Call) and self.imports.qualname(value.func) == LIBRARY_CLASS and value.args:
            namespace = string_value(value.args[0].value)
            for target in node.targets:
                name = dotted_name(target.target)
                if name and namespace:
                    self.namespaces[name] = namespace

    def _qualify(self, op: str, library: Optional[str]) -> Optional[str]:
        op = op.split("(")[0].split(".")[0].strip()
        if "::" in op:
            return op
        namespace = self.namespaces.get(library or "")
        return f"{namespace}::{op}" if namespace else None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.imports.qualname(func)
        strings = [s for arg in node.args for s in strings_in(arg.value)]
        if qualified in FAKE_REGISTRARS and node.args:
            reference = op_reference(node.args[0].value)
            if reference:
                self.fake.add(reference)
            return
        library = dotted_name(func.value) if isinstance(func, cst.Attribute) else None
        if isinstance(func, cst.Attribute) and library in self.namespaces and strings:
            method = func.attr.value
            op = self._qualify(strings[0], library)
            if op is None:
                return
            if method == "define" and "->" in strings[0]:
                self.defined[op] = node
            elif method == "impl":
                self._add_keys(op, node, strings[1:])
        elif qualified == "torch.library.define" and strings:
            self.defined[self._qualify(strings[0], None) or strings[0]] = node
        elif qualified in KERNEL_REGISTRARS and strings:
            op_strings = [s for s in strings if "::" in s]
            if op_strings:
                self._add_keys(op_strings[0].split(".")[0], node, [s for s in strings if s is not op_strings[0]])

    def _add_keys(self, op: str, node: cst.Call, keys: list[str]) -> None:
        has_func_or_key = len(node.args) >= 2
        found = self.keys.setdefault(op, set())
        if keys:
            found.update(key.lower() for key in keys)
        elif has_func_or_key:
            found.add("?")


def native_handles(index: ModuleIndex, imports: ImportMap) -> "NativeHandles":
    """Names and `self.` attributes bound to a loaded native library."""
    handles = NativeHandles(imports)
    for node in index.of_type(cst.Assign):
        handles.visit_Assign(node, index.enclosing_function[node] is not None)
    return handles


class NativeHandles:
    """Module-level names and `self.` attributes bound to a loaded native library."""

    def __init__(self, imports: ImportMap) -> None:
        self.imports = imports
        self.names: set[str] = set()
        self.attributes: set[str] = set()

    def visit_Assign(self, node: cst.Assign, in_function: bool) -> None:
        if not (isinstance(node.value, cst.Call) and self.imports.qualname(node.value.func) in NATIVE_LOADERS):
            return
        for target in node.targets:
            expr = target.target
            if isinstance(expr, cst.Name) and not in_function:
                self.names.add(expr.value)
            elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
                self.attributes.add(expr.attr.value)


def module_assignments(module: cst.Module) -> dict[str, list[cst.BaseExpression]]:
    """Top-level `NAME = value` bindings (also inside top-level if/try blocks), in source order."""
    found: dict[str, list[cst.BaseExpression]] = {}
    _scan_assignments(module.body, found)
    return found


def _scan_assignments(statements, found: dict[str, list[cst.BaseExpression]]) -> None:
    # A module-level function, not a recursive closure: that is a reference cycle holding nodes.
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            found.setdefault(target.target.value, []).append(small.value)
                elif isinstance(small, cst.AnnAssign) and small.value is not None:
                    if isinstance(small.target, cst.Name):
                        found.setdefault(small.target.value, []).append(small.value)
        elif isinstance(statement, (cst.If, cst.Try)):
            _scan_assignments(statement.body.body, found)
            for handler in getattr(statement, "handlers", ()):
                _scan_assignments(handler.body.body, found)
            orelse = statement.orelse
            while isinstance(orelse, cst.If):
                _scan_assignments(orelse.body.body, found)
                orelse = orelse.orelse
            if orelse is not None:
                _scan_assignments(orelse.body.body, found)

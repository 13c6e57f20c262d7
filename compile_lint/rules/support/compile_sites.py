"""Call sites of compiled callables (`torch.compile(...)`), and the rule base that reads them."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from compile_lint.analysis.file.compile_spellings import COMPILED_CALLABLE_SPELLING
from compile_lint.analysis.file.context import FileContext
from compile_lint.analysis.syntax.imports import ImportMap, dotted_name
from compile_lint.analysis.syntax.walk import visit
from compile_lint.rules.base import Rule

# Modes that capture CUDA graphs: a graph is recorded per distinct input shape.
CUDAGRAPH_MODES = frozenset({"reduce-overhead", "max-autotune"})


SHAPE_FACTORIES = frozenset(
    {"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty", "torch.full",
     "torch.randint", "torch.arange", "torch.linspace"}
)


SHAPE_METHODS = frozenset(
    {"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty", "new_full",
     "narrow", "unflatten", "tile"}
)


def compile_keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    """The value of keyword `name` in a torch.compile(...) call, if given."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def compile_mode(call: Optional[cst.Call]) -> Optional[str]:
    """The literal `mode=` of a torch.compile call, or None."""
    if call is None:
        return None
    value = compile_keyword(call, "mode")
    if isinstance(value, cst.SimpleString) and isinstance(value.evaluated_value, str):
        return value.evaluated_value
    return None


def names_in(expr: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    visit(expr, _Names())
    return found


def target_names(target: cst.BaseAssignTargetExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        names: set[str] = set()
        for element in target.elements:
            names |= target_names(element.value)  # type: ignore[arg-type]
        return names
    return set()


class LoopBody(cst.CSTVisitor):
    """Calls and simple assignments in a loop body (nested functions excluded)."""

    def __init__(self) -> None:
        self.calls: list[cst.Call] = []
        self.assigned: dict[str, cst.BaseExpression] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.assigned[target.target.value] = node.value


class ShapeVariation:
    """Decides whether an argument's shape follows a loop variable."""

    def __init__(self, loop_vars: set[str], assigned: dict[str, cst.BaseExpression], imports: ImportMap) -> None:
        self.loop_vars = loop_vars
        self.assigned = assigned
        self.imports = imports

    def _mentions(self, expr: cst.CSTNode) -> bool:
        names = names_in(expr)
        if names & self.loop_vars:
            return True
        # `n = lengths[i]` / `n = base * step` in the loop body vary with the loop too.
        return any(name in self.assigned and not isinstance(self.assigned[name], cst.Call)
                   and names_in(self.assigned[name]) & self.loop_vars for name in names)

    def varies(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """True when the shape of `expr` depends on a loop variable."""
        if depth > 6:
            return False
        if isinstance(expr, cst.Name):
            value = self.assigned.get(expr.value)
            return value is not None and self.varies(value, depth + 1)
        if isinstance(expr, cst.Subscript):
            # Slice bounds set the size; an index (`batches[i]`) only picks an element.
            for element in expr.slice:
                if isinstance(element.slice, cst.Slice) and self._mentions(element.slice):
                    return True
            return self.varies(expr.value, depth + 1)
        if isinstance(expr, cst.Call):
            qualified = self.imports.qualname(expr.func) or ""
            positional = [arg.value for arg in expr.args if arg.keyword is None]
            if qualified in SHAPE_FACTORIES:
                return any(self._mentions(arg) for arg in positional)
            if qualified == "torch.nn.functional.interpolate":
                size = next((arg.value for arg in expr.args if arg.keyword and arg.keyword.value == "size"), None)
                if size is not None and self._mentions(size):
                    return True
            func = expr.func
            if isinstance(func, cst.Attribute):
                if func.attr.value in SHAPE_METHODS and any(self._mentions(arg) for arg in positional):
                    return True
                return self.varies(func.value, depth + 1)
        return False


def varying_shape_calls(context: FileContext) -> Iterator[tuple[cst.Call, str]]:
    """Calls of a compiled callable, inside a `for` loop, with an argument whose shape follows the loop."""
    found: list[tuple[cst.Call, str]] = []
    compiled = context.compiled_callables
    for loop in context.module_index.of_type(cst.For):
        loop_vars = target_names(loop.target)
        if not loop_vars:
            continue
        body = LoopBody()
        visit(loop.body, body)
        variation = ShapeVariation(loop_vars, body.assigned, context.imports)
        for call in body.calls:
            name = dotted_name(call.func)
            if name in compiled and any(variation.varies(arg.value) for arg in call.args):
                found.append((call, name))
    seen: set[cst.Call] = set()
    for call, name in found:  # nested loops report a call once
        if call not in seen:
            seen.add(call)
            yield call, name


def _scopes(parents: dict, node: cst.CSTNode) -> list[cst.CSTNode]:
    """The functions and classes holding `node` (not `node` itself), innermost first, then the module."""
    chain: list[cst.CSTNode] = []
    while node in parents:
        node = parents[node]
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            chain.append(node)
    return chain


def compile_call_for(context: FileContext, call: cst.Call, name: str) -> Optional[cst.Call]:
    """The torch.compile call behind `name` where `call` uses it.

    A name bound in several places (`model` in two functions, a module that defines the
    same function or class twice) means the binding in the innermost scope around `call`
    that binds it; for an attribute (`self.model`, bound in one method and called in
    another), the binding in the same class. `compiled_callables` alone (the file's last
    binding of the name) would give a call in the first copy the second copy's compile
    call, and its fix would edit the other copy. With one binding, or none around the
    call, that last binding it is.
    """
    bindings = context.compiled_bindings.get(name, [])
    if len(bindings) > 1:
        parents = context.parents

        def scope_of(node: cst.CSTNode) -> Optional[cst.CSTNode]:
            chain = _scopes(parents, node)
            if "." in name:
                chain = [scope for scope in chain if isinstance(scope, cst.ClassDef)] or chain[-1:]
            return chain[0] if chain else None

        scopes = [(scope_of(node), compile_call) for node, compile_call in bindings]
        for scope in _scopes(parents, call):
            found = [compile_call for bound, compile_call in scopes if bound is scope]
            if found:
                return found[-1]
    return context.compiled_callables.get(name)


class CompiledSiteRule(Rule):
    """Shared set-up: the compiled callables of the file, found once."""

    scope = "module"
    trigger_words = ("compile", "optimize")  # every rule here needs a compiled callable
    trigger_pattern = COMPILED_CALLABLE_SPELLING  # which needs a compile call, alias or decorator
    kind = "perf"
    default_enabled = False

    def compiled(self) -> dict[str, Optional[cst.Call]]:
        """Name -> torch.compile call for every compiled callable in the file."""
        return self.context.compiled_callables


ENCODER = """
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, tokens):
        return self.proj(tokens).relu().mean(1)
"""


VARYING_LENGTHS = "[(torch.randn(2, n, 8),) for n in (16, 32, 48)]"

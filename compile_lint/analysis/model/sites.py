"""Answers about one file's calls of other files' functions, read from the solved model.

The per-file analysis asks two things about a call that runs a function of another file:
what it returns (a helper's return kind) and whether the function reads tensor data with
`.item()` on every run (JIT201 reports that at the call when the function is not linted
itself). The model evaluated the function in the contexts the file's traced calls make,
so the answer is the join over those callee nodes: no second reading of the other file.

Only calls whose every callee is a plain function of another file are answered (not a
class, an external, a generator): their value is what the functions return.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, fields, is_dataclass
from typing import Iterable

from compile_lint.analysis.model.program import Model
from compile_lint.analysis.model.values import FunctionV, Node, join

# A call of the file, as the model keys it: (line, column in UTF-8 bytes, callee as spelled).
CallSite = tuple[int, int, str]

_READS_ITEM = "torch.Tensor.item"  # what the model records for `.item()` on a tensor (objects._data_attribute)
# Nodes under which a statement may not run on every call, or runs in another scope.
_CONDITIONAL = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match, ast.FunctionDef, ast.AsyncFunctionDef,
                ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_TRY_STAR = getattr(ast, "TryStar", ast.Try)


@dataclass(frozen=True)
class CallAnswer:
    """What the model found for one call of functions of other files."""

    returns: frozenset  # the values it returns, joined over the callee nodes the model evaluated
    # (path, qualified name, `def` line) of each callee that reads tensor data with `.item()` on a
    # tensor on every run: no branch, loop or early exit before the read.
    reads_item: tuple[tuple[str, str, int], ...] = ()


def call_answers(model: Model, path: str, callers: Iterable[Node]) -> dict[CallSite, CallAnswer]:
    """The answers for the calls the nodes `callers` (of file `path`) make of other files' plain functions."""
    sites: dict[CallSite, list[set]] = {}
    shared: set[CallSite] = set()
    starts_of: dict[object, set[tuple[int, int]]] = {}
    for caller in callers:
        starts = starts_of.get(caller[0])
        if starts is None:
            starts = starts_of[caller[0]] = _shared_starts(model, caller)
        for (line, column), record in model.edges.get(caller, {}).items():
            if record.spelled is None or record.implicit:
                continue
            sites.setdefault((line, column, record.spelled), []).append(record.targets)
            if (line, column) in starts:
                shared.add((line, column, record.spelled))
    answers: dict[CallSite, CallAnswer] = {}
    reads: dict[Node, list[tuple[str, str, int]]] = {}  # a helper called from many places is read once
    for site, target_sets in sorted(sites.items()):
        if site in shared:
            # `f(x).g(y)`: both calls start where `f` does, and the model keeps one record there, with the
            # callees of both. The one spelled `f` runs functions named `f` (an alias of another name: no answer).
            name = site[2].rsplit(".", 1)[-1]
            target_sets = [{target for target in targets if isinstance(target[0], tuple)
                            and isinstance(target[0][0], FunctionV) and target[0][0].key[1].rsplit(".", 1)[-1] == name}
                           for targets in target_sets]
        callees = _plain_callees(model, path, target_sets)
        if callees:
            for node in callees:
                if node not in reads:
                    reads[node] = _reads_item(model, node)
            answers[site] = CallAnswer(join(*(model.heap.peek(("r", node)) for node in callees)),
                                       tuple(sorted({read for node in callees for read in reads[node]})))
    return answers


def _shared_starts(model: Model, caller: Node) -> set[tuple[int, int]]:
    """The (line, column) where two calls of `caller`'s code start (`f(x).g(y)`, `f(x)(y)`)."""
    function = caller[0]
    scope = model.scope(function.key) if isinstance(function, FunctionV) else None
    if scope is None or scope.function is None:
        return set()
    seen: set[tuple[int, int]] = set()
    shared: set[tuple[int, int]] = set()
    for node in ast.walk(scope.function):
        if isinstance(node, ast.Call):
            start = (node.lineno, node.col_offset)
            (shared if start in seen else seen).add(start)
    return shared


def _plain_callees(model: Model, path: str, target_sets: list[set]) -> list[Node]:
    """The callee nodes, when every target is a plain function of another file (else none)."""
    callees: list[Node] = []
    for targets in target_sets:
        for target, _how in targets:
            if not isinstance(target, tuple) or not isinstance(target[0], FunctionV):
                return []  # an external name: its value is not in a cell
            key = target[0].key
            scope = model.scope(key)
            if (key[0] == path or scope is None or scope.function is None or scope.is_generator
                    or key[1].rsplit(".", 1)[-1] == "__init__"):
                return []  # a function of this file, a class's `__init__` (the call gives an instance), a generator
            callees.append(target)
    return callees


def _reads_item(model: Model, node: Node) -> list[tuple[str, str, int]]:
    """(path, qualified name, `def` line) of `node`'s function when a traced `.item()` on a tensor runs on every
    call of it, else nothing."""
    function = node[0]
    assert isinstance(function, FunctionV)
    scope = model.scope(function.key)
    definition = scope.function if scope is not None else None
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    sites = {(record.line, record.column) for record in model.edges.get(node, {}).values()
             if not record.eager and any(target == _READS_ITEM for target, _how in record.targets)}
    if not sites:
        return []
    parents = {child: parent for parent in ast.walk(definition) for child in ast.iter_child_nodes(parent)}
    for call in ast.walk(definition):
        if (isinstance(call, ast.Call) and (call.lineno, call.col_offset) in sites
                and isinstance(call.func, ast.Attribute) and call.func.attr == "item"
                and always_runs(definition, call, parents)):
            return [(function.key[0], function.key[1], definition.lineno)]
    return []


def always_runs(function: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.AST, parents: dict) -> bool:
    """True when every call of `function` evaluates `node`: no branch, loop or early exit before it.

    transformers' `get_max_seqlen` returns None before its `.item()` unless flash
    attention is configured; a call of it is no certain break.
    """
    child, current = node, parents.get(node)
    while current is not None and current is not function:
        if isinstance(current, _CONDITIONAL + (_TRY_STAR,)):
            return False
        if isinstance(current, ast.IfExp) and child is not current.test:
            return False
        if isinstance(current, ast.BoolOp) and child is not current.values[0]:
            return False
        child, current = current, parents.get(current)
    if current is None:
        return False
    for statement in function.body:
        if statement is child:
            return True
        if _may_leave(statement):
            return False
    return False  # in a default or a decorator: not the body


def _may_leave(statement: ast.stmt) -> bool:
    """A statement that may return or raise before the ones after it run (nested scopes aside)."""
    pending: list[ast.AST] = [statement]
    while pending:
        current = pending.pop()
        if isinstance(current, (ast.Return, ast.Raise)):
            return True
        pending.extend(child for child in ast.iter_child_nodes(current)
                       if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)))
    return False


def stable_text(found: object) -> str:
    """A rendering of answers that does not depend on the process (sets sorted): what a digest may hash."""
    if isinstance(found, (frozenset, set)):
        return "{" + ",".join(sorted(stable_text(item) for item in found)) + "}"
    if isinstance(found, (tuple, list)):
        return "(" + ",".join(stable_text(item) for item in found) + ")"
    if isinstance(found, dict):
        return "{" + ",".join(sorted(f"{stable_text(key)}:{stable_text(value)}" for key, value in found.items())) + "}"
    if is_dataclass(found) and not isinstance(found, type):
        return type(found).__name__ + "(" + ",".join(
            stable_text(getattr(found, each.name)) for each in fields(found) if each.compare) + ")"
    return repr(found)


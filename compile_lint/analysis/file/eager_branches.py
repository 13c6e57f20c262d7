"""Which branches of a traced function run only eagerly, and which only under compile.

Branches guarded by `not is_compiling()` or `torch.jit.is_scripting()`, and the statements
after `if is_compiling(): return ...`, never run in a compiled region (`eager_only`); the
bodies of `if is_compiling():` and the `else` of `if not is_compiling():` run only there
(`compile_only`), so fixes never guard them with `not is_compiling()`. A predicate is read
through its aliases, `not`, `and`/`or` and locals bound to it (`predicate_sense`).
"""

from __future__ import annotations

from typing import Iterator, Mapping, Optional

import libcst as cst

from compile_lint.analysis.syntax.imports import ImportMap, dotted_name
from compile_lint.analysis.syntax.predicates import (
    COMPILING_PREDICATE_NAMES,
    COMPILING_PREDICATES,
    EAGER_PREDICATE_NAMES,
    EAGER_PREDICATES,
)
from compile_lint.analysis.syntax.predicates import (
    TRACING_HELPER as _TRACING_HELPER,
)
from compile_lint.analysis.syntax.walk import WHITESPACE_TYPES, walk


def predicate_sense(
    test: cst.BaseExpression,
    imports: ImportMap,
    bindings: Optional[Mapping[str, cst.BaseExpression]] = None,
    eagerly: bool = False,
) -> Optional[bool]:
    """Whether `test` is known True (or False) while Dynamo traces; None when unknown.

    With `eagerly=True`, the same question for eager runs, where every is-compiling
    predicate is False. `not`, `and` and `or` combine known parts: `not is_compiling() and
    logger.isEnabledFor(x)` is False under compile whatever the logger says. `bindings`
    maps local names assigned once to their value (`compiling = is_compiling()`).
    """
    return _sense(test, imports, bindings or {}, eagerly, 0)


def _sense(
    test: cst.BaseExpression, imports: ImportMap, bindings: Mapping[str, cst.BaseExpression], eagerly: bool, depth: int,
) -> Optional[bool]:
    if depth > 10:
        return None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _sense(test.expression, imports, bindings, eagerly, depth + 1)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left = _sense(test.left, imports, bindings, eagerly, depth + 1)
        right = _sense(test.right, imports, bindings, eagerly, depth + 1)
        decisive = isinstance(test.operator, cst.Or)  # True decides `or`, False decides `and`
        if decisive in (left, right):
            return decisive
        return (not decisive) if left is right is (not decisive) else None
    if isinstance(test, cst.Name) and test.value in bindings:
        return _sense(bindings[test.value], imports, bindings, eagerly, depth + 1)
    if not isinstance(test, cst.Call):
        return None
    if imports.qualname(test.func) == "builtins.bool" and len(test.args) == 1:
        return _sense(test.args[0].value, imports, bindings, eagerly, depth + 1)
    role = predicate_role(test, imports)
    if role == "compiling":
        return not eagerly
    if role == "never":
        return False
    return None


def predicate_role(call: cst.Call, imports: ImportMap) -> Optional[str]:
    """"compiling" for a call True only while Dynamo traces (`torch.compiler.is_compiling()`,
    transformers' `is_torchdynamo_compiling()`), "never" for one False under torch.compile
    and eagerly (`torch.jit.is_scripting()`), else None."""
    name = imports.qualname(call.func) or dotted_name(call.func) or ""
    parts = name.split(".")
    last = parts[-1]
    if name in COMPILING_PREDICATES:
        return "compiling"
    if name in EAGER_PREDICATES or (last in EAGER_PREDICATE_NAMES and not call.args):
        return "never"
    if parts[0] in ("self", "cls") or name.startswith("torch.jit."):
        return None
    if last in COMPILING_PREDICATE_NAMES and not call.args:
        return "compiling"
    helper, modules = _TRACING_HELPER
    if last == helper and len(parts) > 1 and parts[-2] in modules and len(call.args) <= 1:
        return "compiling"
    return None


def is_compiling_helper(qualified: str) -> bool:
    """True for the qualified name of an is-compiling function (`torch.compiler.is_compiling`,
    `transformers.utils.is_torchdynamo_compiling`): `not NAME()` guards eager-only code."""
    if qualified in COMPILING_PREDICATES:
        return True
    parts = qualified.split(".")
    return parts[-1] in COMPILING_PREDICATE_NAMES and not qualified.startswith("torch.jit.")


# Every eager predicate's name contains one of these.
PREDICATE_WORDS = ("compiling", "is_scripting", "is_tracing", "exporting")


class EagerBranches(cst.CSTVisitor):
    """Branches only eager runs reach (not traced) and those only compiled runs reach."""

    def __init__(self, imports: ImportMap, eager_only: set[cst.CSTNode], compile_only: set[cst.CSTNode]) -> None:
        self.imports = imports
        self.eager_only = eager_only
        self.compile_only = compile_only
        self._bindings: list[_LocalBindings] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bindings.append(_LocalBindings(node))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._bindings.pop()

    def _senses(self, test: cst.BaseExpression) -> tuple[Optional[bool], Optional[bool]]:
        """The test's value under compile and in eager runs (None: unknown)."""
        bindings = self._bindings[-1] if self._bindings else {}
        return (predicate_sense(test, self.imports, bindings),
                predicate_sense(test, self.imports, bindings, eagerly=True))

    def _split(self, test: cst.BaseExpression, body: cst.CSTNode, orelse: Optional[cst.CSTNode]) -> None:
        compiled, eager = self._senses(test)
        if compiled is False:
            self.eager_only.add(body)
        elif eager is False:
            self.compile_only.add(body)
        if orelse is None:
            return
        if compiled is True:
            self.eager_only.add(orelse)
        elif eager is True:
            self.compile_only.add(orelse)

    def visit_If(self, node: cst.If) -> None:
        self._split(node.test, node.body, node.orelse)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._split(node.test, node.body, node.orelse)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        # `if is_compiling(): return x` leaves the rest of the block to eager runs, and
        # `if not is_compiling(): return x` leaves it to compiled ones.
        statements = list(node.body)
        for position, statement in enumerate(statements):
            if not (isinstance(statement, cst.If) and statement.orelse is None and _always_exits(statement.body)):
                continue
            compiled, eager = self._senses(statement.test)
            rest = statements[position + 1:]
            if compiled is True:
                self.eager_only.update(rest)
            elif eager is True:
                self.compile_only.update(rest)


def _always_exits(block: cst.BaseSuite) -> bool:
    """True when the block's last statement is `return`, `raise`, `continue` or `break`."""
    if isinstance(block, cst.IndentedBlock):
        if not block.body:
            return False
        last = block.body[-1]
        if not isinstance(last, cst.SimpleStatementLine) or not last.body:
            return False
        small = last.body[-1]
    elif isinstance(block, cst.SimpleStatementSuite) and block.body:
        small = block.body[-1]
    else:
        return False
    return isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break))


class _LocalBindings(Mapping[str, cst.BaseExpression]):
    """Names a function binds exactly once, by a plain `name = value`, mapped to the value.

    Computed on first lookup: most functions never test a bare name against is-compiling.
    """

    def __init__(self, function: cst.FunctionDef) -> None:
        self.function = function
        self._values: Optional[dict[str, cst.BaseExpression]] = None

    def _computed(self) -> dict[str, cst.BaseExpression]:
        if self._values is None:
            counter = _Bindings()
            walk(self.function.body, counter.on_visit, None, WHITESPACE_TYPES)
            params = self.function.params
            extra = [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
            for parameter in (*params.posonly_params, *params.params, *params.kwonly_params, *extra):
                counter.bind(parameter.name)
            self._values = {name: value for name, value in counter.values.items() if counter.count.get(name) == 1}
        return self._values

    def __getitem__(self, name: str) -> cst.BaseExpression:
        return self._computed()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._computed()

    def __iter__(self) -> Iterator[str]:
        return iter(self._computed())

    def __len__(self) -> int:
        return len(self._computed())


class _Bindings:
    """Counts every way a function binds each name; remembers plain `name = value` values."""

    # Bound in a way that is never a single plain `name = value`: disqualifies the name.
    _DISQUALIFIED = 2

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.values: dict[str, cst.BaseExpression] = {}

    def bind(self, target: cst.CSTNode, weight: int = 1) -> None:
        if isinstance(target, cst.Name):
            self.count[target.value] = self.count.get(target.value, 0) + weight
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind(element.value, weight)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, weight)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self.bind(node.name)
            return False  # their own scope
        if isinstance(node, cst.Lambda):
            return False
        if isinstance(node, cst.Assign):
            for target in node.targets:
                self.bind(target.target)
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                self.values[node.targets[0].target.value] = node.value
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            self.bind(node.target, self._DISQUALIFIED)
        elif isinstance(node, (cst.For, cst.CompFor)):
            self.bind(node.target)
        elif isinstance(node, cst.AsName):
            self.bind(node.name)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            for item in node.names:
                self.bind(item.name, self._DISQUALIFIED)
        elif isinstance(node, cst.Del):
            self.bind(node.target)
        return True

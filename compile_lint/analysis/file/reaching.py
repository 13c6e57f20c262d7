"""Reaching bindings: which assignments of a local can be the value a given read sees.

Flow-insensitive kinds merge everything a name is ever bound to, so `skip = False`,
`if self.training: skip = torch.rand([]) < p`, `if not skip:` reads as "maybe a tensor"
and the break is hidden; and `n = x.sum()` ... `n = 4` reads as a tensor at a later `n`.
This walks one function's statements in order (if/else, loops to a fixed point,
try/except, with, early exits) and records, for each read of a local, the bindings that
reach it. Branches that only run eagerly (`if not is_compiling():`) are skipped: their
bindings never happen under compile. Reads inside lambdas and comprehensions are not
recorded (they have scopes of their own); callers fall back to the flow-insensitive kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

import libcst as cst

from compile_lint.analysis.syntax.walk import code_children


@dataclass(frozen=True, eq=False)
class Binding:
    """One binding of a local: `value` as `facts.AssignedValue` encodes it, made by `statement`.

    `value` is None for the parameter's own value on entry.
    """

    name: str
    value: object
    statement: Optional[cst.CSTNode]


def target_bindings(target: cst.BaseExpression, value: object) -> list[tuple[cst.Name, object]]:
    """(name node, value) for each local an assignment target binds; unpacking encodes the position.

    `a, *rest = v` binds a to ("element", v, 0) and rest to ("starred", v).
    """
    if isinstance(target, cst.Name):
        return [(target, value)]
    found: list[tuple[cst.Name, object]] = []
    if isinstance(target, (cst.Tuple, cst.List)):
        for index, element in enumerate(target.elements):
            if isinstance(element, cst.StarredElement):
                found.extend(target_bindings(element.value, ("starred", value)))
            else:
                found.extend(target_bindings(element.value, ("element", value, index)))
    return found


State = dict  # name -> frozenset[Binding]; None stands for "not reachable"


def _merge(*states: Optional[State]) -> Optional[State]:
    live = [state for state in states if state is not None]
    if not live:
        return None
    merged: State = dict(live[0])
    for state in live[1:]:
        for name, bindings in state.items():
            merged[name] = merged.get(name, frozenset()) | bindings
    return merged


_SCOPES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.FunctionDef, cst.ClassDef)


class ReachingBindings:
    """For one function: read (a `cst.Name` node) -> the bindings that may reach it."""

    def __init__(self, function: cst.FunctionDef, eager_only: Iterable[cst.CSTNode] = ()) -> None:
        self.function = function
        self.eager_only = frozenset(eager_only)
        self.reads: dict[cst.Name, frozenset[Binding]] = {}
        self._by_target: dict[cst.Name, Binding] = {}  # one Binding per binding site, across loop passes
        self._loops: list[tuple[list, list]] = []  # (continue states, break states) of enclosing loops
        entry: State = {}
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg,
                      params.star_kwarg):
            if isinstance(param, cst.Param):
                entry[param.name.value] = frozenset({self._binding(param.name, None, None)})
        self._block(_statements(function.body), entry)

    def _binding(self, target: cst.Name, value: object, statement: Optional[cst.CSTNode]) -> Binding:
        binding = self._by_target.get(target)
        if binding is None:
            binding = self._by_target[target] = Binding(target.value, value, statement)
        return binding

    # ----- expressions ---------------------------------------------------------------
    def _read(self, expr: Optional[cst.CSTNode], state: State, statement: cst.CSTNode) -> None:
        """Record the reads in `expr`; bind walrus targets as they are evaluated."""
        if expr is None:
            return
        stack: list[cst.CSTNode] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Name):
                if node.value in state:
                    self.reads[node] = state[node.value]
                continue
            if isinstance(node, _SCOPES):
                continue
            if isinstance(node, cst.NamedExpr):
                self._read(node.value, state, statement)
                self._bind(node.target, node.value, state, statement)
                continue
            if isinstance(node, cst.Attribute):
                stack.append(node.value)  # `.attr` is no read of a local
                continue
            if isinstance(node, cst.Arg):
                stack.append(node.value)  # nor is a keyword's name
                continue
            # Whitespace holds no read: skip it (and libcst's costly `children` property).
            stack.extend(reversed(code_children(node)))

    def _bind(self, target: cst.BaseExpression, value: object, state: State, statement: cst.CSTNode) -> None:
        if isinstance(target, (cst.Attribute, cst.Subscript)):
            self._read(target, state, statement)  # `x[i] = v` reads x and i
            return
        for name, bound in target_bindings(target, value):
            state[name.value] = frozenset({self._binding(name, bound, statement)})
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                if isinstance(element.value, (cst.Attribute, cst.Subscript)):
                    self._read(element.value, state, statement)

    # ----- statements ----------------------------------------------------------------
    def _block(self, statements: Sequence[cst.CSTNode], state: Optional[State]) -> Optional[State]:
        for statement in statements:
            if state is None:
                return None
            state = self._statement(statement, dict(state))
        return state

    def _statement(self, statement: cst.CSTNode, state: State) -> Optional[State]:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in statement.body:
                outcome = self._small(small, state)
                if outcome is None:
                    return None
            return state
        if isinstance(statement, cst.If):
            return self._if(statement, state)
        if isinstance(statement, (cst.For, cst.While)):
            return self._loop(statement, state)
        if isinstance(statement, cst.Try):
            return self._try(statement, state)
        if isinstance(statement, cst.With):
            for item in statement.items:
                self._read(item.item, state, statement)
                if item.asname is not None:
                    self._bind(item.asname.name, ("with", item.item), state, statement)
            return self._block(_statements(statement.body), state)
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            state[statement.name.value] = frozenset({self._binding(statement.name, statement, statement)})
            return state
        if isinstance(statement, cst.Match):
            self._read(statement.subject, state, statement)
            outs = [self._block(_statements(case.body), dict(state)) for case in statement.cases]
            return _merge(state, *outs)
        return state

    def _small(self, small: cst.CSTNode, state: State) -> Optional[State]:
        """Apply one small statement to `state` in place; None when control leaves here."""
        if isinstance(small, cst.Assign):
            self._read(small.value, state, small)
            for target in small.targets:
                self._bind(target.target, small.value, state, small)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                self._read(small.value, state, small)
                self._bind(small.target, small.value, state, small)
        elif isinstance(small, cst.AugAssign):
            self._read(small.target, state, small)
            self._read(small.value, state, small)
            if isinstance(small.target, cst.Name):
                self._bind(small.target, ("aug", small.target, small.value), state, small)
        elif isinstance(small, (cst.Return, cst.Raise)):
            self._read(small, state, small)
            return None
        elif isinstance(small, (cst.Continue, cst.Break)):
            if self._loops:
                continues, breaks = self._loops[-1]
                (continues if isinstance(small, cst.Continue) else breaks).append(dict(state))
            return None
        else:
            self._read(small, state, small)
        return state

    def _if(self, statement: cst.If, state: State) -> Optional[State]:
        self._read(statement.test, state, statement)
        body = None if statement.body in self.eager_only else self._block(_statements(statement.body), dict(state))
        orelse = statement.orelse
        if orelse is None:
            other: Optional[State] = state
        elif orelse in self.eager_only:
            other = None
        elif isinstance(orelse, cst.If):
            other = self._if(orelse, dict(state))
        else:
            other = self._block(_statements(orelse.body), dict(state))
        return _merge(body, other)

    def _loop(self, statement, state: State) -> Optional[State]:
        head: Optional[State] = state
        breaks: list = []
        if isinstance(statement, cst.For):
            self._read(statement.iter, state, statement)  # evaluated once, before the first pass
        for _ in range(3):  # loop-carried bindings settle in a pass or two
            entry = dict(head)  # type: ignore[arg-type]
            if isinstance(statement, cst.For):
                self._bind(statement.target, ("iter", statement.iter), entry, statement)
            else:
                self._read(statement.test, entry, statement)
            continues: list = []
            breaks = []
            self._loops.append((continues, breaks))
            out = self._block(_statements(statement.body), entry)
            self._loops.pop()
            merged = _merge(head, out, *continues)
            if merged == head:
                break
            head = merged
        after = _merge(head, *breaks)
        if statement.orelse is not None and head is not None:
            after = _merge(self._block(_statements(statement.orelse.body), dict(head)), *breaks)
        return after

    def _try(self, statement: cst.Try, state: State) -> Optional[State]:
        body = self._block(_statements(statement.body), dict(state))
        # A handler may start anywhere in the body: before it, or after all of it.
        handler_entry = _merge(state, body) or state
        outs = [self._block(_statements(handler.body), dict(handler_entry)) for handler in statement.handlers]
        if statement.orelse is not None and body is not None:
            body = self._block(_statements(statement.orelse.body), body)
        after = _merge(body, *outs)
        if statement.finalbody is not None:
            final = self._block(_statements(statement.finalbody.body), dict(_merge(after, handler_entry) or state))
            return final if after is not None else None
        return after


def _statements(block: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    if isinstance(block, cst.IndentedBlock):
        return block.body
    return [block]

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


# The bindings one read may see before the read is given up (not recorded: its kind is then the
# flow-insensitive one, of every binding of the name). A name rebound in each of N branches
# would otherwise reach its reads with up to N bindings each, N * N in all; the most in the
# installed transformers, timm and diffusers is 69. A new binding of the name starts afresh.
READ_BINDINGS_BUDGET = 128
_TOO_MANY: frozenset = frozenset({"too many bindings"})


class _State:
    """The bindings that reach a point: name -> frozenset[Binding] (None stands for "not reachable").

    A branch or a loop pass starts from a fork of the state before it, which holds only the
    names the branch binds and reads the others through: copying every name at every
    statement, and joining every name at every branch, made a function of many names and
    branches quadratic (4,000 `if`s among 8,000 names: 9 s). Joins look only at the names the
    branches bound.
    """

    __slots__ = ("parent", "local")

    def __init__(self, parent: Optional["_State"] = None, local: Optional[dict] = None) -> None:
        self.parent = parent
        self.local: dict[str, frozenset[Binding]] = local if local is not None else {}

    def get(self, name: str) -> Optional[frozenset[Binding]]:
        state: Optional[_State] = self
        while state is not None:
            found = state.local.get(name)
            if found is not None:
                return found
            state = state.parent
        return None

    def fork(self) -> "_State":
        return _State(self)

    def changes(self, since: "_State") -> dict[str, frozenset[Binding]]:
        """The names bound on the way from `since` (an ancestor, or the state itself) to this state."""
        chain = []
        state: Optional[_State] = self
        while state is not None and state is not since:
            chain.append(state.local)
            state = state.parent
        found: dict[str, frozenset[Binding]] = {}
        for local in reversed(chain):  # the innermost binding wins
            found.update(local)
        return found


def _joined(base: _State, states: Sequence[Optional[_State]]) -> Optional[dict[str, frozenset[Binding]]]:
    """Where the states (forks of `base`, or `base` itself) meet, as the names bound since `base` with
    their bindings there; None when none of them is reachable.

    A name bound in some of them reaches with every binding any live state holds for it.
    """
    live = [state for state in states if state is not None]
    if not live:
        return None
    changed = [state.changes(base) for state in live]
    joined: dict[str, frozenset[Binding]] = {}
    for name in {name for found in changed for name in found}:
        bindings: frozenset[Binding] = frozenset()
        for found in changed:
            value = found[name] if name in found else base.get(name)
            if value is _TOO_MANY or (value is not None and len(bindings) + len(value) > READ_BINDINGS_BUDGET
                                      and len(bindings | value) > READ_BINDINGS_BUDGET):
                bindings = _TOO_MANY
                break
            if value is not None:
                bindings = bindings | value
        joined[name] = bindings
    return joined


def _join(base: _State, *states: Optional[_State]) -> Optional[_State]:
    """`_joined`, written into `base` (the caller's own state), which is returned; None when none is reachable."""
    joined = _joined(base, states)
    if joined is None:
        return None
    base.local.update(joined)
    return base


_SCOPES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.FunctionDef, cst.ClassDef)


class ReachingBindings:
    """For one function: read (a `cst.Name` node) -> the bindings that may reach it."""

    def __init__(self, function: cst.FunctionDef, eager_only: Iterable[cst.CSTNode] = ()) -> None:
        self.function = function
        self.eager_only = frozenset(eager_only)
        self.reads: dict[cst.Name, frozenset[Binding]] = {}
        self._by_target: dict[cst.Name, Binding] = {}  # one Binding per binding site, across loop passes
        # Of each enclosing loop: the state its pass started from, and the names bound since it at each
        # `continue` and `break` (the states themselves change as the pass goes on).
        self._loops: list[tuple[_State, list, list]] = []
        entry = _State()
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg,
                      params.star_kwarg):
            if isinstance(param, cst.Param):
                entry.local[param.name.value] = frozenset({self._binding(param.name, None, None)})
        self._block(_statements(function.body), entry)

    def _binding(self, target: cst.Name, value: object, statement: Optional[cst.CSTNode]) -> Binding:
        binding = self._by_target.get(target)
        if binding is None:
            binding = self._by_target[target] = Binding(target.value, value, statement)
        return binding

    # ----- expressions ---------------------------------------------------------------
    def _read(self, expr: Optional[cst.CSTNode], state: _State, statement: cst.CSTNode) -> None:
        """Record the reads in `expr`; bind walrus targets as they are evaluated."""
        if expr is None:
            return
        stack: list[cst.CSTNode] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Name):
                found = state.get(node.value)
                if found is not None and found is not _TOO_MANY:
                    self.reads[node] = found
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

    def _bind(self, target: cst.BaseExpression, value: object, state: _State, statement: cst.CSTNode) -> None:
        if isinstance(target, (cst.Attribute, cst.Subscript)):
            self._read(target, state, statement)  # `x[i] = v` reads x and i
            return
        for name, bound in target_bindings(target, value):
            state.local[name.value] = frozenset({self._binding(name, bound, statement)})
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                if isinstance(element.value, (cst.Attribute, cst.Subscript)):
                    self._read(element.value, state, statement)

    # ----- statements ----------------------------------------------------------------
    def _block(self, statements: Sequence[cst.CSTNode], state: Optional[_State]) -> Optional[_State]:
        """Apply `statements` to `state` (changed in place); None when control leaves the block."""
        for statement in statements:
            if state is None:
                return None
            state = self._statement(statement, state)
        return state

    def _statement(self, statement: cst.CSTNode, state: _State) -> Optional[_State]:
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
            state.local[statement.name.value] = frozenset({self._binding(statement.name, statement, statement)})
            return state
        if isinstance(statement, cst.Match):
            self._read(statement.subject, state, statement)
            outs = [self._block(_statements(case.body), state.fork()) for case in statement.cases]
            return _join(state, state, *outs)
        return state

    def _small(self, small: cst.CSTNode, state: _State) -> Optional[_State]:
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
                start, continues, breaks = self._loops[-1]
                (continues if isinstance(small, cst.Continue) else breaks).append(state.changes(start))
            return None
        else:
            self._read(small, state, small)
        return state

    def _if(self, statement: cst.If, state: _State) -> Optional[_State]:
        self._read(statement.test, state, statement)
        body = None if statement.body in self.eager_only else self._block(_statements(statement.body), state.fork())
        orelse = statement.orelse
        if orelse is None:
            other: Optional[_State] = state
        elif orelse in self.eager_only:
            other = None
        elif isinstance(orelse, cst.If):
            other = self._if(orelse, state.fork())
        else:
            other = self._block(_statements(orelse.body), state.fork())
        return _join(state, body, other)

    def _loop(self, statement, state: _State) -> Optional[_State]:
        head = state.fork()  # the state at the top of a pass, over the state before the loop
        breaks: list = []
        if isinstance(statement, cst.For):
            self._read(statement.iter, state, statement)  # evaluated once, before the first pass
        for _ in range(3):  # loop-carried bindings settle in a pass or two
            entry = head.fork()
            if isinstance(statement, cst.For):
                self._bind(statement.target, ("iter", statement.iter), entry, statement)
            else:
                self._read(statement.test, entry, statement)
            continues: list = []
            breaks = []
            self._loops.append((head, continues, breaks))
            out = self._block(_statements(statement.body), entry)
            self._loops.pop()
            passes = ([out] if out is not None else []) + [_State(head, found) for found in continues]
            grown = _grown(head, passes)
            if not grown:
                break
            head.local.update(grown)
        exits = [_State(head, found) for found in breaks]
        if statement.orelse is not None:
            # The `else` runs when the test turns false: from the head; a `break` skips it.
            after = _joined(head, [self._block(_statements(statement.orelse.body), head.fork()), *exits])
        else:
            after = _joined(head, [head, *exits])
        if after is None:
            return None
        state.local.update(head.local)
        state.local.update(after)
        return state

    def _try(self, statement: cst.Try, state: _State) -> Optional[_State]:
        body = self._block(_statements(statement.body), state.fork())
        # A handler may start anywhere in the body: before it, or after all of it.
        handler_entry = state.fork()
        handler_entry.local.update(_joined(state, [state, body]) or {})
        outs = [self._block(_statements(handler.body), handler_entry.fork()) for handler in statement.handlers]
        if statement.orelse is not None and body is not None:
            body = self._block(_statements(statement.orelse.body), body)
        after = _joined(state, [body, *outs])
        if statement.finalbody is not None:
            # The finally block starts after the body or a handler, or where either stopped.
            entry = state.fork()
            entry.local.update(handler_entry.local if after is None else
                               _joined(state, [_State(state, after), handler_entry]) or {})
            final = self._block(_statements(statement.finalbody.body), entry)
            if final is None or after is None:
                return None
            state.local.update(final.changes(state))
            return state
        if after is None:
            return None
        state.local.update(after)
        return state


def _grown(head: _State, passes: list[_State]) -> dict[str, frozenset[Binding]]:
    """The names whose bindings at the top of the next pass grow past `head`'s (the passes' ends and
    `continue`s, forks of `head`), with their bindings there."""
    grown: dict[str, frozenset[Binding]] = {}
    joined = _joined(head, [head, *passes]) or {}
    for name, bindings in joined.items():
        if bindings != head.get(name):
            grown[name] = bindings
    return grown


def _statements(block: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    if isinstance(block, cst.IndentedBlock):
        return block.body
    return [block]

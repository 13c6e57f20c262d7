"""Which bindings reach each read, in one scope: the model's flow-sensitive names.

A name read after `a = dec1; a = dec2` holds only `dec2`; `h = gate(h)` passes the earlier
`h` to `gate`. Places are names and, for a dict bound to a name whose every use in the
scope is a constant subscript (`d["a"]["b"] = f; d["a"]["b"]()`), the constant subscript
chains of it. Reaching definitions are computed once per scope over its statements
(branches merge, loops run to a fixed point, `try` bodies may stop anywhere, `return` /
`raise` / `break` / `continue` end a path). A read with no reaching binding in the scope,
or of a place the scope cannot follow (a name rebound from elsewhere: `global`, a closure,
a comprehension, `del`, a walrus), is `None`: the model then reads the name's value joined
over all its bindings.
"""

from __future__ import annotations

import ast
from typing import Optional, Union, cast

Place = tuple  # ("name", key, key, ...): a name and the constant keys subscripting it
Definition = Union[int, tuple]  # id() of the binding node, or ("via", id, depth): a binding of a prefix
State = dict  # place -> frozenset of definitions

_KEYS = (str, int)
_EXITS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_MAX_PLACES = 400


class ScopeFlow:
    """Reaching definitions of one scope's places (a module's, a function's or a class body's)."""

    def __init__(self, body: list[ast.stmt], untracked: set[str], parameters: tuple[str, ...] = (),
                 unplaced: frozenset[str] = frozenset()) -> None:
        self.untracked = set(untracked)
        self.unplaced = unplaced  # names other scopes read: what they hold may change there (`d[k] = f`)
        self.places: set[Place] = set()
        self.reaching: dict[int, frozenset] = {}  # id(read node) -> definitions that reach it
        self.subscript_places: dict[int, Place] = {}  # id(Subscript read or store) -> its place
        self._collect(body)
        state: State = {(name,): frozenset({("param", name)}) for name in parameters if (name,) in self.places}
        if len(self.places) <= _MAX_PLACES:
            self._block(body, state, [])

    # ----- which places the scope can follow -----
    def _collect(self, body: list[ast.stmt]) -> None:
        """One walk of the scope's code: its names, what it cannot follow, the dict places it can."""
        escaped: set[str] = set(self.unplaced)
        subscripted: set[str] = set()
        subscripts: list[ast.Subscript] = []
        loads: list[tuple[ast.Name, Optional[ast.AST]]] = []
        updated: set[int] = set()
        untracked = self.untracked
        for node, parent in _walk_with_parents(body):
            kind = type(node)
            if kind is ast.Name:
                self.places.add((node.id,))
                if isinstance(node.ctx, ast.Load):
                    loads.append((node, parent))
            elif kind is ast.Subscript:
                subscripts.append(node)
            elif kind is ast.Call:
                if _update_call(node, None):
                    updated.add(id(node.func.value))
            elif kind is ast.Global or kind is ast.Nonlocal:
                untracked.update(node.names)
            elif kind is ast.Delete:
                untracked.update(target.id for target in node.targets
                                 if isinstance(target, ast.Name))
            elif kind is ast.NamedExpr and isinstance(node.target, ast.Name):
                untracked.add(node.target.id)
            elif (kind is ast.MatchAs or kind is ast.MatchStar) and node.name:
                untracked.add(node.name)
            elif kind is ast.comprehension:
                untracked.update(name.id for name in ast.walk(node.target)
                                 if isinstance(name, ast.Name))
        for node, parent in loads:
            if isinstance(parent, ast.Subscript) and parent.value is node and _place(parent) is not None:
                subscripted.add(node.id)
            elif id(node) not in updated:
                escaped.add(node.id)
        for node in subscripts:
            place = _place(node)
            if place is not None and place[0] in subscripted and place[0] not in escaped:
                self.subscript_places[id(node)] = place
                for end in range(2, len(place) + 1):
                    self.places.add(place[:end])

    def tracked(self, place: Place) -> bool:
        """Whether reads of `place` are answered by this flow."""
        return place in self.places and place[0] not in self.untracked

    # ----- the dataflow -----
    def _block(self, body: list[ast.stmt], state: Optional[State], exits: list[State]) -> Optional[State]:
        for statement in body:
            if state is None:
                return None
            state = self._statement(statement, state, exits)
        return state

    def _statement(self, statement: ast.stmt, state: State, exits: list[State]) -> Optional[State]:
        if isinstance(statement, ast.If):
            self._reads(statement.test, state)
            after_body = self._block(statement.body, dict(state), exits)
            after_else = self._block(statement.orelse, dict(state), exits)
            return _merge(after_body, after_else)
        if isinstance(statement, (ast.For, ast.AsyncFor, ast.While)):
            head = statement.iter if not isinstance(statement, ast.While) else statement.test
            self._reads(head, state)
            loop_exits: list[State] = []
            entry = dict(state)
            for _ in range(3):  # a loop's body sees its own bindings from the previous round
                current = dict(entry)
                if not isinstance(statement, ast.While):
                    self._bind_target(statement.target, current)
                end = self._block(statement.body, current, loop_exits)
                merged = _merge(entry, end)
                for exit_state in loop_exits:
                    merged = _merge(merged, exit_state)
                if merged == entry:
                    break
                entry = merged or entry
            after = self._block(statement.orelse, dict(entry), exits)
            for exit_state in loop_exits:
                after = _merge(after, exit_state)
            return _merge(after, entry)
        if isinstance(statement, ast.Try) or type(statement).__name__ == "TryStar":
            statement = cast(ast.Try, statement)
            before = dict(state)
            after_body = self._block(statement.body, dict(state), exits)
            # A handler may start anywhere in the body: it sees the bindings before it and in it.
            handler_entry = _merge(before, after_body) or before
            ends = [self._block(statement.orelse, dict(after_body), exits) if after_body is not None else None]
            for handler in statement.handlers:
                entry = dict(handler_entry)
                if handler.name:
                    entry[(handler.name,)] = frozenset({id(handler)})
                ends.append(self._block(handler.body, entry, exits))
            joined: Optional[State] = None
            for end in ends:
                joined = _merge(joined, end)
            if statement.finalbody:
                final = self._block(statement.finalbody, dict(joined or handler_entry), exits)
                return final if joined is not None else None
            return joined
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                self._reads(item.context_expr, state)
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, state)
            return self._block(statement.body, state, exits)
        if isinstance(statement, ast.Match):
            self._reads(statement.subject, state)
            merged_match: Optional[State] = None
            for case in statement.cases:
                merged_match = _merge(merged_match, self._block(case.body, dict(state), exits))
            return _merge(merged_match, state)
        if isinstance(statement, _EXITS):
            self._reads(statement, state)
            if isinstance(statement, (ast.Break, ast.Continue)):
                exits.append(dict(state))
            return None
        self._reads(statement, state, skip_targets=True)
        self._bindings(statement, state)
        return state

    def _bindings(self, statement: ast.stmt, state: State) -> None:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                self._bind_target(target, state, statement.value)
        elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)) and (
                isinstance(statement, ast.AugAssign) or statement.value is not None):
            self._bind_target(statement.target, state)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._define((statement.name,), id(statement), state)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                if alias.name != "*":
                    self._define(((alias.asname or alias.name.split(".")[0]),), id(alias), state)
        elif isinstance(statement, ast.Expr) and _update_call(statement.value, None):
            call = cast(ast.Call, statement.value)
            receiver = cast(ast.Attribute, call.func).value
            base = _place(receiver) if isinstance(receiver, ast.Subscript) else (
                (receiver.id,) if isinstance(receiver, ast.Name) else None)
            if base is not None and isinstance(call.args[0], ast.Dict):
                for key in call.args[0].keys:
                    if isinstance(key, ast.Constant) and isinstance(key.value, _KEYS):
                        self._define(base + (key.value,), id(key), state)

    def _bind_target(self, target: ast.expr, state: State, value: Optional[ast.expr] = None) -> None:
        if isinstance(target, ast.Name):
            self._define((target.id,), id(target), state)
        elif isinstance(target, ast.Subscript):
            place = self.subscript_places.get(id(target))
            if place is not None:
                self._define(place, id(target), state)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind_target(element, state)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, state)

    def _define(self, place: Place, definition: int, state: State) -> None:
        """`place` is bound here: its deeper places now hold what this binding's value holds there."""
        if place not in self.places:
            return
        state[place] = frozenset({definition})
        for other in self.places:
            if len(other) > len(place) and other[:len(place)] == place:
                state[other] = frozenset({("via", definition, len(place))})

    def _reads(self, node: ast.AST, state: State, skip_targets: bool = False) -> None:
        for child in _walk_expression(node, skip_targets):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                found = state.get((child.id,))
                if found:
                    self.reaching[id(child)] = found
            elif isinstance(child, ast.Subscript) and isinstance(child.ctx, ast.Load):
                place = self.subscript_places.get(id(child))
                if place is not None and state.get(place):
                    self.reaching[id(child)] = state[place]


def _merge(first: Optional[State], second: Optional[State]) -> Optional[State]:
    if first is None:
        return dict(second) if second is not None else None
    if second is None:
        return dict(first)
    merged = dict(first)
    for place, found in second.items():
        merged[place] = merged.get(place, frozenset()) | found
    return merged


def _place(node: ast.Subscript) -> Optional[Place]:
    """`d["a"][0]` -> ("d", "a", 0); None when a key is not a constant or the base no name."""
    keys: list = []
    current: ast.expr = node
    while isinstance(current, ast.Subscript):
        key = current.slice
        if not (isinstance(key, ast.Constant) and isinstance(key.value, _KEYS) and not isinstance(key.value, bool)):
            return None
        keys.append(key.value)
        current = current.value
    if not isinstance(current, ast.Name):
        return None
    return (current.id, *reversed(keys))


def _update_call(node: Optional[ast.AST], name: Optional[ast.Name]) -> bool:
    """`d.update({...})` with a dict display: a binding of d's keys, not an escape of d."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update"
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Dict)):
        return False
    receiver = node.func.value
    return name is None or receiver is name


def _walk_scope(body: list[ast.stmt]):
    """Every node of a scope's own code (nested functions, lambdas and classes left out)."""
    pending: list[ast.AST] = list(reversed(body))
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue
        pending.extend(reversed(list(ast.iter_child_nodes(node))))


def _walk_with_parents(body: list[ast.stmt]):
    pending: list[tuple[ast.AST, Optional[ast.AST]]] = [(statement, None) for statement in reversed(body)]
    while pending:
        node, parent = pending.pop()
        yield node, parent
        if isinstance(node, _SCOPES):
            continue
        pending.extend((child, node) for child in reversed(list(ast.iter_child_nodes(node))))


def _walk_expression(node: ast.AST, skip_targets: bool):
    """The nodes a statement reads: its expressions, not nested scopes' bodies nor its own store targets."""
    pending = [node]
    while pending:
        current = pending.pop()
        if current is not node and isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            # Decorators, defaults and bases run here; the body does not.
            pending.extend(getattr(current, "decorator_list", []))
            if isinstance(current, ast.ClassDef):
                pending.extend(current.bases)
            else:
                pending.extend(current.args.defaults)
                pending.extend(d for d in current.args.kw_defaults if d is not None)
            continue
        if current is not node and isinstance(current, ast.Lambda):
            pending.extend(current.args.defaults)
            continue
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)) and current is node:
            pending.extend(current.decorator_list)
            pending.extend(current.args.defaults)
            pending.extend(d for d in current.args.kw_defaults if d is not None)
            continue
        if isinstance(current, ast.ClassDef) and current is node:
            pending.extend(current.decorator_list)
            pending.extend(current.bases)
            pending.extend(keyword.value for keyword in current.keywords)
            continue
        yield current
        for child in ast.iter_child_nodes(current):
            if skip_targets and isinstance(child, (ast.Name, ast.Subscript)) and isinstance(
                    getattr(child, "ctx", None), ast.Store) and isinstance(current, (ast.Assign, ast.AnnAssign)):
                if isinstance(child, ast.Subscript):
                    pending.append(child.value)
                    pending.append(child.slice)
                continue
            pending.append(child)

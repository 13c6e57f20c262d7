"""A fast, read-only walk over a libcst tree with `CSTVisitor` semantics.

`node.visit(visitor)` rebuilds every node of the tree (libcst's visit is shared with its
transformers) and so costs more than the parse itself. A linter only reads the tree, so
this module walks it without rebuilding: children come straight from the node's fields,
in the order libcst's own `_visit_and_replace_children` visits them (read once per node
class from libcst's source, and checked against `node.children` by the test suite).
"""

from __future__ import annotations

import contextlib
import inspect
import re
import threading
from typing import Callable, Iterator, Optional

import libcst as cst

# libcst's visit helpers name the field they visit: visit_required(self, "body", ...).
_FIELD_VISIT = re.compile(
    r"visit_(?:required|optional|sentinel|sequence|iterable|body_sequence|body_iterable)\(\s*self,\s*\"(\w+)\""
)
_FIELDS: dict[type, tuple[str, ...]] = {}
_CODE_FIELDS: dict[type, tuple[str, ...]] = {}
# Fields that hold only whitespace nodes (libcst types them so; the tests check it).
_WHITESPACE_FIELDS = frozenset(
    {"leading_lines", "lines_after_decorators", "header", "footer", "newline", "comment",
     "leading_whitespace", "trailing_whitespace", "empty_lines"}
)
# Pure layout: spaces, newlines, blank lines and comments between tokens.
WHITESPACE_TYPES = frozenset(
    {
        cst.SimpleWhitespace,
        cst.ParenthesizedWhitespace,
        cst.TrailingWhitespace,
        cst.EmptyLine,
        cst.Newline,
        cst.Comment,
    }
)
_WHITESPACE_NAMES = frozenset(t.__name__ for t in WHITESPACE_TYPES)
_PLANS: dict[type, tuple] = {}
_ATTRIBUTE_HOOK = re.compile(r"^(?:visit|leave)_[A-Za-z]+_\w+$")


def child_fields(node_type: type) -> tuple[str, ...]:
    """The fields of `node_type` that hold child nodes, in libcst's visiting order."""
    fields = _FIELDS.get(node_type)
    if fields is None:
        source = inspect.getsource(node_type._visit_and_replace_children)  # type: ignore[attr-defined]
        fields = tuple(dict.fromkeys(_FIELD_VISIT.findall(source)))
        _FIELDS[node_type] = fields
    return fields


def code_fields(node_type: type) -> tuple[str, ...]:
    """`child_fields` less those that hold only whitespace, blank lines and comments."""
    fields = _CODE_FIELDS.get(node_type)
    if fields is None:
        fields = tuple(
            name for name in child_fields(node_type)
            if not name.startswith("whitespace") and name not in _WHITESPACE_FIELDS
        )
        _CODE_FIELDS[node_type] = fields
    return fields


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The children of `node` in visiting order; equal to `node.children`, much cheaper."""
    return _nodes_in(node, child_fields(type(node)))


def code_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`children(node)` less the fields that hold only whitespace, blank lines and comments."""
    return _nodes_in(node, code_fields(type(node)))


def _nodes_in(node: cst.CSTNode, names: tuple[str, ...]) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            found.extend(value)
    return found


def _own_hooks(cls: type) -> dict[str, Callable]:
    """The hooks (`visit_*`, `leave_*`, `on_*`) that `cls` or a base below CSTVisitor defines.

    CSTVisitor ships a no-op for every hook, so only these can observe anything.
    """
    hooks: dict[str, Callable] = {}
    for klass in reversed(cls.__mro__):
        if klass in _LIBCST_BASES:
            continue
        for name, value in vars(klass).items():
            if (name.startswith(("visit_", "leave_")) or name in ("on_visit", "on_leave")) and callable(value):
                hooks[name] = value
    return hooks


_LIBCST_BASES = frozenset(cst.CSTVisitor.__mro__)


def _plan(cls: type) -> tuple[str, bool, tuple[str, ...], tuple[str, ...]]:
    """How to walk with a visitor class: mode, whitespace skippable, visit and leave hook names."""
    plan = _PLANS.get(cls)
    if plan is None:
        hooks = _own_hooks(cls)
        if any(_ATTRIBUTE_HOOK.match(name) for name in hooks):
            mode = "libcst"
        elif "on_visit" in hooks or "on_leave" in hooks:
            mode = "generic"
        else:
            mode = "table"
        visits = tuple(name[6:] for name in hooks if name.startswith("visit_"))
        leaves = tuple(name[6:] for name in hooks if name.startswith("leave_"))
        skippable = mode == "table" and not (set(visits) | set(leaves)) & _WHITESPACE_NAMES
        plan = (mode, skippable, visits, leaves)
        if "<locals>" not in cls.__qualname__:  # classes made per call would only fill the cache
            _PLANS[cls] = plan
    return plan


# The nodes that can hold a statement; expressions never do.
STATEMENT_CONTAINERS = (
    cst.Module, cst.BaseCompoundStatement, cst.IndentedBlock, cst.SimpleStatementLine,
    cst.SimpleStatementSuite, cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally,
    cst.MatchCase,
)


def concrete_types(*bases: type) -> frozenset[type]:
    """Every node class that is one of `bases` or derives from one: `type(node) in` it is `isinstance`.

    libcst's node classes are ABCs, and `isinstance` against an ABC costs several times a
    set lookup; walks ask it for every node.
    """
    found: set[type] = set()
    pending = list(bases)
    while pending:
        kind = pending.pop()
        found.add(kind)
        pending.extend(kind.__subclasses__())
    return frozenset(found)


_STATEMENT_CONTAINER_TYPES = concrete_types(*STATEMENT_CONTAINERS)


def _holds_statements(node: cst.CSTNode) -> bool:
    return type(node) in _STATEMENT_CONTAINER_TYPES


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor, statements_only: bool = False) -> None:
    """Walk `node` with `visitor` exactly as `node.visit(visitor)` would, without rebuilding it.

    Visitors with attribute hooks (`visit_Name_value`) fall back to libcst's own walk.
    Whitespace is skipped when the visitor cannot observe it. With `statements_only`, the
    walk does not enter expressions: for visitors that only look at statements (imports,
    definitions, `if`), which is all such a visitor would see anyway.
    """
    mode, skippable, visit_names, leave_names = _plan(type(visitor))
    skip = WHITESPACE_TYPES if skippable else None
    descend = _holds_statements if statements_only else None
    if mode == "libcst":
        node.visit(visitor)
        return
    if mode == "generic":
        walk(node, visitor.on_visit, visitor.on_leave, skip, descend)
        return
    visits = {name: getattr(visitor, "visit_" + name) for name in visit_names}
    leaves = {name: getattr(visitor, "leave_" + name) for name in leave_names}
    _table_walk(node, visits, leaves, skip, descend)


def _table_walk(
    node: cst.CSTNode,
    visits: dict[str, Callable],
    leaves: dict[str, Callable],
    skip: Optional[frozenset],
    descend: Optional[Callable[[cst.CSTNode], bool]],
) -> None:
    """`walk` for a visitor's hook tables (node class name -> hook), looked up in the loop itself.

    Most nodes have no hook: calling a function per node only to find that out cost more
    than the walk. Same order and pruning as `walk`: a `visit_` hook returning False skips
    the node's children, and its `leave_` hook still runs.
    """
    _walk(node, None, None, visits, leaves, skip, descend)


def walk(
    node: cst.CSTNode,
    on_visit: Callable[[cst.CSTNode], Optional[bool]],
    on_leave: Optional[Callable[[cst.CSTNode], None]] = None,
    skip: Optional[frozenset] = None,
    descend: Optional[Callable[[cst.CSTNode], bool]] = None,
) -> None:
    """Depth-first walk calling `on_visit` before and `on_leave` after each node's children.

    Children are walked when `on_visit` returns a true value (and `descend(node)`, if given,
    is true). With `skip` (WHITESPACE_TYPES), fields that hold only layout are not walked.
    Iterative, so deep trees cannot overflow the stack.
    """
    _walk(node, on_visit, on_leave, {}, {}, skip, descend)


def _walk(node, on_visit, on_leave, visits: dict, leaves: dict, skip, descend) -> None:
    """The one loop behind `walk` (callbacks for every node) and `_table_walk` (hooks by node class name)."""
    if skip is not None:
        flat = _flat_tree(node, build=descend is None)
        if flat is not None:
            _flat_walk(flat, flat.index[id(node)], on_visit, on_leave, visits, leaves, descend)
            return
    fields_of = _CODE_FIELDS if skip is not None else _FIELDS
    fields_for = code_fields if skip is not None else child_fields
    leave = _Leave
    stack: list = [node]
    pop, push, extend = stack.pop, stack.append, stack.extend
    get_visit, get_leave = visits.get, leaves.get
    while stack:
        current = pop()
        kind = type(current)
        if kind is leave:
            current.hook(current.node)
            continue
        if on_visit is not None:
            descending = on_visit(current)
            leave_hook = on_leave
        else:
            name = kind.__name__
            hook = get_visit(name)
            descending = hook is None or hook(current) is not False
            leave_hook = get_leave(name)
        if not descending or (descend is not None and not descend(current)):
            if leave_hook is not None:
                leave_hook(current)
            continue
        if leave_hook is not None:
            push(leave(current, leave_hook))
        names = fields_of.get(kind)
        extend(_reversed_children(current, names if names is not None else fields_for(kind)))


def _reversed_children(node: cst.CSTNode, names: tuple[str, ...]) -> list:
    """The nodes in `node`'s fields `names`, last first (for a stack); a field holds a node, a sequence,
    None or MaybeSentinel."""
    found: list = []
    sentinel = cst.MaybeSentinel
    for field_name in names:
        value = getattr(node, field_name)
        value_type = type(value)
        if value_type is tuple or value_type is list:
            found.extend(value)
        elif value is not None and value_type is not sentinel:
            found.append(value)
    found.reverse()
    return found


def iter_nodes(node: cst.CSTNode, skip: Optional[frozenset] = WHITESPACE_TYPES) -> Iterator[cst.CSTNode]:
    """Every node under `node` (itself included) in visiting order, whitespace skipped by default."""
    if skip is not None:
        flat = _flat_tree(node, build=True)
        if flat is not None:
            start = flat.index[id(node)]
            yield from flat.order[start:flat.end[start]]
            return
    fields_for = code_fields if skip is not None else child_fields
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        pending: list = []
        for name in fields_for(type(current)):
            value = getattr(current, name)
            value_type = type(value)
            if value_type is tuple or value_type is list:
                pending.extend(value)
            elif value is not None and value_type is not cst.MaybeSentinel:
                pending.append(value)  # a child field holds a node, a sequence, None or MaybeSentinel
        pending.reverse()
        stack.extend(pending)


class FlatTree:
    """The code nodes of a tree (layout left out) in walking order, each with where its subtree ends.

    Built with one walk, it lets every later walk of any subtree (the analyses and rules
    walk the same functions several times) run down a list instead of reading each node's
    fields again: skipping a subtree is a jump to its end.
    """

    def __init__(self, root: cst.CSTNode) -> None:
        order: list[cst.CSTNode] = []
        end: list[int] = []
        index: dict[int, int] = {}
        fields_of = _CODE_FIELDS
        stack: list = [root]
        pop, push = stack.pop, stack.append
        while stack:
            current = pop()
            if type(current) is int:
                end[current] = len(order)  # the marker of a subtree's end: every node below it is in
                continue
            position = len(order)
            order.append(current)
            end.append(0)
            index[id(current)] = position
            push(position)
            kind = type(current)
            names = fields_of.get(kind)
            stack.extend(_reversed_children(current, names if names is not None else code_fields(kind)))
        self.root = root
        self.order, self.end, self.index = order, end, index


_indexed = threading.local()  # per thread: the module whose walks may use a FlatTree, and the tree


@contextlib.contextmanager
def flat_walks(module: cst.Module) -> Iterator[None]:
    """Within this block, walks of `module`'s nodes (layout skipped) go down one FlatTree of it, built on first need."""
    previous = getattr(_indexed, "state", None)
    _indexed.state = [module, None]
    try:
        yield
    finally:
        _indexed.state = previous


def _flat_tree(node: cst.CSTNode, build: bool) -> Optional[FlatTree]:
    """The FlatTree holding `node`, if walks go down one (built now when `build`), else None."""
    state = getattr(_indexed, "state", None)
    if state is None:
        return None
    tree = state[1]
    if tree is None:
        if not build:
            return None  # a walk that prunes (statements only) costs less than building the tree
        tree = state[1] = FlatTree(state[0])
    return tree if id(node) in tree.index else None


def _flat_walk(tree: FlatTree, start: int, on_visit, on_leave, visits: dict, leaves: dict, descend) -> None:
    """`_walk` of the subtree at `start`, down the flat list: same calls, in the same order."""
    order, end = tree.order, tree.end
    get_visit, get_leave = visits.get, leaves.get
    pending: list = []  # (subtree end, hook, node) of nodes whose leave hook is due
    position, stop = start, end[start]
    while position < stop:
        while pending and pending[-1][0] <= position:
            _, hook, left = pending.pop()
            hook(left)
        current = order[position]
        if on_visit is not None:
            descending = on_visit(current)
            leave_hook = on_leave
        else:
            name = type(current).__name__
            hook = get_visit(name)
            descending = hook is None or hook(current) is not False
            leave_hook = get_leave(name)
        if not descending or (descend is not None and not descend(current)):
            if leave_hook is not None:
                leave_hook(current)
            position = end[position]
            continue
        if leave_hook is not None:
            pending.append((end[position], leave_hook, current))
        position += 1
    while pending:
        _, hook, left = pending.pop()
        hook(left)


class _Leave:
    """A marker on the walk's stack: call `hook(node)` when popped."""

    __slots__ = ("node", "hook")

    def __init__(self, node: cst.CSTNode, hook: Callable[[cst.CSTNode], None]) -> None:
        self.node = node
        self.hook = hook

"""The traced set: what the model's entry points reach through calls Dynamo inlines.

Breadth first from the entry nodes over the model's call edges, leaving out calls only
eager runs make (`if not is_compiling():` branches), calls of `torch.compiler.disable`d
functions (an intended break at the call, noted for JIT611), functions registered with
`allow_in_graph` and custom ops (in the graph, untraced). Each reached function keeps the
shortest chain of calls to it, what its traced callers pass to each parameter (joined over
the nodes reached: "tensor" when every value is a tensor, "py" when every value is a
Python constant or size), the calls from other files that make a parameter a tensor, and
the branches no traced node of it ran (a constant decided them).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Optional

from compile_lint.analysis.kinds.lattice import Kind
from compile_lint.analysis.model.program import Model
from compile_lint.analysis.model.values import ConstV, FunctionV, KindV, ModuleV, Node

Key = tuple[str, str]


@dataclass
class TracedSet:
    """What the entries reach: nodes, and per function its chain, parameters and untraced branches."""

    nodes: set[Node] = field(default_factory=set)
    parents: dict[Node, tuple[Node, int]] = field(default_factory=dict)
    entries: dict[Node, Optional[tuple]] = field(default_factory=dict)
    # (caller file, calling function qualname, callee as spelled) of traced calls of disabled functions.
    disabled_calls: set[tuple[str, str, str]] = field(default_factory=set)
    # (caller node, line, spelled, library function node) of traced calls from the project into a library.
    library_calls: list[tuple[Node, int, Optional[str], Node]] = field(default_factory=list)
    # Traced node -> (callee node, line) of each traced call it makes (the walk's edges).
    children: dict[Node, list[tuple[Node, int]]] = field(default_factory=dict)
    # (file, line, name) of each traced call of an external name (for libraries without source).
    external_calls: set[tuple[str, int, str]] = field(default_factory=set)
    # (caller file, calling function, callee as spelled, cause, callee key) of each traced call of an
    # `allow_in_graph` function that needs tensor data ("item" or "branch"): Dynamo's fake run of it fails,
    # the graph breaks at the call, and the function is compiled as a frame of its own (an entry).
    allowed_breaks: set[tuple[str, str, str, str, Key]] = field(default_factory=set)
    follow_libraries: bool = True  # whether the walk enters installed libraries' functions
    _by_key: Optional[dict[Key, list[Node]]] = None

    def nodes_of(self, key: Key) -> list[Node]:
        """The reached nodes of function `key`."""
        if self._by_key is None:
            self._by_key = self.functions()
        return self._by_key.get(key, [])

    def functions(self) -> dict[Key, list[Node]]:
        """Each reached function's key -> its reached nodes."""
        found: dict[Key, list[Node]] = {}
        for node in self.nodes:
            value = node[0]
            if isinstance(value, FunctionV):
                found.setdefault(value.key, []).append(node)
        return found


def traced_set(model: Model, follow_libraries: bool = True) -> TracedSet:
    """Walk the call edges from every entry (and every torch.cond branch), breadth first; into installed
    libraries' functions only with `follow_libraries`."""
    traced = TracedSet(entries=dict(model.entries), follow_libraries=follow_libraries)
    compiled_targets = {target: (caller, record.line) for caller, calls in model.edges.items()
                        for record in calls.values() for target, how in record.targets
                        if how == "compiled" and isinstance(target, tuple)}
    roots = sorted(model.entries, key=_order) + sorted(
        (node for node in compiled_targets if node not in model.entries), key=_order)
    for node in roots:
        traced.entries.setdefault(node, model.entries.get(node))
    _walk(model, traced, roots)
    rest = sorted((node for node in model.cond_branches if node not in traced.nodes), key=_order)
    for node in rest:
        traced.entries.setdefault(node, model.cond_branches[node])
    _walk(model, traced, rest)
    return traced


def _order(node: Node) -> tuple:
    value = node[0]
    key = value.key if isinstance(value, FunctionV) else (value.path, "")
    return key, repr(node[1])


def _walk(model: Model, traced: TracedSet, roots: list[Node]) -> None:
    pending = deque(node for node in roots if node not in traced.nodes)
    traced.nodes.update(pending)
    follow = traced.follow_libraries
    while pending:
        node = pending.popleft()
        caller = node[0]
        for site in sorted(model.edges.get(node, {})):
            record = model.edges[node][site]
            if record.eager:
                continue
            for target, how in sorted(record.targets, key=repr):
                if not isinstance(target, tuple):
                    if isinstance(target, str) and isinstance(caller, FunctionV):
                        traced.external_calls.add((caller.key[0], record.line, target))
                    continue
                callee = target[0]
                if how == "disabled":
                    if isinstance(caller, FunctionV) and isinstance(callee, FunctionV):
                        traced.disabled_calls.add((caller.key[0], caller.key[1], record.spelled or ""))
                    continue
                if how == "allowed" and isinstance(callee, FunctionV) and isinstance(caller, FunctionV):
                    _allowed_call(model, traced, node, record, target, pending)
                if how in ("allowed", "opaque", "eager"):
                    continue
                if isinstance(callee, FunctionV):
                    callee_module = model.modules.get(callee.key[0])
                    if callee_module is not None and callee_module.library:
                        if not follow or not model.follows(callee.key[0]):
                            continue
                        caller_module = model.module_of(node)
                        if caller_module is not None and not caller_module.library:
                            traced.library_calls.append((node, record.line, record.spelled, target))
                traced.children.setdefault(node, []).append((target, record.line))
                if target in traced.nodes:
                    if target in traced.entries and target not in traced.parents and target != node \
                            and traced.entries[target] is None:
                        # A module's forward (an entry only because the user may compile a module built
                        # elsewhere) that traced code calls too: its findings say how that code reaches it.
                        traced.parents[target] = (node, record.line)
                    continue
                traced.nodes.add(target)
                traced.parents[target] = (node, record.line)
                pending.append(target)


def _allowed_call(model: Model, traced: TracedSet, node: Node, record, target: Node, pending: deque) -> None:
    """A traced call of an `allow_in_graph` function: when it (or what it calls) needs tensor data, the graph
    breaks at the call and Dynamo compiles the function as a frame of its own when the eager remainder runs
    it (measured on torch 2.13): it is an entry, made at the call."""
    causes = data_reads(model, target)
    if not causes:
        return
    caller, callee = node[0], target[0]
    assert isinstance(caller, FunctionV) and isinstance(callee, FunctionV)
    for cause in causes:
        traced.allowed_breaks.add((caller.key[0], caller.key[1], record.spelled or "", cause, callee.key))
    if target not in traced.nodes:
        traced.nodes.add(target)
        traced.entries.setdefault(target, (caller.key[0], record.line, "allowed"))
        pending.append(target)


_MAX_DATA_WALK = 64  # nodes one question about an allowed function's data reads may visit


def data_reads(model: Model, node: Node) -> list[str]:
    """The causes ("branch", "item") for which `node`, or a function its traced code calls, needs a tensor's
    data, sorted; a bounded walk."""
    causes: set[str] = set()
    pending, seen = [node], {node}
    while pending and len(seen) <= _MAX_DATA_WALK:
        current = pending.pop()
        causes.update(cause for cause, _ in model.data_reads.get(current, ()))
        for record in model.edges.get(current, {}).values():
            if record.eager:
                continue
            for target, how in record.targets:
                if isinstance(target, tuple) and how in ("call", "dynamo") and target not in seen:
                    seen.add(target)
                    pending.append(target)
    return sorted(causes)


def chain(model: Model, traced: TracedSet, node: Node) -> tuple[tuple[str, int, str], ...]:
    """(file, line of the call, calling function) of each call from the entry to `node`; a compiled lambda
    that only calls on (`torch.compile(lambda y: integrate(f, y))`) is no link of its own."""
    links = []
    seen = {node}
    while node in traced.parents:
        caller, line = traced.parents[node]
        if caller in seen:
            break
        seen.add(caller)
        value = caller[0]
        qualname = value.key[1] if isinstance(value, FunctionV) else "<module>"
        path = value.key[0] if isinstance(value, FunctionV) else value.path
        links.append((path, line, qualname))
        node = caller
    links.reverse()
    while len(links) > 1 and links[0][2].rsplit(".", 1)[-1].startswith("<lambda"):
        links.pop(0)
    return tuple(links)


def parameter_hint(model: Model, nodes: list[Node], name: str) -> Optional[str]:
    """"tensor" when every traced node's value of parameter `name` is a tensor, "py" when every one is a
    Python value independent of tensor data, "other" when the values are known and neither (a dict,
    an object, unknown among them, and no entry default); None otherwise."""
    found: set = set()
    for node in nodes:
        found.update(model.heap.peek(("p", node, name)))
    if not found:
        return None
    if all(isinstance(value, KindV) and value.kind is Kind.TENSOR for value in found):
        return "tensor"
    if all(isinstance(value, ConstV) or (isinstance(value, KindV) and value.kind in (Kind.PY, Kind.SHAPE))
           for value in found):
        return "py"
    if any(isinstance(value, KindV) and value.by_default for value in found):
        return None  # an entry's default (nobody shows its calls) among them: the file's default decides
    return "other"


def untraced_branches(model: Model, nodes: list[Node]) -> tuple[tuple[int, int], ...]:
    """The (first, last) lines of the statement lists every one of `nodes` skipped."""
    common: Optional[set[tuple[int, int]]] = None
    for node in nodes:
        skipped = model.skipped.get(node, set())
        common = set(skipped) if common is None else common & skipped
    return tuple(sorted(common or ()))


def is_module_node(node: Node) -> bool:
    """Whether a node is a module's code."""
    return isinstance(node[0], ModuleV)

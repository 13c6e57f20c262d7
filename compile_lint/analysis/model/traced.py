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
    # (caller node, line, spelled, library function key) of traced calls from the project into a library.
    library_calls: list[tuple[Node, int, Optional[str], Key]] = field(default_factory=list)

    def functions(self) -> dict[Key, list[Node]]:
        """Each reached function's key -> its reached nodes."""
        found: dict[Key, list[Node]] = {}
        for node in self.nodes:
            value = node[0]
            if isinstance(value, FunctionV):
                found.setdefault(value.key, []).append(node)
        return found


def traced_set(model: Model) -> TracedSet:
    """Walk the call edges from every entry (and every torch.cond branch), breadth first."""
    traced = TracedSet(entries=dict(model.entries))
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
    while pending:
        node = pending.popleft()
        caller = node[0]
        for site in sorted(model.edges.get(node, {})):
            record = model.edges[node][site]
            if record.eager:
                continue
            for target, how in sorted(record.targets, key=repr):
                if not isinstance(target, tuple):
                    continue
                callee = target[0]
                if how == "disabled":
                    if isinstance(caller, FunctionV) and isinstance(callee, FunctionV):
                        traced.disabled_calls.add((caller.key[0], caller.key[1], record.spelled or ""))
                    continue
                if how in ("allowed", "opaque"):
                    continue
                if isinstance(caller, FunctionV) and isinstance(callee, FunctionV):
                    caller_library = model.modules[caller.key[0]].library  # type: ignore[union-attr]
                    callee_module = model.modules.get(callee.key[0])
                    if not caller_library and callee_module is not None and callee_module.library:
                        traced.library_calls.append((node, record.line, record.spelled, callee.key))
                if target in traced.nodes:
                    continue
                traced.nodes.add(target)
                traced.parents[target] = (node, record.line)
                pending.append(target)


def chain(model: Model, traced: TracedSet, node: Node) -> tuple[tuple[str, int, str], ...]:
    """(file, line of the call, calling function) of each call from the entry to `node`."""
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
    return tuple(reversed(links))


def parameter_hint(model: Model, nodes: list[Node], name: str) -> Optional[str]:
    """"tensor" when every traced node's value of parameter `name` is a tensor, "py" when every one is a
    Python value independent of tensor data; None otherwise."""
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
    return None


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

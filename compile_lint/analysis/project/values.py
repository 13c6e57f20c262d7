"""What a value is across calls: the hints of parameters, locals and returns, as a fixed point.

The reach (`reach.py`) asks what every traced caller passes to a parameter: "tensor",
"py" (a literal, a size) or None (unknown). The answer is a join over the argument tags
(`summary.py`) of every traced call, and tags lead on to other questions:

- "param:NAME": the caller's own parameter (what *its* callers pass); "local:NAME": the
  join over every value bound to the caller's local;
- "elem:param:NAME" / "elem:local:NAME": an element (`ids_str[i]`): a tensor's element is a
  tensor, a Python value's (a literal, a size) a Python value;
- "ret:LINE:CALLEE": what the call of CALLEE on LINE returns: the join over the returns of
  every project function the call graph resolves it to, each read in its own function;
  "item:K:ret:LINE:CALLEE": item K of it (`z, ids = rand_starts(h)`): item K of each tuple
  returned, or a row of a tensor returned.

The questions make a system of monotone equations over the lattice BOTTOM (no value yet)
< "tensor", "py" < None (unknown). `FixedPoint` answers one question with the least
solution of the part of the system it depends on, iterating each strongly connected
component from BOTTOM until it is stable (`h = gate(h)` where `gate` returns what it is
passed is a tensor when the first `h` is): the answer does not depend on the order of the
questions, and the iteration ends (each head rises at most twice).
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable, Optional, cast

from compile_lint.analysis.project.callgraph import CallGraph, Key, passed
from compile_lint.analysis.project.summary import ELEMENT, ITEM, LOCAL, PARAM, PY, RETURNED, TENSOR

TENSOR_HINT, PY_HINT = TENSOR, PY
BOTTOM = "<bottom>"  # a question still being answered: no value yet
_MAX_NESTING = 200  # questions open at once: deeper ones are unknown (Python's own stack)


def join(hints: Iterable[object]) -> object:
    """The least value above all `hints`: None (unknown) when they disagree or there are none."""
    found = set(hints)
    if not found:
        return None
    found.discard(BOTTOM)
    if not found:
        return BOTTOM
    return found.pop() if len(found) == 1 else None


class FixedPoint:
    """The least solution of monotone equations `node = compute(node)`, found on demand, per component."""

    def __init__(self, compute: Callable[[Hashable], object]) -> None:
        self.compute = compute
        self.final: dict[Hashable, object] = {}
        self._open: dict[Hashable, int] = {}  # node being answered -> its depth on the stack
        self._approximation: dict[Hashable, object] = {}
        # Answers that rest on open questions, with the lowest one they read: valid until an
        # approximation changes (then dropped), so a component costs one pass per iteration.
        self._tentative: dict[Hashable, tuple[object, int]] = {}
        self._low = _MAX_NESTING + 1  # the lowest open node the current answer read

    def get(self, node: Hashable) -> object:
        """The value of `node` (BOTTOM only while a question it depends on is open)."""
        if node in self.final:
            return self.final[node]
        depth = self._open.get(node)
        if depth is not None:
            self._low = min(self._low, depth)
            return self._approximation.get(node, BOTTOM)
        tentative = self._tentative.get(node)
        if tentative is not None:
            self._low = min(self._low, tentative[1])
            return tentative[0]
        depth = len(self._open)
        if depth >= _MAX_NESTING:
            return None
        self._open[node] = depth
        outer = self._low
        while True:
            self._low = _MAX_NESTING + 1
            value = self.compute(node)
            if self._low < depth or value == self._approximation.get(node, BOTTOM) or self._low > depth:
                break  # rests on an outer open question, or stable, or on no open question at all
            self._approximation[node] = value  # the head of a component: once more with the new value
            self._tentative.clear()
        del self._open[node]
        low = self._low
        if low >= depth:
            self.final[node] = value
            self._approximation.pop(node, None)
        else:
            self._tentative[node] = value, low
        if not self._open:
            self._tentative.clear()
        self._low = min(outer, low) if low < depth else outer
        return value


def argument_tag(arg) -> str:
    """The tag of what an argument passes: a parameter or a local by name (a local passed outside
    loops as `local:NAME:N`, its first N bindings: those that precede the call), else its own tag."""
    if arg.tag == LOCAL and arg.visible >= 0:
        return f"{LOCAL}:{arg.spelling}:{arg.visible}"
    return f"{arg.tag}:{arg.spelling}" if arg.tag in (PARAM, LOCAL) else arg.tag


class ValueHints:
    """The hints of one project's reach: parameters of reached functions, and what derived tags hold."""

    def __init__(self, graph: CallGraph, is_entry: Callable[[Key], bool],
                 sites: Callable[[Key], list]) -> None:
        self.graph = graph
        self.is_entry = is_entry
        self.sites = sites
        self.solver = FixedPoint(self._compute)

    def parameter(self, key: Key, name: str) -> Optional[str]:
        """"tensor", "py" or None: what every traced call of `key` passes to its parameter `name`."""
        found = self.solver.get(("param", key, name))
        return None if found is BOTTOM else found  # type: ignore[return-value]

    def evidence(self, key: Key, name: str) -> Optional[tuple[str, int, str]]:
        """(file, line, argument) of the first traced call of `key` from another file that passes a
        tensor to parameter `name` (what a finding resting on it names), None when there is none."""
        function = self.graph.function(key)
        if function is None:
            return None
        for caller, call in sorted(self.sites(key), key=lambda site: (site[0], site[1].line)):
            if caller[0] == key[0]:
                continue  # the file's own analysis sees its own calls
            arg = dict((param, arg) for arg, param in passed(function, call)).get(name)
            if arg is None:
                continue
            if self.tag(caller, argument_tag(arg)) == TENSOR_HINT:
                return caller[0], call.line, arg.spelling or ""
        return None

    def _compute(self, node: Hashable) -> object:
        kind, key, detail = cast(tuple[str, Key, Any], node)  # ("param" | "local" | "return", function, detail)
        function = self.graph.function(key)
        if function is None:
            return None
        if kind == "param":
            return self._parameter(key, function, detail)
        if kind == "local":
            name, _, visible = detail.partition(":")
            tags = function.local_tags.get(name, ())
            if visible:  # the bindings that precede the call (`h = gate(h)`: the earlier `h`)
                tags = tags[:int(visible)]
            return join(self.tag(key, inner) for inner in tags)
        return self._returned(key, function, detail)

    def _parameter(self, key: Key, function, name: str) -> object:
        if self.is_entry(key):
            annotated = {param: typed for param, typed, _ in function.params}
            if name in annotated and not annotated[name] and name not in ("self", "cls"):
                return TENSOR_HINT  # the "untyped forward parameter is a tensor" default
            return None
        kinds: list[object] = []
        for caller, call in self.sites(key):
            pairs = dict((param, arg) for arg, param in passed(function, call))
            arg = pairs.get(name)
            if arg is None:
                if getattr(call, "starred", False):
                    kinds.append(None)
                continue
            kinds.append(self.tag(caller, argument_tag(arg)))
        return join(kinds)

    def tag(self, caller: Key, tag: str) -> object:
        """The hint of a value of function `caller`, from its tag."""
        if tag == PY:
            return PY_HINT
        if tag == TENSOR:
            return TENSOR_HINT
        kind, _, rest = tag.partition(":")
        if kind == PARAM or kind == LOCAL:
            return self.solver.get((kind, caller, rest))
        if kind == ELEMENT:
            inner = self.tag(caller, rest)
            return inner if inner in (TENSOR_HINT, PY_HINT, BOTTOM) else None
        item: Optional[int] = None
        if kind == ITEM:
            position, _, rest = rest.partition(":")
            kind, _, rest = rest.partition(":")
            if not position.isdigit():
                return None
            item = int(position)
        if kind != RETURNED:
            return None
        line, _, callee = rest.partition(":")
        function = self.graph.function(caller)
        if function is None or not line.isdigit():
            return None
        call = next((c for c in function.calls if c.line == int(line) and c.callee == callee), None)
        if call is None:
            return None
        targets = [target for target, via, _ in self.graph.call_targets(caller, function, call) if via == caller]
        if any(target[1].endswith(".__init__") for target in targets):
            return None  # a class called: an instance, whatever its `__init__` returns
        return join(self.solver.get(("return", target, item)) for target in targets)

    def _returned(self, key: Key, function, item: Optional[int]) -> object:
        """What function `key` returns (item `item` of it, when not None)."""
        if not function.returns:
            return None
        hints = []
        for value in function.returns:
            if isinstance(value, tuple):
                hints.append(self.tag(key, value[item]) if item is not None and item < len(value) else None)
                continue
            hint = self.tag(key, value)
            if item is None:
                hints.append(hint)
            elif hint != PY_HINT:  # unpacking None or a number fails: not the path that returns here
                hints.append(hint if hint in (TENSOR_HINT, BOTTOM) else None)  # a row of a tensor is a tensor
        return join(hints)

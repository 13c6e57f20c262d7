"""Lists and dicts: Python containers whose length, order or key set Dynamo must guard on.

Measured on torch 2.13: local accumulators (`out = []; out.append(t); torch.stack(out)`,
`out += [t]`, `out.insert(0, t)`, `out.extend(...)`) and iteration over local dicts are
traced into one graph. What costs a break or a recompile is narrower: a list or dict on
`self` whose Python contents change on every call, comprehensions filtered by tensor
data, sorting or min/max over tensors, `torch.as_tensor` on a list of tensors, and
forward code that reads the whole key set of a dict input.
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from compile_lint.autofix.builders import spell
from compile_lint.linter.facts import Kind
from compile_lint.rules.base import FixPlan, Invalid, Rule, Valid
from compile_lint.rules.control_flow import data_dependent

_GROW_METHODS = frozenset({"append", "extend", "insert"})
_SHRINK_METHODS = frozenset({"clear", "pop", "remove"})
_KEY_SET_METHODS = frozenset({"items", "keys", "values"})
_KEY_SET_BUILTINS = frozenset(
    {"builtins.len", "builtins.list", "builtins.tuple", "builtins.sorted", "builtins.set", "builtins.dict"}
)


def _self_attribute(expr: cst.BaseExpression) -> Optional[str]:
    """`NAME` when `expr` is `self.NAME`."""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    return None


def _keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def _positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [arg.value for arg in call.args if arg.keyword is None and not arg.star]


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under `node` (inclusive), depth first."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


class SelfListGrownInForward(Rule):
    """A list on `self` grown in forward (`self.cache.append(x)`) recompiles on every call.

    Why: Dynamo guards on the length of every list it reads, and a list that lives on
    the module is longer at each call, so each call fails the guard and compiles again;
    after `torch._dynamo.config.recompile_limit` (8) the forward runs eagerly. The list
    also keeps every stored tensor alive.

    Instead: return the values from forward (or collect them outside the compiled
    region, e.g. in the training loop). A list that forward rebinds (`self.feats = []`)
    or clears before it returns does not grow across calls and is not flagged; neither
    is a bounded window that forward also `pop`s (it recompiles until the window is
    full, then stays). There is no automatic fix: the list is state other code may read
    between calls, so keeping it local would change what the program does.
    """

    code = "JIT301"
    name = "self-list-grown-in-forward"
    kind = "recompile"
    message = (
        "`self.{attr}` grows on every call: Dynamo guards on its length, so each call "
        "recompiles (eager after 8); return the values from forward instead"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class AttentionProbe(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.qk = nn.Linear(8, 8)
                    self.attention_maps = []

                def forward(self, x):
                    scores = self.qk(x) @ x.transpose(-1, -2)
                    probs = scores.softmax(-1)
                    self.attention_maps.append(probs.detach())
                    return probs @ x
            """,
            calls="[(torch.randn(2, 4, 8),)] * 4",
            entry="AttentionProbe",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class StreamingEncoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)
                    self.history = []

                def _remember(self, h):
                    self.history += [h]

                def forward(self, chunk):
                    h = self.proj(chunk)
                    self._remember(h)
                    return h + len(self.history)
            """,
            calls="[(torch.randn(4, 8),)] * 4",
            entry="StreamingEncoder",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Policy(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.affine = nn.Linear(8, 4)
                    self.saved_log_probs = []

                def forward(self, state):
                    probs = self.affine(state).softmax(-1)
                    self.saved_log_probs.append(probs.log())
                    return probs
            """,
            calls="[(torch.randn(1, 8),)] * 4",
            entry="Policy",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class FeaturePyramid(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.stages = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
                    self.features = []

                def forward(self, x):
                    self.features = []
                    for stage in self.stages:
                        x = stage(x)
                        self.features.append(x)
                    return torch.stack(self.features)
            """,
            entry="FeaturePyramid",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class DenseBlock(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(8 * (i + 1), 8) for i in range(3)])

                def forward(self, x):
                    features = [x]
                    for layer in self.layers:
                        features.append(layer(torch.cat(features, -1)))
                    return torch.cat(features, -1)
            """,
            entry="DenseBlock",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class HookedBackbone(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
                    self.outputs = []

                def forward(self, x):
                    for block in self.blocks:
                        x = block(x)
                        self.outputs.append(x)
                    merged = torch.cat(self.outputs, -1)
                    self.outputs.clear()
                    return merged
            """,
            entry="HookedBackbone",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class SlidingContext(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.window = []

                def forward(self, x):
                    self.window.append(x)
                    if len(self.window) > 2:
                        self.window.pop(0)
                    return torch.stack(self.window).mean(0)
            """,
            entry="SlidingContext",
            note="bounded: recompiles until the window is full, then stable",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _GROW_METHODS:
            self._check(node, func.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign):
            self._check(node, node.target)

    def _check(self, node: cst.CSTNode, target: cst.BaseExpression) -> None:
        attr = _self_attribute(target)
        cls = self.context.owner_class
        if attr is None or cls is None or not _self_container(self, cls, attr, (cst.List, cst.ListComp), "list"):
            return
        if not _reset_in_traced_method(self, cls, attr):
            self.report(node, self.message.format(attr=attr))


def _self_container(rule: Rule, cls: cst.ClassDef, attr: str, literals: tuple[type, ...], builtin: str) -> bool:
    """True when every value `cls` assigns to `self.attr` is a `literals` node or a `builtin(...)` call."""
    values = rule.context.facts.self_attributes(cls).values.get(attr, [])
    return bool(values) and all(
        isinstance(v, literals) or (isinstance(v, cst.Call) and rule.context.qualname(v.func) == f"builtins.{builtin}")
        for v in values
    )


def _reset_in_traced_method(rule: Rule, cls: cst.ClassDef, attr: str) -> bool:
    """True when a traced method of `cls` rebinds, clears or shrinks `self.attr`."""
    regions = rule.context.regions
    methods = [f for f, owner in regions.owner_class.items() if owner is cls and f in regions.functions]
    return any(_resets(method, attr) for method in methods)


def _resets(function: cst.FunctionDef, attr: str) -> bool:
    """True when `function` rebinds `self.attr`, or clears, pops, removes or deletes from it."""
    for node in _walk(function.body):
        if isinstance(node, cst.Assign) and any(_self_attribute(t.target) == attr for t in node.targets):
            return True
        if isinstance(node, cst.AnnAssign) and _self_attribute(node.target) == attr:
            return True
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in _SHRINK_METHODS and _self_attribute(node.func.value) == attr):
            return True
        if isinstance(node, cst.Del):
            for target in _walk(node.target):
                if isinstance(target, cst.Subscript) and _self_attribute(target.value) == attr:
                    return True
    return False


class TensorFilteredComprehension(Rule):
    """A comprehension filtered on tensor data (`[t for t in xs if t.sum() > 0]`) breaks.

    Why: how many elements the list keeps depends on tensor values, so Dynamo must
    evaluate each `if` in Python ("Data-dependent branching"); with `fullgraph=True`
    compilation fails. Filters on shapes, `None` or flags are fine.

    Instead: keep every element and mask the ones you would drop
    (`torch.stack(xs) * (scores > 0)[:, None]`, `torch.where(keep, t, 0)`), so the
    number of elements no longer depends on the data.
    """

    code = "JIT302"
    name = "tensor-filtered-comprehension"
    kind = "break"
    gb_type = "Data-dependent branching"
    gb_id = "GB0170"
    message = (
        "comprehension filtered on a tensor value breaks the graph (its length depends on "
        "the data); keep every element and mask with torch.where"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class ExpertMixture(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.router = nn.Linear(8, 3)
                    self.experts = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

                def forward(self, x):
                    gates = self.router(x).softmax(-1)
                    outputs = [expert(x) * gates[..., i:i + 1] for i, expert in enumerate(self.experts)]
                    active = [out for out in outputs if out.abs().sum() > 1e-3]
                    return torch.stack(active).sum(0)
            """,
            entry="ExpertMixture",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ValidTokens(nn.Module):
                def forward(self, tokens):
                    return sum(t for t in tokens.unbind(0) if t.max() > 0)
            """,
            entry="ValidTokens",
        ),
        Invalid(
            """
            import torch

            @torch.compile(backend="eager")
            def pool_active_chunks(x):
                chunks = x.chunk(4)
                return torch.cat([c for c in chunks if c.mean() > 0] + [x[:0]])
            """,
            calls="[(torch.randn(4, 8),)]",
            entry="pool_active_chunks",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class BoxPostprocess(nn.Module):
                def forward(self, boxes, scores):
                    kept = [b for b, s in zip(boxes.unbind(0), scores.unbind(0)) if s > 0.5]
                    return torch.stack(kept) if kept else boxes[:0]
            """,
            calls="[(torch.rand(6, 4), torch.rand(6))]",
            entry="BoxPostprocess",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class OptionalInputs(nn.Module):
                def forward(self, x, extra=None):
                    parts = [x, extra, x * 2]
                    return torch.cat([p for p in parts if p is not None], -1)
            """,
            entry="OptionalInputs",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class MultiScale(nn.Module):
                def forward(self, x):
                    crops = [x, x[:, :4], x[:, :6]]
                    wide = [c for c in crops if c.shape[-1] > 4]
                    return torch.cat(wide, -1)
            """,
            entry="MultiScale",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class MaskedMixture(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.experts = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

                def forward(self, x):
                    outputs = torch.stack([expert(x) for expert in self.experts if not expert.training])
                    keep = outputs.abs().sum(dim=(1, 2)) > 1e-3
                    return (outputs * keep[:, None, None]).sum(0)
            """,
            entry="MaskedMixture",
        ),
    ]

    def visit_CompIf(self, node: cst.CompIf) -> None:
        if data_dependent(self, node.test) is not None:
            self.report(node.test)


def _is_builtin(rule: Rule, call: cst.Call, name: str) -> bool:
    return rule.context.qualname(call.func) == f"builtins.{name}"


class SortTensors(Rule):
    """`sorted(...)` or `list.sort()` that compares tensors breaks the graph.

    Why: Dynamo sorts lists only when every key is a Python constant; comparing tensors
    (no `key=` over a list of tensors, a `key=` that returns a tensor, or
    `sorted(d.items())` over a dict of tensors, whose tuples hold tensors) is
    "sort with non-constant keys"; with `fullgraph=True` compilation fails. Sorting by
    shapes, `len` or string keys is fine.

    Instead: stack the keys and use `torch.sort` / `torch.argsort`, then index. For
    `sorted(d.items())` the fix adds `key=lambda kv: kv[0]` (safe: dict keys are unique,
    so the values were never compared).
    """

    code = "JIT303"
    name = "sort-tensors"
    kind = "break"
    gb_type = "sort with non-constant keys"
    gb_id = "GB0207"
    fix_applicability = "safe"
    message = (
        "sorting compares tensors and breaks the graph (sort with non-constant keys); "
        "stack the keys and use torch.argsort, then index"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class MultiTaskHead(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cls = nn.Linear(8, 8)
                    self.box = nn.Linear(8, 8)

                def forward(self, x):
                    outputs = {"cls": self.cls(x), "box": self.box(x)}
                    return torch.cat([v for _, v in sorted(outputs.items())], -1)
            """,
            fixed="""
            import torch
            from torch import nn

            class MultiTaskHead(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cls = nn.Linear(8, 8)
                    self.box = nn.Linear(8, 8)

                def forward(self, x):
                    outputs = {"cls": self.cls(x), "box": self.box(x)}
                    return torch.cat([v for _, v in sorted(outputs.items(), key=lambda kv: kv[0])], -1)
            """,
            entry="MultiTaskHead",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class BeamRanker(nn.Module):
                def forward(self, beams):
                    candidates = [beams, beams * 0.5, beams - 1]
                    candidates.sort(key=lambda b: b.logsumexp(-1).sum(), reverse=True)
                    return candidates[0]
            """,
            entry="BeamRanker",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class MedianOfMeans(nn.Module):
                def forward(self, x):
                    means = [chunk.mean() for chunk in x.chunk(4)]
                    return sorted(means)[len(means) // 2]
            """,
            entry="MedianOfMeans",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class ByName(nn.Module):
                def forward(self, x):
                    heads = {"b": x * 2, "a": x}
                    return torch.cat([heads[k] for k in sorted(heads)], -1)
            """,
            entry="ByName",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class ByLength(nn.Module):
                def forward(self, x):
                    crops = [x, x[:2], x[:3]]
                    crops.sort(key=lambda c: c.shape[0])
                    return torch.cat(sorted(crops, key=len))
            """,
            entry="ByLength",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class RankedBeams(nn.Module):
                def forward(self, beams):
                    candidates = torch.stack([beams, beams * 0.5, beams - 1])
                    order = candidates.logsumexp(-1).sum(-1).argsort(descending=True)
                    return candidates[order][0]
            """,
            entry="RankedBeams",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Strides(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.strides = {"p4": 16, "p3": 8}

                def forward(self, x):
                    order = sorted(self.strides.items())
                    return x * order[0][1]
            """,
            entry="Strides",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if _is_builtin(self, node, "sorted"):
            positional = _positional(node)
            if positional:
                self._check(node, positional[0], allow_fix=True)
        elif isinstance(func, cst.Attribute) and func.attr.value == "sort" and not _positional(node):
            if self.context.kind(func.value) is Kind.LIST:
                self._check(node, func.value, allow_fix=False)

    def _check(self, node: cst.Call, iterable: cst.BaseExpression, allow_fix: bool) -> None:
        key = _keyword(node, "key")
        if key is None:
            items_of = _items_receiver(iterable)
            if items_of is not None:
                if self.context.facts.dict_value_kind(items_of, self.context.function).tensorish:
                    self.report(node, fix=self._key_fix(node) if allow_fix else None)
                return
            if self.context.facts.element_kind(iterable, self.context.function).tensorish:
                self.report(node)
            return
        if _key_kind(self, key.value, iterable) in (Kind.TENSOR, Kind.MAYBE_TENSOR, Kind.DATA):
            self.report(node)

    def _key_fix(self, node: cst.Call) -> FixPlan:
        first, *rest = node.args
        space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        if isinstance(first.comma, cst.Comma):
            # The new argument takes the separator that followed the first one, so a
            # call written one argument per line stays that way.
            key_comma: object = first.comma
            first_comma = first.comma if rest else cst.Comma(whitespace_after=node.whitespace_before_args)
            if not rest and isinstance(node.whitespace_before_args, cst.SimpleWhitespace):
                first_comma = space
        else:
            key_comma, first_comma = cst.MaybeSentinel.DEFAULT, space
        key = cst.Arg(
            keyword=cst.Name("key"),
            value=cst.parse_expression("lambda kv: kv[0]"),
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                  whitespace_after=cst.SimpleWhitespace("")),
            comma=key_comma,
        )
        new = node.with_changes(args=[first.with_changes(comma=first_comma), key, *rest])
        return FixPlan([(node, new)], "Sort by key only: key=lambda kv: kv[0]", "safe")


def _items_receiver(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`d` when `expr` is `d.items()`."""
    if (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "items" and not expr.args):
        return expr.func.value
    return None


def _key_kind(rule: Rule, key: cst.BaseExpression, iterable: cst.BaseExpression) -> Kind:
    """The kind a `key=` function returns for the elements of `iterable`; UNKNOWN if unsure."""
    if not isinstance(key, cst.Lambda) or len(key.params.params) != 1:
        return Kind.UNKNOWN
    function = rule.context.function
    if function is None:
        return Kind.UNKNOWN
    facts = rule.context.facts
    element = facts.element_kind(iterable, function)
    return facts.kind_with_bindings(key.body, function, {key.params.params[0].name.value: element})


class MinMaxKeyOverTensors(Rule):
    """`min(...)`/`max(...)` with `key=` over tensors breaks the graph, whatever the key.

    Why: Dynamo 2.13 handles `min`/`max` of tensors only without `key=`; with a key
    (even `len` or a shape) over tensor elements it gives up ("invalid call to builtin
    op handler"); with `fullgraph=True` compilation fails.

    Instead: stack the candidates and pick with `argmin`/`argmax`, indexing with a
    1-element tensor (a 0-d index is itself data-dependent):
    `stacked = torch.stack(xs); best = stacked[scores.argmax(0, keepdim=True)][0]`.
    Over shapes or Python values `min`/`max` with `key=` is fine.
    """

    code = "JIT304"
    name = "min-max-key-over-tensors"
    kind = "break"
    gb_type = "invalid call to builtin op handler"
    gb_id = "GB0193"
    message = (
        "min()/max() with key= over tensors breaks the graph; stack them and index with "
        "argmax(0, keepdim=True)"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class BestOfN(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.score = nn.Linear(8, 1)

                def forward(self, x):
                    samples = [x + 0.1 * i for i in range(3)]
                    return max(samples, key=lambda s: self.score(s).mean())
            """,
            entry="BestOfN",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ShortestCrop(nn.Module):
                def forward(self, x):
                    return min(x, x[:2], x[:3], key=len) * 2
            """,
            entry="ShortestCrop",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class BestOfNStacked(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.score = nn.Linear(8, 1)

                def forward(self, x):
                    samples = torch.stack([x + 0.1 * i for i in range(3)])
                    best = self.score(samples).mean(dim=(1, 2)).argmax(0, keepdim=True)
                    return samples[best][0]
            """,
            entry="BestOfNStacked",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class LargestLevel(nn.Module):
                def forward(self, x):
                    sizes = {"p3": x.shape[0], "p4": x.shape[0] // 2}
                    level = max(sizes, key=sizes.get)
                    return x * len(level)
            """,
            entry="LargestLevel",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class PeakLogit(nn.Module):
                def forward(self, x):
                    return max([x.amax(), x.mean()]) + min(x.shape, key=lambda d: -d) * x
            """,
            entry="PeakLogit",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if not (_is_builtin(self, node, "min") or _is_builtin(self, node, "max")):
            return
        if _keyword(node, "key") is None:
            return
        positional = _positional(node)
        function = self.context.function
        if function is None or not positional:
            return
        facts = self.context.facts
        if len(positional) == 1:
            element = facts.element_kind(positional[0], function)
        else:
            element = facts.element_kind(cst.List([cst.Element(p) for p in positional]), function)
        if element.tensorish:
            self.report(node)


class DictInputKeySet(Rule):
    """Forward that reads the whole key set of a dict input recompiles per key set.

    Why: iterating a dict argument (`for k, v in batch.items()`, `len(batch)`,
    `list(batch)`, `**kwargs` iterated) makes Dynamo guard on its exact keys and their
    order, so every new key set (or order) compiles a new graph; after the recompile
    limit (8) forward runs eagerly. Reading fixed keys (`batch["x"]`) never recompiles,
    and `"mask" in batch` / `batch.get("mask")` cost one graph per presence of that key
    only, so neither is flagged. Off by default: it costs nothing when every call
    passes the same keys in the same order, as in most training loops.

    Instead: read the keys forward needs by name (`batch["input_ids"]`,
    `batch.get("mask")`), or give optional inputs named parameters.
    """

    code = "JIT305"
    name = "dict-input-key-set"
    kind = "recompile"
    default_enabled = False
    message = (
        "forward reads the whole key set of dict input `{param}`: each new key set or order "
        "recompiles; read the keys you need by name (batch[\"x\"], batch.get(\"mask\"))"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class MultiModalFusion(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, features: dict):
                    fused = 0
                    for name, feature in features.items():
                        fused = fused + self.proj(feature)
                    return fused
            """,
            calls=(
                "[({'image': torch.randn(4, 8)},), ({'image': torch.randn(4, 8), 'text': torch.randn(4, 8)},),"
                " ({'audio': torch.randn(4, 8)},)]"
            ),
            entry="MultiModalFusion",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Conditioner(nn.Module):
                def forward(self, x, **conditions):
                    for value in conditions.values():
                        x = x + value
                    return x * 2
            """,
            calls=(
                "[{'args': (torch.randn(4, 8),)}, {'args': (torch.randn(4, 8),), 'kwargs': {'t': torch.randn(4, 8)}},"
                " {'args': (torch.randn(4, 8),), 'kwargs': {'y': torch.randn(4, 8)}}]"
            ),
            entry="Conditioner",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class NestedBatch(nn.Module):
                def forward(self, batch):
                    inputs = batch["inputs"]
                    return sum(v.sum(-1) for v in batch["inputs"].values()) + len(inputs)
            """,
            calls=(
                "[({'inputs': {'a': torch.randn(4, 8)}},),"
                " ({'inputs': {'a': torch.randn(4, 8), 'b': torch.randn(4, 8)}},)]"
            ),
            entry="NestedBatch",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Seq2Seq(nn.Module):
                def forward(self, batch: dict):
                    x = batch["input"] * 2
                    mask = batch.get("mask")
                    if mask is not None:
                        x = x * mask
                    if "bias" in batch:
                        x = x + batch["bias"]
                    return x
            """,
            calls=(
                "[({'input': torch.randn(4, 8), 'mask': torch.ones(4, 8)},),"
                " ({'input': torch.randn(4, 8), 'mask': torch.ones(4, 8), 'ids': torch.ones(4)},)]"
            ),
            entry="Seq2Seq",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Heads(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.heads = nn.ModuleDict({"cls": nn.Linear(8, 2), "box": nn.Linear(8, 4)})

                def forward(self, x):
                    outputs = {name: head(x) for name, head in self.heads.items()}
                    return torch.cat([v for v in outputs.values()], -1)
            """,
            entry="Heads",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class PassThrough(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def _block(self, x, scale=1.0, shift=None):
                    return self.fc(x) * scale

                def forward(self, x, **kwargs):
                    return self._block(x, scale=kwargs.get("scale", 1.0))
            """,
            calls="[(torch.randn(4, 8),), {'args': (torch.randn(4, 8),), 'kwargs': {'unused': 1}}]",
            entry="PassThrough",
        ),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node not in self.context.regions.roots:
            return
        dict_params = _dict_params(self, node)
        reported: set[str] = set()
        for observer, param in _key_set_reads(self, node, dict_params):
            if param not in reported:
                reported.add(param)
                self.report(observer, self.message.format(param=param))


def _dict_params(rule: Rule, function: cst.FunctionDef) -> set[str]:
    """Parameters of `function` that are dicts: annotated so, `**kwargs`, or used with `.items()`/`.keys()`."""
    params = function.params
    found: set[str] = set()
    if isinstance(params.star_kwarg, cst.Param):
        found.add(params.star_kwarg.name.value)
    facts = rule.context.facts
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
             if facts.param_kind(function, p.name.value) is not Kind.SELF}  # a ModuleDict's own items()
    for name in names:
        if facts.param_kind(function, name) is Kind.DICT:
            found.add(name)
    for node in _walk(function.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and not node.args:
            receiver = node.func.value
            # `.values()` alone could be a sparse tensor's; on `batch["inputs"]` it is a dict's.
            method = node.func.attr.value
            if method in ("items", "keys") or (method == "values" and isinstance(receiver, cst.Subscript)):
                root = _subscript_root(receiver)
                if root in names:
                    found.add(root)
    return found


def _subscript_root(expr: cst.BaseExpression) -> Optional[str]:
    """`batch` for `batch`, `batch["inputs"]`, `batch["a"]["b"]` (string keys only)."""
    while isinstance(expr, cst.Subscript):
        if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
            return None
        if not isinstance(expr.slice[0].slice.value, cst.SimpleString):
            return None
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _key_set_reads(
    rule: Rule, function: cst.FunctionDef, dict_params: set[str]
) -> Iterator[tuple[cst.CSTNode, str]]:
    """(node, param) for each place `function` reads the whole key set of a dict parameter."""
    if not dict_params:
        return
    for node in _walk(function.body):
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _KEY_SET_METHODS and not node.args:
                root = _subscript_root(func.value)
                if root in dict_params:
                    yield node, root
            elif rule.context.qualname(func) in _KEY_SET_BUILTINS and len(node.args) == 1:
                root = _subscript_root(node.args[0].value)
                if root in dict_params and not node.args[0].star:
                    yield node, root
        elif isinstance(node, (cst.For, cst.CompFor)):
            root = _subscript_root(node.iter)
            if root in dict_params:
                yield node.iter, root


def _reads_attribute(expr: cst.CSTNode, attr: str) -> bool:
    """True when `expr` reads `self.attr` anywhere inside."""
    return any(isinstance(node, cst.Attribute) and _self_attribute(node) == attr for node in _walk(expr))


def _self_dict_subscript(expr: cst.BaseExpression) -> Optional[str]:
    """`NAME` when `expr` is `self.NAME[...]` or `self.NAME.setdefault(...)`."""
    if isinstance(expr, cst.Subscript):
        return _self_attribute(expr.value)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "setdefault":
        return _self_attribute(expr.func.value)
    return None


class SelfDictStateInForward(Rule):
    """A dict on `self` that forward counts in or grows (`self.stats["calls"] += 1`) recompiles every call.

    Why: Dynamo guards on the Python numbers and the key set of every dict it reads.
    A counter kept in `self.stats`, a key made from `len(self.cache)`, or a list in the
    dict that forward appends to, has a new value at each call, so each call fails the
    guard and compiles again (eager after the recompile limit, 8). Storing tensors or
    shapes under fixed keys (`self.cache["last"] = x.detach()`) is fine.

    Instead: keep counters as tensors (`self.register_buffer("calls", torch.zeros(()))`,
    then `self.calls += 1`), or count outside the compiled forward. There is no
    automatic fix: the dict is state that other code reads.
    """

    code = "JIT306"
    name = "self-dict-state-in-forward"
    kind = "recompile"
    message = (
        "`self.{attr}` changes its Python contents on every call: Dynamo guards on them, so each "
        "call recompiles (eager after 8); keep counters in a tensor buffer or outside forward"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class RoutingStats(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.router = nn.Linear(8, 2)
                    self.stats = {"calls": 0}

                def forward(self, x):
                    self.stats["calls"] += 1
                    return self.router(x).softmax(-1)
            """,
            calls="[(torch.randn(4, 8),)] * 4",
            entry="RoutingStats",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class StepCache(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cache = {}

                def forward(self, x):
                    self.cache[len(self.cache)] = x.detach()
                    return x * 2
            """,
            calls="[(torch.randn(4, 8),)] * 4",
            entry="StepCache",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LossTracker(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.history = dict()

                def forward(self, x):
                    loss = x.pow(2).mean()
                    self.history.setdefault("loss", []).append(loss.detach())
                    return loss
            """,
            calls="[(torch.randn(4, 8),)] * 4",
            entry="LossTracker",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class LastActivation(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.cache = {}

                def forward(self, x):
                    h = self.fc(x)
                    self.cache["last"] = h.detach()
                    self.cache["rows"] = x.shape[0]
                    return h
            """,
            entry="LastActivation",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class RunningMean(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.stats = {}
                    self.register_buffer("calls", torch.zeros(()))

                def forward(self, x):
                    self.calls += 1
                    self.stats["sum"] = self.stats.get("sum", 0) + x.sum()
                    return x - self.stats["sum"] / self.calls
            """,
            entry="RunningMean",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class PerLevel(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.levels = ["p3", "p4"]
                    self.outputs = {}

                def forward(self, x):
                    self.outputs = {}
                    for i, name in enumerate(self.levels):
                        self.outputs[name] = x * (i + 1)
                        self.outputs.setdefault("all", []).append(x)
                    return torch.stack(self.outputs["all"]).sum(0) + self.outputs["p4"]
            """,
            entry="PerLevel",
        ),
    ]

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Subscript):
            attr = _self_attribute(node.target.value)
            if attr is not None and not self.context.kind(node.value).tensorish:
                self._check(node, attr)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if not isinstance(target.target, cst.Subscript):
                continue
            attr = _self_attribute(target.target.value)
            if attr is None:
                continue
            key_reads = _reads_attribute(target.target.slice[0], attr) if target.target.slice else False
            counts = _reads_attribute(node.value, attr) and not self.context.kind(node.value).tensorish
            if key_reads or counts:
                self._check(node, attr)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        if func.attr.value in _GROW_METHODS:
            attr = _self_dict_subscript(func.value)
            if attr is not None:
                self._check(node, attr)
        elif func.attr.value == "update":
            attr = _self_attribute(func.value)
            if attr is not None and any(_reads_attribute(arg.value, attr) for arg in node.args):
                self._check(node, attr)

    def _check(self, node: cst.CSTNode, attr: str) -> None:
        cls = self.context.owner_class
        if cls is None or not _self_container(self, cls, attr, (cst.Dict, cst.DictComp), "dict"):
            return
        if not _reset_in_traced_method(self, cls, attr):
            self.report(node, self.message.format(attr=attr))


# Constructors that read a list element by element: on tensors they fail under Dynamo.
_COPYING_CONSTRUCTORS = frozenset({"torch.as_tensor", "torch.asarray"})
_LEGACY_CONSTRUCTORS = frozenset(
    {"torch.Tensor", "torch.LongTensor", "torch.IntTensor", "torch.DoubleTensor", "torch.BoolTensor",
     "torch.HalfTensor"}
)


class TensorListConstructor(Rule):
    """`torch.as_tensor(list_of_tensors)` (or `torch.Tensor(...)`) fails to compile at all.

    Why: on torch 2.13 Dynamo runs these constructors on fake tensors, which have no
    data to read, and raises "RuntimeError when making fake tensor call": the compile
    fails even without `fullgraph=True`. `torch.tensor(list)` and `torch.stack(list)`
    trace. The usual source is an accumulation loop (`vals.append(t.sum())`) followed
    by a numpy-style conversion.

    Instead: `torch.tensor(vals)`, which gives exactly what `torch.as_tensor(vals)`
    and `torch.asarray(vals)` give on a list (same dtype, shape and device, detached);
    the fix does this and is safe. Use `torch.stack(vals)` when gradients should flow.
    The legacy typed constructors (`torch.Tensor`, `torch.LongTensor`, ...) are
    flagged without a fix: write `torch.tensor(vals, dtype=...)`.
    """

    code = "JIT307"
    name = "tensor-list-constructor"
    kind = "break"
    fix_applicability = "safe"
    message = (
        "{call}() on a list of tensors fails to compile (fake tensors have no data to read); "
        "use torch.tensor(list), or torch.stack(list) to keep gradients"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class PerHeadEntropy(nn.Module):
                def forward(self, attn):
                    entropies = []
                    for head in attn.unbind(1):
                        entropies.append(-(head * head.clamp_min(1e-9).log()).sum())
                    return torch.as_tensor(entropies) / attn.shape[0]
            """,
            fixed="""
            import torch
            from torch import nn

            class PerHeadEntropy(nn.Module):
                def forward(self, attn):
                    entropies = []
                    for head in attn.unbind(1):
                        entropies.append(-(head * head.clamp_min(1e-9).log()).sum())
                    return torch.tensor(entropies) / attn.shape[0]
            """,
            calls="[(torch.rand(2, 4, 8, 8).softmax(-1),)]",
            entry="PerHeadEntropy",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ClassCounts(nn.Module):
                def forward(self, labels):
                    counts = [(labels == c).sum() for c in range(3)]
                    return torch.asarray(counts, dtype=torch.float32) / labels.numel()
            """,
            fixed="""
            import torch
            from torch import nn

            class ClassCounts(nn.Module):
                def forward(self, labels):
                    counts = [(labels == c).sum() for c in range(3)]
                    return torch.tensor(counts, dtype=torch.float32) / labels.numel()
            """,
            calls="[(torch.randint(0, 3, (16,)),)]",
            entry="ClassCounts",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LegacyNorms(nn.Module):
                def forward(self, x):
                    norms = [row.norm() for row in x]
                    return x / torch.Tensor(norms)[:, None]
            """,
            entry="LegacyNorms",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class StackedNorms(nn.Module):
                def forward(self, x):
                    norms = [row.norm() for row in x]
                    return x / torch.stack(norms)[:, None]
            """,
            entry="StackedNorms",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Scales(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.scales = [0.5, 1.0, 2.0, 4.0]

                def forward(self, x):
                    sizes = [x.shape[0], x.shape[1]]
                    scale = torch.as_tensor(self.scales, dtype=x.dtype)
                    return x * torch.as_tensor(sizes).sum() * scale.repeat(2)
            """,
            entry="Scales",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class CopyIn(nn.Module):
                def forward(self, x):
                    y = torch.as_tensor(x, dtype=torch.float32)
                    return torch.tensor([row.sum() for row in y]) + torch.FloatTensor([1.0, 2.0, 3.0, 4.0])
            """,
            entry="CopyIn",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.context.qualname(node.func) or ""
        if qualified not in _COPYING_CONSTRUCTORS and qualified not in _LEGACY_CONSTRUCTORS:
            return
        positional = _positional(node)
        function = self.context.function
        if len(positional) != 1 or function is None or self.context.kind(positional[0]) is not Kind.LIST:
            return  # a tensor argument is copied, not read element by element
        if self.context.facts.element_kind(positional[0], function) is not Kind.TENSOR:
            return
        fix = None
        keywords = {arg.keyword.value for arg in node.args if arg.keyword is not None}
        if qualified in _COPYING_CONSTRUCTORS and keywords <= {"dtype", "device"}:
            name, imports = spell(self.context, "torch.tensor")
            fix = FixPlan([(node.func, cst.parse_expression(name))],
                          "Use torch.tensor(list): the same result, and it compiles", "safe", imports)
        self.report(node, self.message.format(call=spell(self.context, qualified)[0]), fix=fix)

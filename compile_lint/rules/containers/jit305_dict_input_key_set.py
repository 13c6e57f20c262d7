"""JIT305 dict-input-key-set: Forward that reads the whole key set of a dict input recompiles per key set."""

from __future__ import annotations

from typing import Iterator, Optional, Union, cast

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.rules.base import Invalid, Rule, Valid


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
        "recompiles; read the keys you need by name (`batch[\"x\"]`, `batch.get(\"mask\")`)"
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
            lines=[11],
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
            lines=[6],
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
            lines=[7],
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
        body = list(iter_nodes(node.body))  # both passes read the same nodes: walk the body once
        dict_params = _dict_params(self, node, body)
        reported: set[str] = set()
        for observer, param in _key_set_reads(self, body, dict_params):
            if param not in reported:
                reported.add(param)
                self.report(observer, self.message.format(param=param))


_KEY_SET_METHODS = frozenset({"items", "keys", "values"})


_KEY_SET_BUILTINS = frozenset(
    {"builtins.len", "builtins.list", "builtins.tuple", "builtins.sorted", "builtins.set", "builtins.dict"}
)


def _dict_params(rule: Rule, function: cst.FunctionDef, body: list[cst.CSTNode]) -> set[str]:
    """Parameters of `function` that are dicts: annotated so, `**kwargs`, or used with `.items()`/`.keys()`.

    `body` is every node of the function's body, in order.
    """
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
    for node in body:
        if type(node) is cst.Call and isinstance(node.func, cst.Attribute) and not node.args:
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
    rule: Rule, body: list[cst.CSTNode], dict_params: set[str]
) -> Iterator[tuple[cst.CSTNode, str]]:
    """(node, param) for each place a function body (its nodes, in order) reads the whole key set of a dict
    parameter."""
    if not dict_params:
        return
    for node in body:
        kind = type(node)  # these classes have no subclasses; isinstance on libcst's ABCs is slow
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            continue
        if kind is cst.Call:
            call = cast(cst.Call, node)  # what `kind is` proved, which mypy does not follow
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in _KEY_SET_METHODS and not call.args:
                root = _subscript_root(func.value)
                if root in dict_params:
                    yield call, root
            elif rule.context.qualname(func) in _KEY_SET_BUILTINS and len(call.args) == 1:
                root = _subscript_root(call.args[0].value)
                if root in dict_params and not call.args[0].star:
                    yield call, root
        elif kind is cst.For or kind is cst.CompFor:
            loop = cast(Union[cst.For, cst.CompFor], node)
            root = _subscript_root(loop.iter)
            if root in dict_params:
                yield loop.iter, root


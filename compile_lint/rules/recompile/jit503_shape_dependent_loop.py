"""JIT503 shape-dependent-loop: A Python loop over a tensor's batch or sequence size recompiles for every new size."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.kinds.certainty import certain_one_tensor
from compile_lint.analysis.syntax.literals import int_literal
from compile_lint.analysis.syntax.walk import visit
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.bindings import made_only_by
from compile_lint.rules.support.syntax import self_attribute


class ShapeDependentLoop(Rule):
    """A Python loop over a tensor's batch or sequence size recompiles for every new size.

    Why: Dynamo unrolls Python loops, so `for t in range(x.size(1))`, `for row in x` or
    `x.unbind(0)` bake the number of iterations into the graph. Each new batch or
    sequence length recompiles (after 8 sizes the function runs eagerly), even with the
    dim marked dynamic. Branches on a shape (`if x.shape[0] > 4`) only recompile when they
    flip and are not flagged; neither are loops over trailing (feature/channel) dims.

    Instead: use batched tensor ops over the dim (`x * w`, `torch.cumsum`, `bmm`,
    `torch.vmap`), pad to a fixed length, or loop over a constant (`self.max_len`).
    """

    code = "JIT503"
    name = "shape-dependent-loop"
    kind = "recompile"
    message = (
        "a Python loop over a batch/sequence size is unrolled: every new size recompiles "
        "(eager after 8); use batched ops (`torch.vmap(step)(xs)`), or pad to a fixed length"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class RNNDecoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cell = nn.GRUCell(8, 8)

                def forward(self, x):
                    B, T, _ = x.shape
                    h = x.new_zeros(B, 8)
                    outputs = []
                    for t in range(T):
                        h = self.cell(x[:, t], h)
                        outputs.append(h)
                    return torch.stack(outputs, 1)
            """,
            calls="[(torch.randn(2, t, 8),) for t in (3, 4, 5, 6)]",
            entry="RNNDecoder",
            lines=[13],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class PerSampleNorm(nn.Module):
                def forward(self, x):
                    y = x.float()
                    return torch.stack([row / row.norm() for row in y])
            """,
            calls="[(torch.randn(b, 8),) for b in (2, 3, 4, 5)]",
            entry="PerSampleNorm",
            lines=[7],
        ),
        Invalid(
            """
            import torch

            @torch.compile(backend="eager")
            def pairwise(boxes: torch.Tensor):
                scores = []
                for i in range(boxes.size(0)):
                    scores.append((boxes[i] - boxes).abs().sum(-1))
                return torch.stack(scores)
            """,
            calls="[(torch.randn(n, 4),) for n in (3, 4, 5, 6)]",
            entry="pairwise",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class CausalConvCache(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = nn.Conv1d(8, 8, 1)

                def forward(self, input_ids: torch.Tensor, hidden: torch.Tensor):
                    seq_len = input_ids.shape[1]
                    states = []
                    for position in range(seq_len - 1):
                        states.append(self.conv(hidden[..., position : position + 2]))
                    return torch.cat(states, -1)
            """,
            calls="[(torch.ones(1, n, dtype=torch.long), torch.randn(1, 8, 8)) for n in (3, 4, 5, 6)]",
            entry="CausalConvCache",
            lines=[12],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Unbinder(nn.Module):
                def forward(self, x):
                    return torch.stack([t.softmax(-1) for t in x.unbind(0)])
            """,
            calls="[(torch.randn(b, 8),) for b in (2, 3, 4, 5)]",
            entry="Unbinder",
            lines=[6],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
                    self.num_heads = 2

                def forward(self, x):
                    for layer in self.layers:
                        x = layer(x)
                    heads = x.chunk(self.num_heads, -1)
                    for i in range(self.num_heads):
                        x = x + heads[i].sum(-1, keepdim=True)
                    return x
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="Encoder",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class FPN(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lateral = nn.ModuleList([nn.Conv2d(4, 4, 1) for _ in range(2)])

                def forward(self, features):
                    out = []
                    for feature, conv in zip(features, self.lateral):
                        out.append(conv(feature))
                    for i in range(len(out)):
                        out[i] = out[i] * 2
                    return out
            """,
            calls="[([torch.randn(1, 4, 8, 8), torch.randn(1, 4, 4, 4)],)] * 3",
            entry="FPN",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class ChannelMix(nn.Module):
                def forward(self, x):
                    if x.shape[0] > 64:
                        x = x[:64]
                    for d in range(x.dim()):
                        x = x.flip(d)
                    C = x.shape[-1]
                    for c in range(C // 4):
                        x = x + c
                    return torch.cumsum(x, dim=0)
            """,
            calls="[(torch.randn(4, 8),)] * 3",
            entry="ChannelMix",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class MultiAdapter(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.adapters = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
                    self.mix = nn.Parameter(torch.zeros(2))

                def forward(self, xs):
                    weights = torch.softmax(self.mix, 0)
                    out = 0
                    for x, w, adapter in zip(xs, weights, self.adapters):
                        out = out + w * adapter(x)
                    return out
            """,
            calls="[(torch.randn(2, 4, 8),)] * 3",
            entry="MultiAdapter",
            note="zip stops at the ModuleList: a fixed trip count",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class CrossAttentionMask(nn.Module):
                def forward(self, x, text_mask=None, image_mask=None):
                    masks = [text_mask, image_mask]
                    masks = [m for m in masks if m is not None]
                    masks = torch.cat(masks, dim=1)
                    return x * masks
            """,
            calls="[(torch.randn(2, 8), torch.ones(2, 4), torch.ones(2, 4))] * 3",
            entry="CrossAttentionMask",
            note="the comprehension runs over a two-element list; the name becomes a tensor later",
        ),
    ]

    def visit_For(self, node: cst.For) -> None:
        if self._varying_iterable(node.iter):
            self.report(node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        if self._varying_iterable(node.iter):
            self.report(node.iter)

    def visit_While(self, node: cst.While) -> None:
        if isinstance(node.test, cst.Comparison) and self._varying_size(node.test):
            self.report(node.test)

    def _varying_iterable(self, iterable: cst.BaseExpression) -> bool:
        """True when the loop's trip count is a leading dim of a tensor."""
        if isinstance(iterable, cst.Call):
            qualified = self.context.qualname(iterable.func) or ""
            if qualified == "builtins.range":
                return any(self._varying_size(arg.value) for arg in iterable.args)
            if qualified in ("builtins.enumerate", "builtins.reversed"):
                return any(self._varying_iterable(arg.value) for arg in iterable.args)
            if qualified == "builtins.zip":
                # zip stops at its shortest argument: a ModuleList or a tuple display fixes the count.
                return (not any(self._fixed_length(arg.value) for arg in iterable.args)
                        and any(self._varying_iterable(arg.value) for arg in iterable.args))
            if qualified == "torch.unbind" and iterable.args:
                return self._dim_argument(iterable, 1) == 0
            func = iterable.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("chunk", "tensor_split"):
                return False  # a fixed number of pieces
            if isinstance(func, cst.Attribute) and func.attr.value in ("unbind", "split"):
                # Only dim 0 (the batch, or time in sequence-first code): `unbind(1)` over
                # stacked layers or memories is as common as over time.
                if func.attr.value == "unbind":
                    return self._dim_argument(iterable, 0) == 0
                # split(k) yields ceil(size / k) pieces; split([2, 3]) a fixed number
                sizes = iterable.args[0].value if iterable.args else None
                return sizes is not None and int_literal(sizes) is not None and self._dim_argument(iterable, 1) == 0
        return certain_one_tensor(self.context, iterable)

    @staticmethod
    def _dim_argument(call: cst.Call, position: int) -> Optional[int]:
        """The `dim` argument of unbind/split (0 when absent), None when not a literal."""
        positional = [a for a in call.args if a.keyword is None]
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "dim":
                return int_literal(arg.value)
        if len(positional) > position:
            return int_literal(positional[position].value)
        return 0

    def __init__(self, context) -> None:
        super().__init__(context)
        self._in_progress: set[str] = set()

    def _fixed_length(self, expr: cst.BaseExpression) -> bool:
        """A tuple/list display, a name bound only to one, or `self.X` holding a ModuleList/Sequential."""
        if isinstance(expr, (cst.Tuple, cst.List)):
            return not any(isinstance(element, cst.StarredElement) for element in expr.elements)
        if isinstance(expr, cst.Name):
            values = self.context.local_values(expr.value)
            return bool(values) and all(
                isinstance(value, (cst.Tuple, cst.List)) and self._fixed_length(value) for value in values)
        return self_attribute(expr) is not None and made_only_by(self.context, expr, _MODULE_CONTAINERS)

    def _varying_size(self, expr: cst.BaseExpression) -> bool:
        """True when the number `expr` computes depends on a leading dim of a tensor.

        Walks arithmetic only (`x.shape[0] - 1`, `min(T, 4)`, `T // 2`), so a name used
        inside an unrelated call (`x.view(B, -1)`) does not count.
        """
        if isinstance(expr, cst.BinaryOperation):
            return self._varying_size(expr.left) or self._varying_size(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self._varying_size(expr.expression)
        if isinstance(expr, cst.Comparison):
            return self._varying_size(expr.left) or any(self._varying_size(t.comparator) for t in expr.comparisons)
        if isinstance(expr, cst.Name):
            return self._leading_dim_name(expr.value)
        if isinstance(expr, cst.Subscript):
            value = expr.value
            if (isinstance(value, cst.Attribute) and value.attr.value == "shape"
                    and self.context.kind(value.value).tensorish and len(expr.slice) == 1):
                index = expr.slice[0].slice
                dim = int_literal(index.value) if isinstance(index, cst.Index) else None
                return self._permuted_from(value.value, dim) in _VARYING_DIMS
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value == "size" and len(expr.args) == 1:
                return (self.context.kind(func.value).tensorish
                        and int_literal(expr.args[0].value) in _VARYING_DIMS)
            qualified = self.context.qualname(func)
            if qualified == "builtins.len" and len(expr.args) == 1:
                return certain_one_tensor(self.context, expr.args[0].value)
            if qualified in ("builtins.min", "builtins.max", "builtins.int", "builtins.abs", "math.ceil",
                             "math.floor"):
                return any(self._varying_size(arg.value) for arg in expr.args)
        return False

    def _permuted_from(self, tensor: cst.BaseExpression, dim: Optional[int]) -> Optional[int]:
        """The dim `dim` of `tensor` was before a permute: `m = x.permute(2, 1, 0)` makes `m`'s dim 0 `x`'s dim 2
        (a trailing dim: no batch or sequence). `dim` itself where `tensor` is no local bound only to one."""
        values = self.context.local_values(tensor.value) if isinstance(tensor, cst.Name) else []
        orders = set()
        for value in values:
            if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                    and value.func.attr.value == "permute" and value.args):
                return dim
            orders.add(tuple(int_literal(arg.value) for arg in value.args))
        if len(orders) != 1 or dim is None:
            return dim
        order = orders.pop()
        return order[dim] if 0 <= dim < len(order) and order[dim] is not None else dim

    def _leading_dim_name(self, name: str) -> bool:
        """True for `B` in `B, T, C = x.shape` (positions 0 and 1) or `n = x.size(0)`."""
        function = self.context.function
        key = "dim:" + name
        if function is None or key in self._in_progress:
            return False
        self._in_progress.add(key)
        try:
            return self._leading_dim_assignment(function, name)
        finally:
            self._in_progress.discard(key)

    def _leading_dim_assignment(self, function: cst.FunctionDef, name: str) -> bool:
        for value in self.context.local_values(name, function):
            if isinstance(value, cst.BaseExpression):
                if self._varying_size(value):
                    return True
            elif value[0] == "element":
                source = value[1]
                if self._shape_tuple(source) and self._unpacked_position(function, name, source) in _VARYING_DIMS:
                    return True
        return False

    def _shape_tuple(self, expr: object) -> bool:
        if isinstance(expr, cst.Attribute) and expr.attr.value == "shape":
            return self.context.kind(expr.value).tensorish
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "size":
            return not expr.args and self.context.kind(expr.func.value).tensorish
        return False

    @staticmethod
    def _unpacked_position(function: cst.FunctionDef, name: str, source: cst.BaseExpression) -> Optional[int]:
        """Where `name` sits in the tuple target assigned `source`; None after a starred target."""
        position: Optional[int] = None

        class _Find(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                nonlocal position
                if node.value is not source:
                    return
                for target in node.targets:
                    if isinstance(target.target, (cst.Tuple, cst.List)):
                        for index, element in enumerate(target.target.elements):
                            if isinstance(element, cst.StarredElement):
                                return
                            if isinstance(element.value, cst.Name) and element.value.value == name:
                                position = index

        visit(function, _Find())
        return position


# Leading dims (batch, sequence) are the ones that vary between calls; trailing dims are
# features or channels, fixed by the model's weights.
_VARYING_DIMS = (0, 1)


_MODULE_CONTAINERS = frozenset(
    f"torch.nn{package}.{name}"
    for package in ("", ".modules.container")
    for name in ("ModuleList", "ModuleDict", "Sequential", "ParameterList", "ParameterDict")
)

"""Tensor data as sizes: tensors passed where Python ints go, and data-dependent output shapes.

Measured with torch 2.13 (CPU): a tensor as a factory/view/topk size and ops whose output
size depends on values (`x[mask]`, `nonzero`, one-argument `where`, `unique`) pass
`fullgraph=True` but break the default compile; `capture_scalar_outputs=True` /
`capture_dynamic_output_shape_ops=True` remove those breaks. `range(t)`, split/chunk/
linspace sizes and a 0-d tensor used as an index fail under every setting.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.linter.facts import Kind
from compile_lint.rules._tensor_data import bound_only_to, holds_tensor_data
from compile_lint.rules.base import Invalid, Rule, Valid


# Where torch wants Python ints. `None` means every positional argument; keywords listed.
_ALL = None
_SIZE_FUNCTIONS = {
    "builtins.range": (_ALL, ()),
    "torch.arange": (_ALL, ("start", "end", "step")),
    "torch.zeros": (_ALL, ("size",)),
    "torch.ones": (_ALL, ("size",)),
    "torch.empty": (_ALL, ("size",)),
    "torch.rand": (_ALL, ("size",)),
    "torch.randn": (_ALL, ("size",)),
    "torch.randint": (_ALL, ("size",)),
    "torch.full": ((0,), ("size",)),
    "torch.eye": (_ALL, ("n", "m")),
    "torch.linspace": ((2,), ("steps",)),
    "torch.logspace": ((2,), ("steps",)),
    "torch.split": ((1,), ("split_size_or_sections",)),
    "torch.chunk": ((1,), ("chunks",)),
    "torch.narrow": ((2, 3), ("start", "length")),
    "torch.topk": ((1,), ("k",)),
    "torch.kthvalue": ((1,), ("k",)),
    "torch.nn.functional.pad": ((1,), ("pad",)),
}
_SIZE_METHODS = {
    "view": (_ALL, ("size",)),
    "reshape": (_ALL, ("shape",)),
    "expand": (_ALL, ("size",)),
    "repeat": (_ALL, ("repeats",)),
    "new_zeros": (_ALL, ("size",)),
    "new_ones": (_ALL, ("size",)),
    "new_empty": (_ALL, ("size",)),
    "new_full": ((0,), ("size",)),
    "narrow": ((1, 2), ("start", "length")),
    "topk": ((0,), ("k",)),
    "kthvalue": ((0,), ("k",)),
    "split": ((0,), ("split_size",)),
    "chunk": ((0,), ("chunks",)),
}
# Reductions that return a 0-d integer tensor when called without a dim.
_SCALAR_INDEX_REDUCTIONS = frozenset({"argmax", "argmin", "count_nonzero"})


_SizeSpec = tuple[Optional[tuple[int, ...]], tuple[str, ...]]


def _size_arguments(call: cst.Call, spec: _SizeSpec) -> list[cst.BaseExpression]:
    """The expressions in `call` that must be Python ints, tuple and list literals opened."""
    positions, keywords = spec
    chosen: list[cst.BaseExpression] = []
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    for index, arg in enumerate(positional):
        if positions is None or index in positions:
            chosen.append(arg.value)
    chosen += [arg.value for arg in call.args if arg.keyword is not None and arg.keyword.value in keywords]
    opened: list[cst.BaseExpression] = []
    for value in chosen:
        if isinstance(value, (cst.Tuple, cst.List)):
            opened += [element.value for element in value.elements if not isinstance(element, cst.StarredElement)]
        else:
            opened.append(value)
    return opened


def _is_scalar_index(rule: Rule, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """True for a 0-d integer tensor: `t.argmax()`, `torch.argmax(t)`, or a local bound to one."""
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _SCALAR_INDEX_REDUCTIONS:
            if not expr.args and rule.context.kind(func.value).tensorish:
                return True
        qualified = rule.context.qualname(func) or ""
        if qualified.startswith("torch.") and qualified[6:] in _SCALAR_INDEX_REDUCTIONS:
            return len(expr.args) == 1 and expr.args[0].keyword is None
        return False
    return bound_only_to(rule, expr, _is_scalar_index, depth)


class TensorAsSize(Rule):
    """A tensor used where Python needs an int (a size, count or index) breaks the graph.

    Why: `torch.arange(lengths.max())`, `torch.zeros(mask.sum())`, `x.view(n, -1)`,
    `x.topk(k)` with a tensor `k` turn the tensor into an int behind the scenes; the
    default `torch.compile` breaks the graph there ("Data dependent operator").
    `range(t)`, `torch.split`/`torch.chunk`/`torch.linspace` with tensor sizes, and
    indexing with a 0-d integer tensor (`x[scores.argmax()]`) fail even with
    `fullgraph=True`.

    Instead: take sizes from shapes (`x.shape[0]`, guarded, not data), or pass Python
    ints from config; index with a 1-d tensor (`x[i.view(1)]`, `x.index_select(0, i)`,
    `x.gather`) so the index stays in the graph. When a size truly depends on data,
    `capture_scalar_outputs = True` removes the break for factory and view sizes.
    """

    code = "JIT204"
    name = "tensor-as-size"
    kind = "break"
    gb_type = "Data dependent operator"
    gb_id = "GB0033"
    config_note = (
        "capture_scalar_outputs = True removes the break for factory/view/topk sizes; "
        "range(t), split/chunk/linspace sizes and 0-d tensor indices fail under every setting."
    )
    message = (
        "a tensor used as a Python int (size, count or index) breaks the graph; "
        "use shapes or Python ints, or index with a 1-d tensor"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class PositionIds(nn.Module):
                def forward(self, x, lengths):
                    positions = torch.arange(lengths.max())
                    return x[:, :4] + positions[:4]
            """,
            calls="[(torch.randn(4, 8), torch.tensor([5, 7, 3, 6]))]",
            entry="PositionIds",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class KeepPositive(nn.Module):
                def forward(self, scores):
                    k = (scores > 0).sum()
                    return scores.flatten().topk(k).values.sum()
            """,
            entry="KeepPositive",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class BestRow(nn.Module):
                def forward(self, x):
                    best = x.sum(1).argmax()
                    return x[best]
            """,
            entry="BestRow",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Refine(nn.Module):
                def forward(self, x, steps: torch.Tensor):
                    for _ in range(steps):
                        x = torch.tanh(x)
                    return x
            """,
            calls="[(torch.randn(4, 8), torch.tensor(2))]",
            entry="Refine",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LengthMask(nn.Module):
                def forward(self, features, lengths):
                    max_len = lengths.max()
                    mask = torch.arange(max_len)[None, :] < lengths[:, None]
                    return features[:, :4] * mask[:, :4]
            """,
            calls="[(torch.randn(3, 8), torch.tensor([4, 6, 5]))]",
            entry="LengthMask",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class PositionIds(nn.Module):
                def forward(self, x):
                    batch, length = x.shape
                    positions = torch.arange(length).expand(batch, length)
                    return x + positions.view(batch, -1)
            """,
            entry="PositionIds",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class BestRow(nn.Module):
                def forward(self, x):
                    best = x.sum(1).argmax()
                    columns = x.argmax(1, keepdim=True)
                    return x.index_select(0, best.view(1)) + x.gather(1, columns)
            """,
            entry="BestRow",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Heads(nn.Module):
                def __init__(self, heads=2):
                    super().__init__()
                    self.heads = heads

                def forward(self, x, steps=2):
                    b, n = x.shape
                    x = x.reshape(b, self.heads, n // self.heads)
                    for _ in range(steps):
                        x = torch.zeros(b, self.heads, 1) + x
                    return x.topk(2, dim=-1).values
            """,
            entry="Heads",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class LengthMask(nn.Module):
                def forward(self, features, lengths):
                    positions = torch.arange(features.shape[1], device=features.device)
                    mask = positions[None, :] < lengths[:, None]
                    return features * mask
            """,
            calls="[(torch.randn(3, 8), torch.tensor([4, 6, 5]))]",
            entry="LengthMask",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.context.qualname(func)
        spec = _SIZE_FUNCTIONS.get(qualified or "")
        if spec is None and qualified is None and isinstance(func, cst.Attribute):
            method_spec = _SIZE_METHODS.get(func.attr.value)
            if method_spec is not None and self.context.kind(func.value) is Kind.TENSOR:
                spec = method_spec
        if spec is None:
            return
        for value in _size_arguments(node, spec):
            if holds_tensor_data(self, value):
                self.report(value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self.context.kind(node.value).tensorish:
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and _is_scalar_index(self, index.value):
                self.report(index.value)


# Ops whose output size depends on tensor values.
_DYNAMIC_SHAPE_OPS = frozenset({"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount"})
_MASK_FUNCTIONS = frozenset({
    "torch.isnan", "torch.isinf", "torch.isfinite", "torch.isneginf", "torch.isposinf", "torch.isin",
    "torch.logical_and", "torch.logical_or", "torch.logical_not", "torch.logical_xor",
    "torch.eq", "torch.ne", "torch.gt", "torch.ge", "torch.lt", "torch.le", "torch.isclose",
})
_MASK_METHODS = frozenset({
    "bool", "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_not", "logical_xor",
    "eq", "ne", "gt", "ge", "lt", "le", "isclose",
})
_ORDERING = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


def _is_mask(rule: Rule, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """True for an expression that is certainly a boolean tensor (a comparison, `~m`, `m & n`...)."""
    context = rule.context
    if depth > 6:
        return False
    if isinstance(expr, cst.Comparison):
        return all(isinstance(t.operator, _ORDERING) for t in expr.comparisons) and context.kind(expr).tensorish
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return _is_mask(rule, expr.expression, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return _is_mask(rule, expr.left, depth + 1) or _is_mask(rule, expr.right, depth + 1)
    if isinstance(expr, cst.Call):
        qualified = context.qualname(expr.func)
        if qualified is not None:
            return qualified in _MASK_FUNCTIONS
        func = expr.func
        return (isinstance(func, cst.Attribute) and func.attr.value in _MASK_METHODS
                and context.kind(func.value).tensorish)
    return bound_only_to(rule, expr, _is_mask, depth)


class DataDependentShape(Rule):
    """Boolean-mask indexing and ops like `nonzero` give outputs whose size depends on data.

    Why: `x[mask]`, `torch.nonzero`, one-argument `torch.where(mask)`, `masked_select`,
    `unique`, `bincount` and `repeat_interleave` with tensor repeats cannot know their
    output size without the values, so the default `torch.compile` breaks the graph
    ("Dynamic shape operator"). `fullgraph=True` passes (the size becomes an unbacked
    symbol), and so does the default compile with
    `torch._dynamo.config.capture_dynamic_output_shape_ops = True`.

    Instead: keep shapes static: `torch.where(mask, x, 0)`, `x * mask`,
    `x.masked_fill(~mask, 0)`, masked sums (`(x * mask).sum() / mask.sum()`); assigning
    through a mask (`x[mask] = 0`) is fine, but `x[mask] += 1` reads `x[mask]` and
    breaks (write `x = x + mask`); pass `output_size=` to `repeat_interleave`.
    """

    code = "JIT207"
    name = "data-dependent-shape"
    kind = "break"
    gb_type = "Dynamic shape operator"
    gb_id = "GB0036"
    config_note = (
        "With torch._dynamo.config.capture_dynamic_output_shape_ops = True the default "
        "compile captures these ops without a break; fullgraph=True passes either way."
    )
    message = (
        "output size depends on tensor data (mask indexing, nonzero, one-arg where...) and "
        "breaks the graph; keep shapes static with torch.where(mask, x, 0) or x * mask"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class MaskedMean(nn.Module):
                def forward(self, loss, weights):
                    valid = weights > 0
                    return loss[valid].mean()
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="MaskedMean",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class FgIndices(nn.Module):
                def forward(self, labels):
                    fg = torch.where(labels > 0)[0]
                    return fg.float().mean()
            """,
            calls="[(torch.randint(0, 3, (16,)),)]",
            entry="FgIndices",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ActiveTokens(nn.Module):
                def forward(self, x):
                    keep = torch.isfinite(x) & (x.abs() > 0.1)
                    return x.masked_select(keep).sum() + keep.nonzero().sum()
            """,
            entry="ActiveTokens",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Classes(nn.Module):
                def forward(self, labels):
                    return torch.unique(labels).sum()
            """,
            calls="[(torch.randint(0, 5, (16,)),)]",
            entry="Classes",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ScoreFilter(nn.Module):
                def __init__(self, score_thresh=0.05):
                    super().__init__()
                    self.score_thresh = score_thresh

                def forward(self, boxes, scores):
                    keep = scores > self.score_thresh
                    boxes, scores = boxes[keep], scores[keep]
                    return boxes * scores[:, None]
            """,
            calls="[(torch.rand(10, 4), torch.rand(10))]",
            entry="ScoreFilter",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class BumpPositives(nn.Module):
                def forward(self, x):
                    y = x.clone()
                    y[y > 0] += 1
                    return y
            """,
            entry="BumpPositives",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class MaskedMean(nn.Module):
                def forward(self, loss, weights):
                    valid = weights > 0
                    total = torch.where(valid, loss, 0).sum()
                    return total / valid.sum().clamp(min=1) + (loss * valid).mean()
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="MaskedMean",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class ClampNegatives(nn.Module):
                def forward(self, x):
                    y = x.clone()
                    y[y < 0] = 0
                    y[torch.isnan(y)] = 0.0
                    return y.masked_fill(y > 5, 5)
            """,
            entry="ClampNegatives",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Gather(nn.Module):
                def forward(self, x, idx):
                    rows = x[idx]
                    last = x[:, -1]
                    return rows + last.unsqueeze(-1) + x[x.shape[0] - 1]
            """,
            calls="[(torch.randn(4, 8), torch.tensor([0, 2, 1, 3]))]",
            entry="Gather",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Repeat(nn.Module):
                def forward(self, x, counts):
                    fixed = torch.repeat_interleave(x, 2, dim=0)
                    sized = x.repeat_interleave(counts, dim=0, output_size=8)
                    return fixed + sized
            """,
            calls="[(torch.randn(4, 8), torch.tensor([2, 2, 2, 2]))]",
            entry="Repeat",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._store_targets: set[cst.BaseExpression] = set()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        # `x[mask] = v` writes in place (index_put) and keeps shapes static. `x[mask] += v`
        # is no such target: it reads `x[mask]` first, and that breaks (measured).
        self._store_targets.add(node.target)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if node in self._store_targets or not self.context.kind(node.value).tensorish:
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and _is_mask(self, index.value):
                self.report(node)
                return

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.context.qualname(func)
        if qualified is not None:
            if not qualified.startswith("torch."):
                return
            op = qualified[len("torch."):]
            positional = [a for a in node.args if a.keyword is None and not a.star]
            if op in _DYNAMIC_SHAPE_OPS or (op == "where" and len(node.args) == 1 and positional):
                self.report(node)
            elif op == "repeat_interleave" and self._tensor_repeats(node, positional[1:2]):
                self.report(node)
            return
        if isinstance(func, cst.Attribute) and self.context.kind(func.value) is Kind.TENSOR:
            method = func.attr.value
            if method in _DYNAMIC_SHAPE_OPS:
                self.report(node)
            elif method == "repeat_interleave":
                positional = [a for a in node.args if a.keyword is None and not a.star]
                if self._tensor_repeats(node, positional[:1]):
                    self.report(node)

    def _tensor_repeats(self, node: cst.Call, repeats: list[cst.Arg]) -> bool:
        """`repeat_interleave` with a tensor of repeats and no `output_size=`."""
        if any(a.keyword is not None and a.keyword.value == "output_size" for a in node.args):
            return False
        values = [a.value for a in repeats] + [
            a.value for a in node.args if a.keyword is not None and a.keyword.value == "repeats"
        ]
        return any(self.context.kind(value) is Kind.TENSOR for value in values)

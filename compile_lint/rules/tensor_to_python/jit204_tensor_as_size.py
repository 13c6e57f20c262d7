"""JIT204 tensor-as-size: A tensor used where Python needs an int (a size, count or index) breaks the graph."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.fixes.capture_scalars import report_captured_tensor_size
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.tensor_data import bound_only_to, holds_tensor_data


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
    `x.gather`) so the index stays in the graph; for `range(t)`, loop to a fixed bound and
    keep each step only where it counts (`x = torch.where(i < n, step(x), x)`). When a
    size truly depends on data, `capture_scalar_outputs = True` removes the break for
    factory and view sizes.

    The fix (unsafe), where the tensor is a size of `torch.zeros/ones/empty/randn/arange/
    full`, `x.new_zeros/new_ones`, `expand`, `repeat`, `narrow`'s length or `topk`'s k
    (measured clean once captured, benchmarks/results/scalar_size_capture.txt): the code
    stays, and `torch._dynamo.config.capture_scalar_outputs = True` goes right before the
    file's `torch.compile` call; with no compile call the message says where it goes.
    """

    code = "JIT204"
    name = "tensor-as-size"
    kind = "break"
    gb_type = "Data dependent operator"
    gb_id = "GB0033"
    gb_types = ("Failed to trace builtin operator",)  # the same pattern, reported differently
    fix_applicability = "unsafe"
    withheld_fix_steps = True
    config_note = (
        "capture_scalar_outputs = True removes the break for factory/view/topk sizes; "
        "range(t), split/chunk/linspace sizes and 0-d tensor indices fail under every setting."
    )
    message = (
        "a tensor used as a Python int (size, count or index) breaks the graph; "
        "take sizes from shapes or config (`x.shape[0]`), or index with a 1-d tensor (`x[i.view(1)][0]`)"
    )
    steps = ("x.shape[0]", "x[i.view(1)][0]", "torch._dynamo.config.capture_scalar_outputs = True",
             "x = torch.where(i < n, step(x), x)")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class PadRows(nn.Module):
                def forward(self, x, lengths):
                    return torch.cat([x, x.new_zeros(lengths.max(), x.shape[1])])

            model = torch.compile(PadRows())
            """,
            calls="[(torch.randn(4, 6), torch.tensor([2, 1])), (torch.randn(4, 6), torch.tensor([0, 3]))]",
            fixed="""
            import torch
            from torch import nn

            class PadRows(nn.Module):
                def forward(self, x, lengths):
                    return torch.cat([x, x.new_zeros(lengths.max(), x.shape[1])])

            torch._dynamo.config.capture_scalar_outputs = True
            model = torch.compile(PadRows())
            """,
            entry="PadRows",
            lines=[6],
            note="A size of new_zeros: captured, set before the compile call.",
        ),
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
            lines=[6],
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
            lines=[7],
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
            lines=[7],
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
            lines=[6],
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
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Rotary(nn.Module):
                def forward(self, seqlen: int):
                    return torch.arange(seqlen).float()

            class Vision(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rotary = Rotary()

                def forward(self, x, grid):
                    longest = grid.max()
                    return x + self.rotary(longest).sum()
            """,
            calls="[(torch.randn(4), torch.tensor([3, 5]))]",
            entry="Vision",
            lines=[6],
            note="The 0-d tensor `grid.max()` flows into the submodule's forward, whatever its annotation says.",
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
        Valid(
            """
            import torch
            from torch import nn

            class Rotary(nn.Module):
                def forward(self, seqlen):
                    return torch.arange(seqlen).float()

            class PatchEmbed(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Conv2d(3, 8, 2, 2)

                def forward(self, x):
                    x = self.proj(x)
                    _, _, height, width = x.shape
                    return x.flatten(2).transpose(1, 2), height, width

            class Vision(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rotary = Rotary()
                    self.patch = PatchEmbed()

                def forward(self, pixels):
                    tokens, height, width = self.patch(pixels)
                    grid = tokens.reshape(tokens.shape[0], height, width, -1)
                    return grid.sum(-1) + self.rotary(width)[:1]
            """,
            calls="[(torch.randn(2, 3, 8, 8),)]",
            entry="Vision",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class PatchEmbed(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Conv2d(3, 8, 2, stride=2)

                def forward(self, pixels):
                    x = self.proj(pixels)
                    _, _, height, width = x.shape
                    return x.flatten(2).transpose(1, 2), height, width

            class Stage(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.patch_embed = PatchEmbed()
                    self.norm = nn.LayerNorm(8)

                def forward(self, pixels):
                    hidden, height, width = self.patch_embed(pixels)
                    batch = hidden.shape[0]
                    hidden = self.norm(hidden)
                    return hidden.reshape(batch, height, width, -1).permute(0, 3, 1, 2)
            """,
            calls="[(torch.randn(2, 3, 8, 8),)]",
            entry="Stage",
            note="Python ints returned beside a tensor by a sub-module",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class RelativeBias(nn.Module):
                def forward(self, table, window_size):
                    distances = (2 * window_size[0] - 1) * (2 * window_size[1] - 1) + 3
                    return table[: distances - 3].reshape(distances - 3, -1)
            """,
            calls="[(torch.randn(16, 4), (2, 2))]",
            entry="RelativeBias",
            note="sizes taken from a tuple argument",
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
            if holds_tensor_data(self, value) and not report_captured_tensor_size(
                    self.context, self.report, value, self.message):
                self.report(value, RANGE_MESSAGE if qualified == "builtins.range" else None)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if not self.context.kind(node.value).tensorish:
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and _is_scalar_index(self, index.value):
                self.report(index.value)


RANGE_MESSAGE = (
    "a tensor used as a loop count breaks the graph (`range()` needs a Python int under every setting); loop to "
    "a fixed bound and keep each step only where it counts: `x = torch.where(i < n, step(x), x)`"
)


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

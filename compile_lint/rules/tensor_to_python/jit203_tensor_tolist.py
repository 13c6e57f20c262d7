"""JIT203 tensor-tolist: `.tolist()` on a tensor reads all its values into Python."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules._tensor_data import (
    NOT_ARRAYS,
    method_call,
)
from compile_lint.rules.base import Invalid, Rule, Valid


class TensorTolist(Rule):
    """`.tolist()` on a tensor reads all its values into Python.

    Why: on a floating-point tensor Dynamo cannot trace it at all ("Tensor.tolist()
    with non-integer tensor"): `fullgraph=True` fails, whatever the config. On an
    integer tensor the default `torch.compile` breaks the graph ("Data dependent
    operator"), `fullgraph=True` passes with unbacked symbols, and
    `capture_scalar_outputs = True` removes the break. Feeding the list to
    `torch.split` or `range` makes sizes depend on data.

    Instead: stay in tensors (`unbind`, `torch.stack`, vectorised ops); for split sizes
    known ahead, pass Python ints (from config or shapes).
    """

    code = "JIT203"
    name = "tensor-tolist"
    kind = "break"
    gb_type = "Tensor.tolist() with non-integer tensor"
    gb_id = "GB0109"
    gb_types = ("Data dependent operator",)  # the same pattern, reported differently
    config_note = (
        "Integer tensors: capture_scalar_outputs = True removes the break. Float tensors: "
        "fails under every setting."
    )
    message = (
        "`.tolist()` reads tensor data into Python: fails on float tensors, breaks the graph "
        "on integer ones; keep tensors (`unbind`, vectorised ops)"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class PerRowScale(nn.Module):
                def forward(self, x):
                    scales = x.abs().amax(1).tolist()
                    return torch.stack([row / s for row, s in zip(x, scales)])
            """,
            entry="PerRowScale",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class SplitByLength(nn.Module):
                def forward(self, tokens, lengths):
                    chunks = tokens.split(lengths.tolist())
                    return torch.stack([c.sum(0) for c in chunks])
            """,
            calls="[(torch.randn(6, 8), torch.tensor([2, 3, 1]))]",
            entry="SplitByLength",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class BoxAreas(nn.Module):
                def forward(self, boxes):
                    areas = []
                    for x1, y1, x2, y2 in boxes.tolist():
                        areas.append((x2 - x1) * (y2 - y1))
                    return boxes.new_tensor(areas)
            """,
            calls="[(torch.rand(5, 4),)]",
            entry="BoxAreas",
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class PerRowScale(nn.Module):
                def forward(self, x):
                    scales = x.abs().amax(1, keepdim=True)
                    return torch.stack([row for row in x / scales])
            """,
            entry="PerRowScale",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class SplitHeads(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.sizes = [2, 6]

                def forward(self, x):
                    sizes = list(self.sizes)
                    dims = list(x.shape)
                    a, b = x.split(sizes, dim=-1)
                    return a.sum(-1) + b.sum(-1) + dims[0]
            """,
            entry="SplitHeads",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Unbind(nn.Module):
                def forward(self, x):
                    rows = x.unbind(0)
                    return torch.stack(list(rows[::-1]))
            """,
            entry="Unbind",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        receiver = method_call(node, frozenset({"tolist"}))
        if receiver is not None and self.context.kind(receiver) not in NOT_ARRAYS:
            self.report(node)


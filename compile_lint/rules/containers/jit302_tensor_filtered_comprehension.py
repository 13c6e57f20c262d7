"""JIT302 tensor-filtered-comprehension: A comprehension filtered on tensor data
(`[t for t in xs if t.sum() > 0]`) breaks."""

from __future__ import annotations

import libcst as cst

from compile_lint.fixes.branches.conditions import data_dependent
from compile_lint.rules.base import Invalid, Rule, Valid


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
        "the data); keep every element and zero the ones you would drop: `torch.where(keep, t, 0)`"
    )
    steps = ("torch.where(keep, t, 0)",)
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
            lines=[13],
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
            lines=[6],
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
            lines=[6],
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
            lines=[6],
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
        culprit = data_dependent(self.context, node.test)
        if culprit is not None:
            self.report(node.test, path_node=culprit)


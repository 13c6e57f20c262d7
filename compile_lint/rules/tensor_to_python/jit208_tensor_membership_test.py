"""JIT208 tensor-membership-test: `value in tensor` reads tensor data into a Python bool and breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.tensor_data import holds_tensor_data


class TensorMembershipTest(Rule):
    """`value in tensor` reads tensor data into a Python bool and breaks the graph.

    Why: `Tensor.__contains__` is `(tensor == value).any().item()`: the default
    `torch.compile` breaks the graph at the `.item()`, and branching on the result
    (`if 0 in lengths:`) fails `fullgraph=True` ("Could not guard on data-dependent
    expression"; measured on torch 2.13). Membership in a shape (`0 in x.shape`), a
    dict or a ModuleDict is plain Python and compiles.

    Instead: keep the test a tensor, `(lengths == 0).any()` or `torch.isin(values,
    lengths)`, and select with `torch.where` instead of branching.
    """

    code = "JIT208"
    name = "tensor-membership-test"
    kind = "break"
    message = (
        "`in` on a tensor reads its data into a Python bool and breaks the graph; keep "
        "the test a tensor, `(t == v).any()`, and select with `torch.where(found, a, b)`"
    )
    steps = ("torch.where(found, a, b)",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class SkipEmpty(nn.Module):
                def forward(self, x, lengths: torch.Tensor):
                    if 0 in lengths:
                        return x * 0
                    return x * 2
            """,
            calls="[(torch.randn(2, 8), torch.tensor([8, 3]))]",
            entry="SkipEmpty",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    labels = x.argmax(-1)
                    if 3 not in labels:
                        x = x + 1
                    return x
            """,
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class SkipEmpty(nn.Module):
                def forward(self, x, lengths):
                    has_empty = (lengths == 0).any()
                    return torch.where(has_empty, x * 0, x * 2)
            """,
            calls="[(torch.randn(2, 8), torch.tensor([8, 3]))]",
            entry="SkipEmpty",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Heads(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.heads = nn.ModuleDict({"cls": nn.Linear(8, 8)})

                def forward(self, x, task="cls"):
                    if 0 in x.shape or x.dim() not in (2, 3):
                        return x
                    if task in self.heads:
                        x = self.heads[task](x)
                    return x
            """,
            entry="Heads",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    outputs = {"logits": x * 2}
                    if "logits" in outputs:
                        x = outputs["logits"]
                    return torch.isin(x.argmax(-1), torch.tensor([0, 3])).float() + x.sum()
            """,
        ),
    ]

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if any(isinstance(target.operator, (cst.In, cst.NotIn)) and holds_tensor_data(self, target.comparator)
               for target in node.comparisons):
            self.report(node)

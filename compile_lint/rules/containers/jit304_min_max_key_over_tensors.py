"""JIT304 min-max-key-over-tensors: `min(...)`/`max(...)` with `key=` over tensors breaks the graph, whatever the key."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules._syntax import is_builtin_call, keyword_argument, positional_arguments
from compile_lint.rules.base import Invalid, Rule, Valid


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
            lines=[11],
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
            lines=[6],
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
        if not (is_builtin_call(self, node, "min") or is_builtin_call(self, node, "max")):
            return
        if keyword_argument(node, "key") is None:
            return
        positional = positional_arguments(node)
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


"""JIT102 tensor-valued-while: A `while` loop whose condition reads tensor data breaks the graph on every check."""

from __future__ import annotations

import libcst as cst

from compile_lint.fixes.branches.conditions import data_dependent
from compile_lint.rules.base import Invalid, Rule, Valid


class TensorValuedWhile(Rule):
    """A `while` loop whose condition reads tensor data breaks the graph on every check.

    Why: each test of the condition needs the tensor's value in Python, so Dynamo
    breaks the graph there ("Data-dependent branching"); with `fullgraph=True`
    compilation fails.

    Instead: run a fixed number of iterations and mask finished elements with
    `torch.where`, or use `torch._higher_order_ops.while_loop` for true loops.
    There is no automatic fix: the number of iterations is data, and a bound to unroll to
    cannot be read from the code (running more iterations than the original changes the
    result unless every step is masked, which needs the loop's meaning). The same holds
    for `break` in a loop on a tensor test (JIT101).
    """

    code = "JIT102"
    name = "tensor-valued-while"
    kind = "break"
    gb_type = "Data-dependent branching"
    gb_id = "GB0170"
    message = (
        "`while` on a tensor value breaks the graph at every test; "
        "loop a fixed number of times and freeze finished values: `x = torch.where(done, x, step(x))`"
    )
    steps = ("x = torch.where(done, x, step(x))",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Renormalize(nn.Module):
                def forward(self, x):
                    while x.norm() > 1.0:
                        x = x * 0.5
                    return x
            """,
            calls="[(torch.randn(4, 8) * 10,)]",
            entry="Renormalize",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Sampler(nn.Module):
                def forward(self, logits):
                    steps = 0
                    while (logits > 0).any() and steps < 3:
                        logits = logits - 1
                        steps += 1
                    return logits
            """,
            entry="Sampler",
            lines=[7],
        ),
        Invalid(
            """
            import torch

            @torch.compile(backend="eager")
            def refine(x):
                while x.max() > 1:
                    x = x / 2
                return x
            """,
            calls="[(torch.randn(4, 8) * 10,)]",
            entry="refine",
            lines=[5],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Unrolled(nn.Module):
                def __init__(self, steps=3):
                    super().__init__()
                    self.steps = steps

                def forward(self, x):
                    i = 0
                    while i < self.steps:
                        x = torch.where(x.norm() > 1.0, x * 0.5, x)
                        i += 1
                    return x
            """,
            entry="Unrolled",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Halver(nn.Module):
                def forward(self, x):
                    size = x.shape[-1]
                    while size > 2:
                        x = x[..., : size // 2] + x[..., size // 2 : size // 2 * 2]
                        size = x.shape[-1]
                    return x
            """,
            entry="Halver",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Stack(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

                def forward(self, x):
                    todo = list(self.layers)
                    while todo:
                        x = todo.pop(0)(x)
                    return x
            """,
            entry="Stack",
        ),
    ]

    def visit_While(self, node: cst.While) -> None:
        culprit = data_dependent(self.context, node.test)
        if culprit is not None:
            self.report(node.test, path_node=culprit)  # the message says what to write; --explain why no fix


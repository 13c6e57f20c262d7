"""JIT609 requires-grad-in-forward: `t.requires_grad_()` or `t.requires_grad = ...`
inside a compiled region breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid


class RequiresGradInForward(Rule):
    """`t.requires_grad_()` or `t.requires_grad = ...` inside a compiled region breaks the graph.

    Why: Dynamo cannot change a tensor's autograd leaf status mid-graph: it reports
    "Unsupported Tensor.requires_grad_() call" for inputs with grad enabled, "returning
    intermediate with requires_grad_()" for results, and "setattr() on
    Tensor.requires_grad" for the attribute.

    Instead: set `requires_grad` on parameters and inputs before calling the compiled
    model (in `__init__` or the training loop); inside forward use `torch.no_grad()` /
    `.detach()` to stop gradients.
    """

    code = "JIT609"
    name = "requires-grad-in-forward"
    kind = "break"
    gb_type = "returning intermediate with requires_grad_()"
    gb_id = "GB7324"
    gb_types = ("setattr() on Tensor.requires_grad",)  # the same pattern, reported differently
    message = (
        "changing requires_grad inside a compiled region breaks the graph; set it before "
        "the call, or stop gradients inside with `x.detach()` or `with torch.no_grad():`"
    )
    steps = ("x.detach()", "with torch.no_grad():")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class SaliencyInput(nn.Module):
                def forward(self, x):
                    x = x * 1.0
                    x.requires_grad_(True)
                    return x
            """,
            entry="SaliencyInput",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    y = x.detach()
                    y.requires_grad = True
                    return y * 2
            """,
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Frozen(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.fc.weight.requires_grad_(False)

                def forward(self, x):
                    return self.fc(x)
            """,
            entry="Frozen",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    if x.requires_grad:
                        x = x * 1.0
                    return x.detach() * 2
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    with torch.no_grad():
                        target = x.softmax(-1)
                    return x - target
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_":
            self.report(node)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        target = node.target
        if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad":
            self.report(target)


"""JIT619 autograd-grad-call: `torch.autograd.grad(...)` in compiled code breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid


class AutogradGradCall(Rule):
    """`torch.autograd.grad(...)` in compiled code breaks the graph.

    Why: with its default settings Dynamo 2.13 does not trace `torch.autograd.grad`
    ("using `torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`"):
    the default compile breaks the graph at the call and `fullgraph=True` fails, in a
    module's forward and in a compiled function, in `train()` and `eval()`, with or
    without `torch.enable_grad()` and `create_graph=True` (measured). Gradient
    penalties, physics-informed losses and forces from an energy are the usual sources.
    `torch._dynamo.config.trace_autograd_ops = True` makes Dynamo trace it where the
    graph it differentiates starts inside the compiled code; it still breaks where that
    graph reaches a tensor made outside with a `grad_fn` ("autograd.grad with external
    grad_fn") or where a returned tensor's graph is consumed ("autograd.grad consumed
    returned tensor's grad_fn").

    Instead: `torch.func.grad(f)(x)` (or `torch.func.grad_and_value`) computes the
    same gradient and compiles, also when the result is trained through (measured:
    equal losses and parameter gradients); or set the config above where it applies.
    """

    code = "JIT619"
    name = "autograd-grad-call"
    kind = "break"
    gb_type = "using `torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`"
    gb_id = "GB9186"
    message = (
        "`torch.autograd.grad` in compiled code breaks the graph (Dynamo does not trace it by default); "
        "take the gradient with `torch.func.grad(f)(x)`, or set `torch._dynamo.config.trace_autograd_ops = True` "
        "where the graph it differentiates starts inside the compiled code"
    )
    steps = ("torch.func.grad(f)(x)", "torch._dynamo.config.trace_autograd_ops = True")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class GradientPenalty(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.critic = nn.Linear(8, 1)

                def forward(self, x):
                    with torch.enable_grad():
                        x = x.detach().clone()
                        score = self.critic(x.tanh()).sum()
                        (grad,) = torch.autograd.grad(score, self.critic.weight, create_graph=True)
                    return score + grad.pow(2).sum()
            """,
            entry="GradientPenalty",
            lines=[13],
        ),
        Invalid(
            """
            import torch
            from torch import nn
            from torch.autograd import grad

            head = nn.Linear(8, 3)

            @torch.compile(backend="eager")
            def weight_grad(x):
                with torch.enable_grad():
                    loss = head(x).pow(2).sum()
                    return grad(loss, [head.weight])[0]
            """,
            entry="weight_grad",
            lines=[11],
            note="imported as `grad`, in a compiled function",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class GradientPenalty(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.critic = nn.Linear(8, 1)

                def score(self, x):
                    return self.critic(x.tanh()).sum()

                def forward(self, x):
                    grad = torch.func.grad(self.score)(x)
                    return self.score(x) + grad.pow(2).sum()
            """,
            entry="GradientPenalty",
            note="torch.func.grad compiles",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(8, 8)

                def forward(self, x):
                    return self.lin(x).relu()

            def train_step(model, x):
                loss = model(x).pow(2).sum()
                return torch.autograd.grad(loss, list(model.parameters()))
            """,
            note="`torch.autograd.grad` in the training step outside the compiled model",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = nn.Linear(8, 8)

                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        with torch.enable_grad():
                            self.last_grad = torch.autograd.grad(self.lin(x).sum(), self.lin.weight)[0]
                    return self.lin(x)
            """,
            note="a check only eager runs take",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualname(node.func) == "torch.autograd.grad":
            self.report(node)

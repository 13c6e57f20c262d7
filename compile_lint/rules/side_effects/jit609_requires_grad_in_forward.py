"""JIT609 requires-grad-in-forward: `t.requires_grad_()`, `t.requires_grad = ...` or
`requires_grad=True` in a compiled region breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.kinds.certainty import Under, certain_tensor
from compile_lint.analysis.kinds.facts import Kind
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.bindings import call_name
from compile_lint.rules.support.syntax import keyword_argument


class RequiresGradInForward(Rule):
    """`t.requires_grad_()`, `t.requires_grad = ...` or `requires_grad=True` in a compiled region breaks the graph.

    Why: Dynamo cannot make a new autograd leaf that requires grad mid-graph: it reports
    "Unsupported Tensor.requires_grad_() call" for inputs with grad enabled, "returning
    intermediate with requires_grad_()" for results, "setattr() on
    Tensor.requires_grad" for the attribute, and "Attempted to use tensor creation
    function with requires_grad=True" for a torch function called with
    `requires_grad=True` (`torch.zeros(n, requires_grad=True)`, `torch.tensor(v,
    requires_grad=True)`, `torch.randn_like(x, requires_grad=True)`, `t.new_tensor(v,
    requires_grad=True)`), also under `torch.no_grad()` and in `eval()` (measured on
    torch 2.13). `requires_grad=False` compiles, and so does `t.new_zeros(n,
    requires_grad=True)` (the other `Tensor.new_*` methods). One built inside
    `nn.Parameter(...)` is JIT612's.

    Instead: set `requires_grad` on parameters and inputs before calling the compiled
    model (in `__init__` or the training loop); make a tensor that needs gradients in
    `__init__` (`nn.Parameter(w)`) or pass it in; inside forward use `torch.no_grad()` /
    `.detach()` to stop gradients.
    """

    code = "JIT609"
    name = "requires-grad-in-forward"
    kind = "break"
    gb_type = "returning intermediate with requires_grad_()"
    gb_id = "GB7324"
    # the same pattern, reported differently: the attribute, and a tensor made with requires_grad=True
    gb_types = ("setattr() on Tensor.requires_grad",
                "Attempted to use tensor creation function with requires_grad=True")
    message = (
        "changing requires_grad inside a compiled region breaks the graph; set it before "
        "the call, or stop gradients inside with `x.detach()` or `with torch.no_grad():`"
    )
    steps = ("x.detach()", "with torch.no_grad():", "self.w = nn.Parameter(w)")
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
        Invalid(
            """
            import torch
            from torch import nn

            class AdaptiveScale(nn.Module):
                def forward(self, x):
                    scale = torch.ones(x.shape[-1], dtype=x.dtype, requires_grad=True)
                    return x * scale
            """,
            entry="AdaptiveScale",
            lines=[6],
            note="a torch factory called with requires_grad=True",
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
        Valid(
            """
            import torch
            from torch import nn

            class AdaptiveScale(nn.Module):
                def forward(self, x):
                    scale = torch.ones(x.shape[-1], requires_grad=False)
                    shift = torch.zeros(x.shape[-1], requires_grad=x.requires_grad)
                    bias = x.new_zeros(x.shape[-1], requires_grad=True)
                    return x * scale + shift + bias
            """,
            entry="AdaptiveScale",
            note="requires_grad=False, one that is not a literal True, and Tensor.new_zeros compile",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_":
            self.report(node)
        elif self._made_requiring_grad(node):
            self.report(node, FACTORY_MESSAGE)

    def _made_requiring_grad(self, node: cst.Call) -> bool:
        """`torch.zeros(..., requires_grad=True)`, `t.new_tensor(..., requires_grad=True)`: made requiring grad."""
        argument = keyword_argument(node, "requires_grad")
        if argument is None or not (isinstance(argument.value, cst.Name) and argument.value.value == "True"):
            return False
        name = call_name(self.context, node) or ""
        if name.startswith("torch."):
            return (name not in _PARAMETER_CONSTRUCTORS and self.context.kind(node) is Kind.TENSOR
                    and not self._in_parameter(node))
        func = node.func
        return (isinstance(func, cst.Attribute) and func.attr.value == "new_tensor"
                and certain_tensor(self.context, func.value, Under.DYNAMO) and not self._in_parameter(node))

    def _in_parameter(self, node: cst.Call) -> bool:
        """True for the data of `nn.Parameter(torch.zeros(n, requires_grad=True))`: JIT612 reports that line."""
        argument = self.context.parent(node)
        call = self.context.parent(argument) if isinstance(argument, cst.Arg) else None
        return isinstance(call, cst.Call) and (call_name(self.context, call) or "") in _PARAMETER_CONSTRUCTORS

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        target = node.target
        if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad":
            self.report(target)



FACTORY_MESSAGE = (
    "a tensor made with requires_grad=True inside a compiled region breaks the graph; make it in `__init__` "
    "(`self.w = nn.Parameter(w)`) or pass it in, or leave out requires_grad=True"
)

_PARAMETER_CONSTRUCTORS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})

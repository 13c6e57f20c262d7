"""JIT612 parameter-created-in-forward: Building an `nn.Parameter`, or a layer that owns one,
inside a compiled region breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.syntax.walk import visit
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.bindings import call_name
from compile_lint.rules.support.syntax import class_method, keyword_argument


class ParameterCreatedInForward(Rule):
    """Building an `nn.Parameter`, or a layer that owns one, inside a compiled region breaks the graph.

    Why: Dynamo does not trace the `nn.Parameter()` constructor ("Attempted to use
    `torch.nn.Parameter()` constructor with Dynamo"), so `nn.Parameter(w)`,
    `nn.Linear(...)`, `nn.Embedding(...)`, `nn.LayerNorm(d)` and every other layer with
    weights built in forward (to grow a table, or to swap a layer in lazily) break the
    graph. Layers without parameters (`nn.ReLU()`, `nn.CrossEntropyLoss()`,
    `nn.MaxPool1d(2)`, `nn.LayerNorm(d, elementwise_affine=False)`) and `nn.Buffer`
    compile (measured on torch 2.13).

    Instead: build layers and parameters in `__init__`; to grow a table, allocate the
    largest size up front or keep the new weights a plain tensor (a buffer) and use the
    functional form (`F.embedding(ids, weight)`).
    """

    code = "JIT612"
    name = "parameter-created-in-forward"
    kind = "break"
    gb_type = "Attempted to use `torch.nn.Parameter()` constructor with Dynamo"
    gb_id = "GB0264"
    message = (
        "creating an nn.Parameter (or a layer with weights) in forward breaks the graph; "
        "build it in `__init__`, or keep a plain tensor and use the functional form (`F.linear(x, weight)`)"
    )
    steps = ("F.linear(x, weight)",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class GatedScale(nn.Module):
                def forward(self, x):
                    gate = nn.Parameter(torch.ones(x.shape[-1]))
                    return x * gate.sigmoid()
            """,
            entry="GatedScale",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Resample(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    if x.shape[-1] != 8:
                        adapt = nn.Linear(x.shape[-1], 8)
                        x = adapt(x)
                    return self.proj(x)
            """,
            calls="[(torch.randn(4, 6),)]",
            entry="Resample",
            lines=[11],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    return nn.LayerNorm(x.shape[-1])(x)
            """,
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Adapter(nn.Module):
                def __init__(self, dim):
                    super().__init__()
                    self.down = nn.Linear(dim, 2)

                def forward(self, x):
                    return self.down(x)

            class Model(nn.Module):
                def forward(self, x):
                    return Adapter(x.shape[-1])(x)
            """,
            lines=[14],
            note="a module class of this file that builds a layer with weights",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gate = nn.Parameter(torch.ones(8))
                    self.norm = nn.LayerNorm(8)

                def forward(self, x):
                    return self.norm(x) * self.gate.sigmoid()
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    x = nn.LayerNorm(x.shape[-1], elementwise_affine=False)(x)
                    x = nn.Sequential(nn.ReLU(), nn.Dropout(0.0))(x)
                    return nn.MaxPool1d(2)(x.unsqueeze(0))
            """,
            note="layers without parameters compile",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    target = torch.zeros(x.shape[0], dtype=torch.long)
                    loss = nn.CrossEntropyLoss()(x, target)
                    table = nn.Buffer(torch.ones(x.shape[-1]))
                    return x * table + loss
            """,
            note="losses and buffers compile",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        function = self.context.function
        if function is not None and function.name.value == "__init__":
            # A constructor traced because traced code builds the object (`Adapter(d)(x)`): the break
            # is reported at that construction, once (`_local_class_owns_parameters`).
            return
        name = call_name(self.context, node) or ""
        if name in _PARAMETER_CONSTRUCTORS or _owns_parameters(name, node) or self._local_class_owns_parameters(name):
            self.report(node)

    def _local_class_owns_parameters(self, name: str) -> bool:
        """`Adapter(...)` where `Adapter` is a module class of this file whose `__init__` builds weights."""
        cls = self.context.regions.module_classes.get(name)
        init = class_method(cls, "__init__") if cls is not None else None
        if init is None:
            return False
        found = False
        context = self.context

        class _Constructors(cst.CSTVisitor):
            def visit_Call(self, node: cst.Call) -> None:
                nonlocal found
                called = call_name(context, node) or ""
                found = found or called in _PARAMETER_CONSTRUCTORS or _owns_parameters(called, node)

        visit(init, _Constructors())
        return found


_PARAMETER_CONSTRUCTORS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})

# torch.nn layers that own parameters with their default arguments; the keyword, when
# set to a literal False, leaves the layer without them.
_LAYERS_WITH_WEIGHTS = {
    **dict.fromkeys(
        ("Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
         "ConvTranspose2d", "ConvTranspose3d", "Embedding", "EmbeddingBag", "PReLU",
         "MultiheadAttention", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell",
         "TransformerEncoderLayer", "TransformerDecoderLayer", "Transformer"),
        None,
    ),
    "LayerNorm": "elementwise_affine",
    "RMSNorm": "elementwise_affine",
    "GroupNorm": "affine",
    "BatchNorm1d": "affine",
    "BatchNorm2d": "affine",
    "BatchNorm3d": "affine",
}


def _owns_parameters(name: str, call: cst.Call) -> bool:
    """True for `torch.nn.Linear(...)` and other layers built with weights."""
    if not name.startswith("torch.nn."):
        return False
    short = name.rsplit(".", 1)[-1]
    if short not in _LAYERS_WITH_WEIGHTS:
        return False
    switch = _LAYERS_WITH_WEIGHTS[short]
    if switch is None:
        return True
    argument = keyword_argument(call, switch)
    return not (argument is not None and isinstance(argument.value, cst.Name) and argument.value.value == "False")


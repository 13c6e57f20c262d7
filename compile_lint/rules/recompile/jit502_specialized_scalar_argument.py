"""JIT502 specialized-scalar-argument: A per-call Python value reaching an argument
Dynamo specializes recompiles for every value."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind, annotation_kind
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.specializing import specialized_arguments
from compile_lint.rules.support.syntax import argument_for, find_param


class SpecializedScalarArgument(Rule):
    """A per-call Python value reaching an argument Dynamo specializes recompiles for every value.

    Why: most Python float/int inputs cost one recompile and then become dynamic, but
    some arguments are burned into the graph as constants: `range(n)` (the loop is
    unrolled), `F.interpolate(scale_factor=)`, `F.dropout(p=)`, the `eps` of
    `F.layer_norm`/`group_norm`/`rms_norm`/`batch_norm`/`cosine_similarity`,
    `F.pad(value=)`, `F.scaled_dot_product_attention(dropout_p=, scale=)`,
    `F.cross_entropy(label_smoothing=)`, the `beta`/`delta` of `smooth_l1_loss`/
    `huber_loss`, `torch.cdist(p=)` and `torch.nan_to_num(nan=)` (measured on torch 2.13). A forward parameter passed there recompiles for every new value, and
    after 8 values runs eagerly. (A `dtype` or `device` parameter passed to `.to()` also
    compiles one graph per value, but there are only a few, as for the inputs' own dtype
    guards, and in practice it follows the inputs: `dtype=pixel_values.dtype`. Not
    flagged; nor is a default that every call the program makes of a compiled function
    leaves alone: `generate = torch.compile(model.generate)`, `generate(x)`.)

    Instead: fix the value at construction (`self.p = p` in `__init__`, an `nn.Dropout`
    or `nn.Upsample` module), and pass an output `size=` instead of a varying
    `scale_factor`.
    """  # noqa: E501 - the rule's documentation (--explain, docs/rules.md) as written

    code = "JIT502"
    name = "specialized-scalar-argument"
    kind = "recompile"
    message = (
        "this argument is compiled in as a constant: every new value recompiles (eager after 8); "
        "fix it at construction (`self.p = p` in `__init__`) or keep it constant"
    )
    invalid = [
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            class Upsampler(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = nn.Conv2d(2, 2, 3, padding=1)

                def forward(self, x, scale: float = 2.0):
                    return self.conv(F.interpolate(x, scale_factor=scale, mode="nearest"))
            """,
            calls='[{"args": (torch.randn(1, 2, 8, 8),), "kwargs": {"scale": s}} for s in (1.5, 2.0, 2.5, 3.0)]',
            entry="Upsampler",
            lines=[11],
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            class Upsample2D(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = nn.Conv2d(2, 2, 3, padding=1)

                def _resize(self, hidden_states, factor):
                    return F.interpolate(hidden_states, None, factor, "nearest")

                def forward(self, hidden_states, scale_factor=2.0):
                    return self.conv(self._resize(hidden_states, scale_factor))
            """,
            calls='[(torch.randn(1, 2, 8, 8), s) for s in (1.5, 2.0, 2.5)]',
            entry="Upsample2D",
            note="the input reaches interpolate through a helper",
            lines=[11],
        ),
        Invalid(
            """
            import torch
            from torch.nn import functional as F

            @torch.compile(backend="eager")
            def mc_dropout(x, rate):
                return F.dropout(x, rate, training=True).mean(0)
            """,
            calls="[(torch.randn(4, 8), p) for p in (0.1, 0.2, 0.3)]",
            entry="mc_dropout",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Refiner(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x, num_steps: int = 2):
                    for _ in range(num_steps):
                        x = x + self.fc(x).tanh()
                    return x
            """,
            calls='[{"args": (torch.randn(4, 8),), "kwargs": {"num_steps": n}} for n in (1, 2, 3, 4)]',
            entry="Refiner",
            lines=[10],
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            @torch.compile(backend="eager")
            def pad_and_norm(waveform, pad_value: float, eps: float = 1e-5):
                padded = F.pad(waveform, (0, 4), value=pad_value)
                return F.group_norm(padded, 2, eps=eps)
            """,
            calls="[(torch.randn(2, 4, 16), v, e) for v, e in ((0.0, 1e-5), (0.5, 1e-6), (1.0, 1e-4))]",
            entry="pad_and_norm",
            lines=[6, 7],
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            class Attention(nn.Module):
                def forward(self, q, k, v, softmax_scale: float = 0.125):
                    return F.scaled_dot_product_attention(q, k, v, scale=softmax_scale)
            """,
            calls="[(torch.randn(1, 2, 4, 8),) * 3 + (s,) for s in (0.1, 0.125, 0.2)]",
            entry="Attention",
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            import torch.nn.functional as F
            from torch import nn

            class Decoder(nn.Module):
                def __init__(self, scale=2.0, p=0.1, eps=1e-5):
                    super().__init__()
                    self.scale, self.p, self.eps = scale, p, eps
                    self.num_layers = 2

                def forward(self, x):
                    x = F.interpolate(x, scale_factor=self.scale, mode="nearest")
                    x = F.dropout(x, p=self.p, training=self.training)
                    for _ in range(self.num_layers):
                        x = F.layer_norm(x, x.shape[-1:], eps=self.eps)
                    return x
            """,
            calls="[(torch.randn(1, 2, 8, 8),)] * 3",
            entry="Decoder",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Temperature(nn.Module):
                def forward(self, logits, temperature: float = 1.0):
                    return (logits / temperature).softmax(-1)
            """,
            calls='[{"args": (torch.randn(4, 8),), "kwargs": {"temperature": 0.7}}] * 3',
            entry="Temperature",
            note="a float used in arithmetic is not specialized (one recompile when it varies, then dynamic)",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Mixed(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x, ref):
                    h = self.fc(x.to(ref.dtype))
                    for i in range(x.shape[-1] // 4):
                        h = h + i
                    return h.to(x)
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))] * 3",
            entry="Mixed",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class SinePositionEmbedding(nn.Module):
                def forward(self, shape, device, dtype: torch.dtype, mask=None):
                    batch, _, height, width = shape
                    y = torch.arange(1, height + 1, device=device).to(dtype)
                    x = torch.arange(1, width + 1, device=device).to(dtype=dtype)
                    return (y[:, None] * x[None, :]).expand(batch, height, width)

            class Backbone(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = nn.Conv2d(3, 4, 1)
                    self.position = SinePositionEmbedding()

                def forward(self, pixels):
                    features = self.conv(pixels)
                    return features + self.position(features.shape, features.device, features.dtype)[:, None]
            """,
            calls="[(torch.randn(2, 3, 4, 4),)] * 3",
            entry="Backbone",
            note="a dtype argument that follows the inputs' dtype (DETR-style position embeddings)",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        for value, where in specialized_arguments(self, node):
            param = _root_python_param(self, value)
            if param is None:
                continue
            self.report(
                value,
                message=(
                    f"`{param.name.value}` is an input compiled in as a constant by {where}: every new "
                    "value recompiles (eager after 8); fix it at construction (`self.p = p` in `__init__`) or keep "
                    "it constant"
                ),
            )


def _root_python_param(rule: Rule, expr: cst.BaseExpression) -> Optional[cst.Param]:
    """The parameter `expr` names when it is a non-tensor input of a compiled entry point.

    Only parameters of roots (forward, @torch.compile functions) are inputs Dynamo guards
    on. A same-file helper's parameter counts when a traced caller passes such an input
    straight through (`self._upsample(x, scale)`). A parameter annotated as a Tensor, or
    `self`, is not a Python value.
    """
    function = rule.context.function
    if not isinstance(expr, cst.Name) or function is None:
        return None
    return _input_param(rule, function, expr.value, depth=0)


_MAX_HELPER_DEPTH = 4


def _input_param(rule: Rule, function: cst.FunctionDef, name: str, depth: int) -> Optional[cst.Param]:
    context = rule.context
    param = find_param(function, name)
    if param is None or context.facts.param_kind(function, name) is Kind.SELF:
        return None
    if annotation_kind(param.annotation, context.imports) in (Kind.TENSOR, Kind.MAYBE_TENSOR):
        return None
    if context.local_values(name, function):
        return None  # reassigned in the body: no longer the raw input
    if function in context.regions.roots:
        return None if _left_at_default(context, function, name) else param
    if depth >= _MAX_HELPER_DEPTH or function not in context.regions.functions:
        return None
    for caller, call in context.facts.call_sites().get(function, []):
        passed = argument_for(function, param, call)
        if passed is not None and isinstance(passed.value, cst.Name):
            found = _input_param(rule, caller, passed.value.value, depth + 1)
            if found is not None:
                return found
    return None


def _left_at_default(context, function: cst.FunctionDef, name: str) -> bool:
    """Whether every call the program makes of this compiled function leaves `name` at its default (the
    project's model saw them all: `generate = torch.compile(model.generate)`, `generate(x)`): one value."""
    reach = context.reach
    qualname = context.regions.qualnames.get(function)
    record = reach.functions.get(qualname) if reach is not None and qualname is not None else None
    return record is not None and name in getattr(record, "defaulted", ())

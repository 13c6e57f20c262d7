"""JIT404 math-on-tensor: A `math.*` function applied to a tensor (`math.exp(self.logit_scale)`) breaks the graph."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.fixes.branches.conditions import operand_evidence, unsafe_operand
from compile_lint.fixes.guards import spell
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid


class MathOnTensor(Rule):
    """A `math.*` function applied to a tensor (`math.exp(self.logit_scale)`) breaks the graph.

    Why: `math` functions need a Python float, so Dynamo must read the tensor's value
    ("Data dependent operator"); with `fullgraph=True` it is a hard error, with or
    without `capture_scalar_outputs`. `math` on sizes (`math.sqrt(x.shape[-1])`) and
    constants is fine.

    Instead: the torch twin keeps it in the graph: `torch.exp(t)`, `t.sqrt()`. The fix
    (unsafe: the result becomes a 0-d tensor, computed in the tensor's dtype instead of
    float64) rewrites one-argument calls with a torch twin, where the argument is a tensor
    in eager code too: not a `random.uniform/randint/randrange` draw (Dynamo traces it as a
    0-d tensor and fails on `math.*` of it, eager code gets a float that `torch.sqrt`
    rejects), nor an untyped parameter only taken for a tensor.
    """

    code = "JIT404"
    name = "math-on-tensor"
    kind = "break"
    gb_type = "Data dependent operator"
    gb_id = "GB0033"
    fix_applicability = "unsafe"
    message = ("math.* on a tensor reads its value and breaks the graph; use its torch twin (`torch.exp(t)` for "
               "`math.exp(t)`)")
    steps = ("torch.exp(t)", "torch.{name}(t)")
    invalid = [
        Invalid(
            """
            import math

            import torch
            from torch import nn

            class ClipHead(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

                def forward(self, image, text):
                    scale = math.exp(self.logit_scale)
                    return scale * image @ text.t()
            """,
            fixed="""
            import math

            import torch
            from torch import nn

            class ClipHead(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

                def forward(self, image, text):
                    scale = torch.exp(self.logit_scale)
                    return scale * image @ text.t()
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="ClipHead",
            lines=[12],
        ),
        Invalid(
            """
            from math import sqrt

            from torch import nn

            class RmsScale(nn.Module):
                def forward(self, x):
                    return x / sqrt(x.pow(2).mean() + 1e-6)
            """,
            fixed="""
            from math import sqrt

            from torch import nn
            import torch

            class RmsScale(nn.Module):
                def forward(self, x):
                    return x / torch.sqrt(x.pow(2).mean() + 1e-6)
            """,
            entry="RmsScale",
            lines=[7],
        ),
        Invalid(
            """
            import math

            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    if math.isfinite(x.sum()):
                        return x
                    return x.nan_to_num()
            """,
            lines=[7],
        ),
        Invalid(
            """
            import math
            import random

            from torch import nn

            class Jitter(nn.Module):
                def forward(self, x):
                    f = random.uniform(0.9, 1.1)
                    f = math.sqrt(f)
                    return x * f
            """,
            entry="Jitter",
            lines=[9],
            note=("No fix: Dynamo traces the draw as a 0-d tensor input (and fails on `math.sqrt` of it), "
                  "but eager code gets a float, which `torch.sqrt` rejects."),
        ),
        Invalid(
            """
            import math
            import random

            from torch import nn

            class Shift(nn.Module):
                def forward(self, x):
                    d = x.shape[-1] // 2
                    return x.roll(int(math.copysign(random.randint(0, abs(d)), d)), -1)
            """,
            entry="Shift",
            lines=[9],
            note="No fix: a random draw is a tensor only under Dynamo; `math.copysign` of it still fails there.",
        ),
    ]
    valid = [
        Valid(
            """
            import math

            import torch
            from torch import nn

            class Attention(nn.Module):
                def forward(self, q, k):
                    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
                    return scores.softmax(-1)
            """,
            calls="[(torch.randn(2, 4, 8), torch.randn(2, 4, 8))]",
            entry="Attention",
        ),
        Valid(
            """
            import math

            import torch
            from torch import nn

            class ClipHead(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

                def forward(self, image, text):
                    return self.logit_scale.exp() * image @ text.t()
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="ClipHead",
        ),
        Valid(
            """
            import math

            import torch
            from torch import nn

            class Flatten(nn.Module):
                def forward(self, x):
                    n = math.prod(x.shape[1:])
                    half = math.ceil(n / 2)
                    return x.reshape(x.shape[0], n)[:, :half] * math.pi
            """,
            entry="Flatten",
        ),
        Valid(
            """
            import random

            import torch
            from torch import nn

            class Jitter(nn.Module):
                def forward(self, x):
                    f = random.uniform(0.9, 1.1)
                    return x * f
            """,
            calls="[(torch.randn(4, 8),)]",
            entry="Jitter",
            note="A random draw in tensor arithmetic compiles (`f ** 0.5` of it does not: a builtin op on a tensor).",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func) or ""
        if not name.startswith("math."):
            return
        if any(self.context.kind(arg.value) is Kind.TENSOR for arg in node.args):
            function = name[len("math."):]
            message = TWIN_MESSAGE.format(name=function) if function in _MATH_TO_TORCH else None
            self.report(node, message, fix=self._torch_twin(node, function))

    def _torch_twin(self, node: cst.Call, function: str) -> Optional[FixPlan]:
        if function not in _MATH_TO_TORCH or len(node.args) != 1 or node.args[0].keyword or node.args[0].star:
            return None
        operand = node.args[0].value
        if unsafe_operand(self.context, operand):
            return None  # a random draw or an untyped parameter: eager code may pass torch.* a float
        twin, imports = spell(self.context, f"torch.{function}")
        call = node.with_changes(func=cst.parse_expression(twin))
        return FixPlan([(node, call)], f"Use {twin}(...)", "unsafe", imports, operand_evidence(self.context, operand))


TWIN_MESSAGE = "`math.{name}` on a tensor reads its value and breaks the graph; use `torch.{name}(t)`"


# Kept by hand: a meaning mapping (math.f -> torch.f), which no torch table holds; what
# breaks is the call with a tensor argument, whatever the function.
# math functions with a torch twin of the same meaning on a one-element tensor.
_MATH_TO_TORCH = frozenset(
    {"exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan", "asin",
     "acos", "atan", "sinh", "cosh", "tanh", "erf", "erfc"}
)


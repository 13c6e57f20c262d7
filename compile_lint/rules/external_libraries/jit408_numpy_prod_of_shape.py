"""JIT408 numpy-prod-of-shape: `np.prod(x.shape)` in a compiled region breaks the graph; `math.prod` does not."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.fixes.guards import spell
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid


class NumpyProdOfShape(Rule):
    """`np.prod(x.shape)` in a compiled region breaks the graph; `math.prod` does not.

    Why: Dynamo traces numpy through torch, so `np.prod` of a size tuple becomes a
    tensor computation whose result is needed as a Python int ("torch.* op returned
    non-Tensor"); it fails even with `fullgraph=True`. (Reading numbers out of arrays
    that come from tensor data, `float(x.numpy().sum())`, is the tensor-to-Python
    rules' business.)

    Instead: `math.prod(x.shape)` works on sizes directly and keeps them symbolic. The
    fix is unsafe only in type: the result is a Python int instead of a numpy integer.
    """

    code = "JIT408"
    name = "numpy-prod-of-shape"
    kind = "break"
    gb_type = "torch.* op returned non-Tensor"
    gb_id = "GB0208"
    gb_types = ("Data dependent operator",)  # the same pattern, reported differently
    fix_applicability = "unsafe"
    message = "np.prod of a shape breaks the graph; use `math.prod(x.shape)`"
    steps = ("math.prod(x.shape)",)
    invalid = [
        Invalid(
            """
            import numpy as np
            import torch
            from torch import nn

            class Flatten(nn.Module):
                def forward(self, x):
                    n = int(np.prod(x.shape[1:]))
                    return x.reshape(x.shape[0], n)
            """,
            fixed="""
            import numpy as np
            import torch
            from torch import nn
            import math

            class Flatten(nn.Module):
                def forward(self, x):
                    n = int(math.prod(x.shape[1:]))
                    return x.reshape(x.shape[0], n)
            """,
            entry="Flatten",
            lines=[7],
        ),
        Invalid(
            """
            import math

            import numpy as np
            from torch import nn

            class SpatialTokens(nn.Module):
                def forward(self, x):
                    tokens = np.prod(x.shape[2:])
                    return x.reshape(x.shape[0], x.shape[1], tokens).transpose(1, 2)
            """,
            fixed="""
            import math

            import numpy as np
            from torch import nn

            class SpatialTokens(nn.Module):
                def forward(self, x):
                    tokens = math.prod(x.shape[2:])
                    return x.reshape(x.shape[0], x.shape[1], tokens).transpose(1, 2)
            """,
            calls="[(torch.randn(2, 3, 4, 4),)]",
            entry="SpatialTokens",
            lines=[8],
        ),
    ]
    valid = [
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class PositionalScale(nn.Module):
                def forward(self, x):
                    scale = float(np.log(10000.0)) / x.shape[-1]
                    half = int(np.ceil(x.shape[0] / 2))
                    return x[:half] * scale
            """,
            entry="PositionalScale",
        ),
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class NumpyGate(nn.Module):
                def forward(self, x):
                    gate = np.tanh(x.numpy())
                    return torch.from_numpy(gate) * x
            """,
            entry="NumpyGate",
        ),
        Valid(
            """
            import math

            import torch
            from torch import nn

            class Flatten(nn.Module):
                def forward(self, x):
                    n = math.prod(x.shape[1:])
                    weights = x.sum(-1).softmax(0)
                    return x.reshape(x.shape[0], n) * weights[:, None]
            """,
            entry="Flatten",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        context = self.context
        if context.qualname(node.func) not in _SHAPE_REDUCTIONS or len(node.args) != 1:
            return
        if node.args[0].keyword is None and context.kind(node.args[0].value) is Kind.SHAPE:
            prod, imports = spell(context, "math.prod")
            call = node.with_changes(func=cst.parse_expression(prod))
            self.report(node, fix=FixPlan([(node, call)], f"Use {prod}(...)", "unsafe", imports))


_SHAPE_REDUCTIONS = frozenset({"numpy.prod", "numpy.product"})


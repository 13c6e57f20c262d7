"""JIT103 tensor-valued-ternary: A conditional expression (`a if cond else b`) on tensor data breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules._conditions import data_dependent
from compile_lint.rules._fixes import where_call
from compile_lint.rules.base import FixPlan, Invalid, Rule, Valid


class TensorValuedTernary(Rule):
    """A conditional expression (`a if cond else b`) on tensor data breaks the graph.

    Why: the ternary evaluates `bool(cond)` in Python, which needs the tensor's value
    ("Data-dependent branching").

    Instead: `torch.where(cond, a, b)`. The fix is unsafe: both sides are evaluated.
    """

    code = "JIT103"
    name = "tensor-valued-ternary"
    kind = "break"
    gb_type = "Data-dependent branching"
    gb_id = "GB0170"
    fix_applicability = "unsafe"
    message = "a ternary on a tensor value breaks the graph; use torch.where(cond, a, b)"
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class SignedScale(nn.Module):
                def forward(self, x):
                    scale = x.new_ones(()) if x.mean() > 0 else -x.new_ones(())
                    return x * scale
            """,
            fixed="""
            import torch
            from torch import nn

            class SignedScale(nn.Module):
                def forward(self, x):
                    scale = torch.where(x.mean() > 0, x.new_ones(()), -x.new_ones(()))
                    return x * scale
            """,
            entry="SignedScale",
            lines=[6],
        ),
        Invalid(
            """
            import torch as T
            from torch import nn

            class Clip(nn.Module):
                def forward(self, grad):
                    return grad / grad.norm() if grad.norm() > 1.0 else grad
            """,
            fixed="""
            import torch as T
            from torch import nn

            class Clip(nn.Module):
                def forward(self, grad):
                    return T.where(grad.norm() > 1.0, grad / grad.norm(), grad)
            """,
            entry="Clip",
            lines=[6],
        ),
        Invalid(
            """
            import torch

            def pick(x, y):
                return x if (x - y).abs().sum() < 1 else y

            compiled = torch.compile(pick, backend="eager")
            """,
            fixed="""
            import torch

            def pick(x, y):
                return torch.where((x - y).abs().sum() < 1, x, y)

            compiled = torch.compile(pick, backend="eager")
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="pick",
            lines=[4],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Head(nn.Module):
                def __init__(self, residual=True):
                    super().__init__()
                    self.residual = residual
                    self.fc = nn.Linear(8, 8)

                def forward(self, x):
                    y = self.fc(x)
                    return x + y if self.residual else y
            """,
            entry="Head",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Reshape(nn.Module):
                def forward(self, x, mask=None):
                    x = x.flatten(1) if x.dim() > 2 else x
                    mask = mask if mask is not None else torch.ones_like(x)
                    return x * mask
            """,
            entry="Reshape",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Cast(nn.Module):
                def forward(self, x):
                    dtype = torch.float32 if x.dtype == torch.float16 else x.dtype
                    return x.to(dtype) * (2 if x.shape[0] > 1 else 1)
            """,
            entry="Cast",
        ),
    ]

    def visit_IfExp(self, node: cst.IfExp) -> None:
        culprit = data_dependent(self, node.test)
        if culprit is None:
            return
        fix = None
        if culprit is node.test:
            built = where_call(self.context, node.test, node.body, node.orelse)
            if built is not None:
                call, imports = built
                call = call.with_changes(lpar=node.lpar, rpar=node.rpar)
                fix = FixPlan([(node, call)], "Use torch.where(cond, a, b)", "unsafe", imports)
        self.report(node.test, fix=fix, path_node=culprit)


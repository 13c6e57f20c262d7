"""JIT103 tensor-valued-ternary: A conditional expression (`a if cond else b`) on tensor data breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.fixes.branches.blocks import with_reason
from compile_lint.fixes.branches.conditions import data_dependent
from compile_lint.fixes.branches.dispatch import linearise_ifexp
from compile_lint.rules.base import Invalid, Rule, Valid


class TensorValuedTernary(Rule):
    """A conditional expression (`a if cond else b`) on tensor data breaks the graph.

    Why: the ternary evaluates `bool(cond)` in Python, which needs the tensor's value
    ("Data-dependent branching").

    Instead: `torch.where(cond, a, b)`. The fix (unsafe: both sides are evaluated) writes
    that, keeping Python tests in front of the tensor test as a Python ternary
    (`a if flag and t.any() else b` -> `torch.where(t.any(), a, b) if flag else b`) and
    values read into Python as tensors (`t.item() > 0` -> `t > 0`). It writes
    `torch.cond(...)` instead where `tensor-branch-fix = "cond"` asks for it, or where
    computing the untaken side may fail (a division by the guarded value puts NaN into
    gradients; linalg may raise), and where the sides differ in shape but torch.cond takes
    them: one rank and dtype, under `torch.no_grad()` / `torch.inference_mode()` (torch 2.13
    cannot differentiate such a cond), the result not broadcast against another tensor (its
    size is known only at run time). No fix, and the message says why, where the sides
    differ in shape otherwise, or in dtype, where neither side is certainly a tensor
    (torch.where would turn Python numbers into a tensor), or where a side has a side effect.
    """

    code = "JIT103"
    name = "tensor-valued-ternary"
    kind = "break"
    gb_type = "Data-dependent branching"
    gb_id = "GB0170"
    fix_applicability = "unsafe"
    withheld_fix_steps = True
    message = "a ternary on a tensor value breaks the graph; use `torch.where(cond, a, b)`"
    steps = ("torch.where(cond, a, b)",)
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
                    return T.cond(grad.norm() > 1.0, lambda grad: (grad / grad.norm()).contiguous(), lambda grad: grad.clone(memory_format=T.contiguous_format), (grad,))
            """,  # noqa: E501 - example code, linted and compared as written
            entry="Clip",
            lines=[6],
        ),
        Invalid(
            """
            import torch

            def pick(x: torch.Tensor, y: torch.Tensor):
                return x if (x - y).abs().sum() < 1 else y

            compiled = torch.compile(pick, backend="eager")
            """,
            fixed="""
            import torch

            def pick(x: torch.Tensor, y: torch.Tensor):
                return torch.where((x - y).abs().sum() < 1, x, y)

            compiled = torch.compile(pick, backend="eager")
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="pick",
            lines=[4],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ResidualGate(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.use_gate = True

                def forward(self, x: torch.Tensor, h: torch.Tensor):
                    return (x + h if self.use_gate and h.mean() > 0 else x - h) * 2
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8) + 1), (torch.randn(4, 8), torch.randn(4, 8) - 1)]",
            fixed="""
            import torch
            from torch import nn

            class ResidualGate(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.use_gate = True

                def forward(self, x: torch.Tensor, h: torch.Tensor):
                    return (torch.where(h.mean() > 0, x + h, x - h) if self.use_gate else x - h) * 2
            """,
            entry="ResidualGate",
            lines=[10],
            note="A Python test in front of the tensor test stays a Python ternary around torch.where.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class MaybePool(nn.Module):
                def forward(self, x):
                    y = x.sum(0) if x.mean() > 0 else x
                    return y * 2
            """,
            entry="MaybePool",
            lines=[6],
            note=("No fix: the arms differ in shape, which torch.where would broadcast, and torch.cond "
                  "cannot differentiate on torch 2.13 (forward may run with gradients)."),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class PeakPool(nn.Module):
                @torch.no_grad()
                def forward(self, x):
                    y = x.amax(0, keepdim=True) if x.mean() > 0 else x
                    return y.softmax(-1)
            """,
            fixed="""
            import torch
            from torch import nn

            class PeakPool(nn.Module):
                @torch.no_grad()
                def forward(self, x):
                    y = torch.cond(x.mean() > 0, lambda x: x.amax(0, keepdim=True).contiguous(), lambda x: x.clone(memory_format=torch.contiguous_format), (x,))
                    return y.softmax(-1)
            """,  # noqa: E501 - example code, linted and compared as written
            calls="[(torch.randn(4, 8) + 1,), (torch.randn(4, 8) - 1,)]",
            entry="PeakPool",
            lines=[7],
            note=("Arms of one rank and dtype that differ in shape get torch.cond where no gradient flows "
                  "(`torch.no_grad()`, `torch.inference_mode()`) and the result is not broadcast against "
                  "another tensor: its size is known only at run time."),
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
        culprit = data_dependent(self.context, node.test)
        if culprit is None:
            return
        outcome = linearise_ifexp(self.context, node)
        self.report(node.test, message=with_reason(self.message, outcome), fix=outcome.fix, path_node=culprit)

"""JIT202 tensor-to-python-scalar: `int(t)`, `float(t)`, `bool(t)` or `complex(t)` on a tensor breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.fixes.branches.blocks import BranchFix, with_reason
from compile_lint.fixes.branches.conditions import unsafe_operand
from compile_lint.fixes.branches.dispatch import ElifTracker, linearise_data_read
from compile_lint.fixes.capture_scalars import report_captured_size, report_kept_or_captured
from compile_lint.fixes.keep_tensor import SCALAR_CONFIG_NOTE, keep_tensor_fix
from compile_lint.fixes.number_uses import unkept_number
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.tensor_data import (
    builtin_conversion,
)


class TensorToPythonScalar(ElifTracker, Rule):
    """`int(t)`, `float(t)`, `bool(t)` or `complex(t)` on a tensor breaks the graph.

    Why: the conversion calls `t.item()`, so the default `torch.compile` breaks the graph
    there ("Unsupported Tensor.item() call with capture_scalar_outputs=False").
    `fullgraph=True` passes while the number is only used in arithmetic, but fails as
    soon as Python decides something with it (`if bool(t):`, `range(int(t))`). The same
    holds for a numpy array in forward: Dynamo traces arrays as tensors.

    Instead: keep tensors (`t.detach()`, `t.float()`, `t.long()`), branch with
    `torch.where`. `capture_scalar_outputs = True` removes the break for arithmetic
    uses. The fix (unsafe) has two shapes:
    - `float(t)` only feeding tensor arithmetic -> `t.detach().float()` (a float64 `t` is
      rounded to float32; otherwise measured identical in dtype and value).
    - a conversion that decides a test (`if bool(t):`, `if float(t) > c:`,
      `if int(t.sum()) == 0:`): the test stays a tensor (`t`, `t > c`,
      `t.sum().long() == 0`, `.long()` truncating as `int()` does) and the whole `if`
      gets the tensor-valued-if (JIT101) rewrite.
    - `int(t)` only used as a slice bound, the one index of a tensor or a size (the sizes
      JIT201 lists): the read stays, and `torch._dynamo.config.capture_scalar_outputs = True`
      goes right before the file's `torch.compile` call.
    No fix, and the message says why, for other sizes and indices, `int()`/`bool()` values
    kept in Python, and tests whose branches have no rewrite (see JIT101); the step it
    gives fits the use of the number, as JIT201's does.
    """

    code = "JIT202"
    name = "tensor-to-python-scalar"
    kind = "break"
    gb_type = "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    gb_id = "GB0124"
    gb_types = ("Data dependent operator",)  # the same pattern, reported differently
    fix_applicability = "unsafe"
    withheld_fix_steps = True
    config_note = SCALAR_CONFIG_NOTE
    message = (
        "`int()`/`float()`/`bool()` on a tensor reads its data into Python and breaks the graph; "
        "keep a tensor (`t.detach()`, `t.float()`) and use torch ops"
    )
    steps = ("t.detach()", "t.float()", "torch._dynamo.config.capture_scalar_outputs = True")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class PadRows(nn.Module):
                def forward(self, x, lengths):
                    extra = int(lengths.max())
                    return torch.cat([x, x.new_zeros(extra, x.shape[1])])

            model = torch.compile(PadRows())
            """,
            calls="[(torch.randn(4, 6), torch.tensor([2, 1])), (torch.randn(4, 6), torch.tensor([0, 3]))]",
            fixed="""
            import torch
            from torch import nn

            class PadRows(nn.Module):
                def forward(self, x, lengths):
                    extra = int(lengths.max())
                    return torch.cat([x, x.new_zeros(extra, x.shape[1])])

            torch._dynamo.config.capture_scalar_outputs = True
            model = torch.compile(PadRows())
            """,
            entry="PadRows",
            lines=[6],
            note="Only a size: captured, set before the compile call.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LayerScale(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gamma = nn.Parameter(torch.full((), 0.1))

                def forward(self, x):
                    gamma = float(self.gamma)
                    return x * gamma + x
            """,
            fixed="""
            import torch
            from torch import nn

            class LayerScale(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gamma = nn.Parameter(torch.full((), 0.1))

                def forward(self, x):
                    gamma = self.gamma.detach().float()
                    return x * gamma + x
            """,
            entry="LayerScale",
            lines=[10],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class MaskedMean(nn.Module):
                def forward(self, x, mask):
                    total = x.masked_fill(~mask, 0).sum()
                    return total / float(mask.sum() + 1)
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8) > 0)]",
            fixed="""
            import torch
            from torch import nn

            class MaskedMean(nn.Module):
                def forward(self, x, mask):
                    total = x.masked_fill(~mask, 0).sum()
                    return total / (mask.sum() + 1).detach().float()
            """,
            entry="MaskedMean",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class EarlyExit(nn.Module):
                def forward(self, x):
                    done = bool((x.abs() < 1e-3).all())
                    return x * 2 if done else x + 1
            """,
            entry="EarlyExit",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class RepeatSteps(nn.Module):
                def forward(self, x):
                    steps = int(x.abs().mean() > 0.5) + 1
                    for _ in range(steps):
                        x = torch.tanh(x)
                    return x
            """,
            entry="RepeatSteps",
            lines=[6],
        ),
        Invalid(
            """
            import numpy as np
            import torch
            from torch import nn

            class NumpyScale(nn.Module):
                def forward(self, x):
                    peak = float(np.abs(x.numpy()).max())
                    return x / peak
            """,
            entry="NumpyScale",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Sparsify(nn.Module):
                def forward(self, x):
                    if bool((x > -3).all()):
                        return x.relu()
                    return x
            """,
            calls="[(torch.randn(4, 8),), (torch.randn(4, 8) * 10,)]",
            fixed="""
            import torch
            from torch import nn

            class Sparsify(nn.Module):
                def forward(self, x):
                    return torch.where((x > -3).all(), x.relu(), x)
            """,
            entry="Sparsify",
            lines=[6],
            note="`bool(t)` in a test: the test stays a tensor and the guarded return becomes torch.where.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class MaskedScale(nn.Module):
                def forward(self, x: torch.Tensor, mask: torch.Tensor):
                    if int(mask.sum()) == 0:
                        return torch.zeros_like(x)
                    scaled = x * mask
                    return scaled * 2
            """,
            calls="[(torch.randn(4, 8), torch.zeros(4, 8)), (torch.randn(4, 8), torch.ones(4, 8))]",
            fixed="""
            import torch
            from torch import nn

            class MaskedScale(nn.Module):
                def forward(self, x: torch.Tensor, mask: torch.Tensor):
                    scaled = x * mask
                    return torch.where(mask.sum().long() == 0, torch.zeros_like(x), scaled * 2)
            """,
            entry="MaskedScale",
            lines=[6],
            note="`int(t)` in a test is kept a tensor with `.long()`, which truncates as int() does.",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Warn(nn.Module):
                def forward(self, x):
                    if float(x.abs().amax()) > 3.0:
                        print("large activations")
                    return x * 2
            """,
            entry="Warn",
            lines=[6],
            note="No fix: the branch prints.",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Attention(nn.Module):
                def forward(self, q, k):
                    scale = float(q.size(-1)) ** -0.5
                    heads = int(q.shape[1])
                    return (q @ k.transpose(-1, -2) * scale).softmax(-1) * heads
            """,
            calls="[(torch.randn(2, 4, 8), torch.randn(2, 4, 8))]",
            entry="Attention",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Dropout(nn.Module):
                def __init__(self, p=0.1, inplace=False):
                    super().__init__()
                    self.p = float(p)
                    self.inplace = bool(inplace)

                def forward(self, x):
                    keep = int(self.p * 10)
                    return x * (1 - self.p) + keep
            """,
            entry="Dropout",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class LayerScale(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gamma = nn.Parameter(torch.full((), 0.1))

                def forward(self, x):
                    return x * self.gamma.float() + x.to(torch.float32)
            """,
            entry="LayerScale",
        ),
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class NumpyClip(nn.Module):
                def forward(self, x):
                    return torch.from_numpy(np.clip(x.numpy(), -1.0, 1.0)) * float(np.pi)
            """,
            entry="NumpyClip",
        ),
        Valid(
            """
            import sys

            import numpy as np
            import torch
            from torch import nn

            class Attention(nn.Module):
                def forward(self, x):
                    scale = float(np.sqrt(x.shape[-1]))
                    seed = int(torch.seed() % sys.maxsize)
                    return (x @ x.transpose(-1, -2) / scale).softmax(-1) * (seed % 2 + 1)
            """,
            entry="Attention",
            note="numpy on a size and torch.seed() give Python numbers",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = builtin_conversion(self, node, ("int", "float", "bool", "complex"))
        if name is None:
            return
        message = self.message.replace("`int()`/`float()`/`bool()`", f"`{name}()`", 1)
        value = node.args[0].value
        outcome = (linearise_data_read(self.context, node, self.is_elif)
                   if self.context.kind(value) is Kind.TENSOR else None)
        if outcome is not None:
            self.report(node, message=with_reason(message, outcome), fix=outcome.fix)
            return
        if name == "int" and self.context.kind(value).tensorish and report_captured_size(
                self.context, self.report, node, message):
            return
        fix = None
        if name == "float" and self.context.kind(value) is Kind.TENSOR:
            fix = keep_tensor_fix(self.context, node, _chain(value, "detach", "float"), value)
        unkept = unsafe_operand(self.context, value) if name == "float" else \
            f"only `float()` of a tensor is kept a tensor, not `{name}()`"
        reason = unkept_number(self.context, node, unkept)
        if self.context.kind(value).tensorish:
            report_kept_or_captured(self.context, self.report, node, message, BranchFix(fix, reason))
            return
        self.report(node, message=with_reason(message, BranchFix(fix, reason)), fix=fix)


def _chain(value: cst.BaseExpression, *methods: str) -> cst.BaseExpression:
    """`value.m1().m2()`, parenthesising `value` when the call would bind tighter."""
    if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not value.lpar:
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    for method in methods:
        value = cst.Call(func=cst.Attribute(value=value, attr=cst.Name(method)))
    return value


"""JIT211 tensor-slice-bound: A tensor used as a slice bound, or as the index of a Python list, is read into Python."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.fixes.captured_sizes import captured_size
from compile_lint.fixes.keep_tensor import SCALAR_CONFIG_NOTE
from compile_lint.rules.base import Invalid, Rule, Valid


class TensorSliceBound(Rule):
    """A tensor used as a slice bound, or as the index of a Python list, is read into Python.

    Why: a slice bound (`x[:n]`, `x[:, :k]` with `k = sizes[0]` of a tensor `sizes`)
    and the index of a list or tuple must be Python ints, so Dynamo calls `.item()` on
    the tensor behind the scenes: the default `torch.compile` breaks the graph there
    ("Unsupported Tensor.item() call with capture_scalar_outputs=False"), and the sizes
    after it depend on data. `fullgraph=True` passes (an unbacked value), as does the
    default compile with `capture_scalar_outputs = True` (measured on torch 2.13).
    Indexing a tensor with a 0-d tensor (`x[i]`) is JIT204's.

    Instead: set `torch._dynamo.config.capture_scalar_outputs = True` for a slice bound of
    a tensor (measured clean on the examples); take bounds from shapes or config
    (`x.shape[0] // 2`, guarded, not data);
    keep the shape and mask the rest (`x * (torch.arange(x.shape[0]) < n)`); stack a list
    of tensors and index the stack (`torch.stack(items)[i]`).
    """

    code = "JIT211"
    name = "tensor-slice-bound"
    kind = "break"
    gb_type = "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    gb_id = "GB0124"
    config_note = SCALAR_CONFIG_NOTE
    message = (
        "a tensor used as a slice bound is read into Python (an implicit `.item()`) and breaks the graph; "
        "set `torch._dynamo.config.capture_scalar_outputs = True`, which compiles it, or take the bound from a "
        "shape (`x.shape[0]`)"
    )
    steps = ("torch._dynamo.config.capture_scalar_outputs = True", "x.shape[0]",
             "x * (torch.arange(x.shape[0]) < n)", "torch.stack(items)[i.view(1)][0]")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Truncate(nn.Module):
                def forward(self, x, lengths):
                    longest = lengths.max()
                    return x[:, :longest] * 2
            """,
            calls="[(torch.randn(2, 6, 4), torch.tensor([3, 5]))]",
            entry="Truncate",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Split(nn.Module):
                def forward(self, x, sizes):
                    k = sizes[0]
                    return x[:k].sum(0)
            """,
            calls="[(torch.randn(6, 4), torch.tensor([2, 3]))]",
            entry="Split",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Pick(nn.Module):
                def forward(self, x, scores):
                    heads = [x, x * 2, x * 3]
                    best = scores.argmax()
                    return heads[best] + 1
            """,
            calls="[(torch.randn(4, 8), torch.randn(3))]",
            entry="Pick",
            lines=[8],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Truncate(nn.Module):
                def forward(self, x, lengths):
                    half = x.shape[1] // 2
                    keep = torch.arange(x.shape[1]) < lengths.max()
                    return x[:, :half] * 2, x * keep.unsqueeze(-1)
            """,
            calls="[(torch.randn(2, 6, 4), torch.tensor([3, 5]))]",
            entry="Truncate",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Pick(nn.Module):
                def forward(self, x, scores):
                    heads = torch.stack([x, x * 2, x * 3])
                    best = scores.argmax()
                    return heads[best.view(1)].squeeze(0) + 1
            """,
            calls="[(torch.randn(4, 8), torch.randn(3))]",
            entry="Pick",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Rows(nn.Module):
                def forward(self, x, index):
                    parts = [x, x + 1]
                    return parts[0][index] + parts[-1][1:3].sum()
            """,
            calls="[(torch.randn(4, 8), torch.tensor([0, 2]))]",
            entry="Rows",
            note="a tensor index of a tensor (advanced indexing) and Python ints",
        ),
    ]

    def visit_Subscript(self, node: cst.Subscript) -> None:
        base = self.context.kind(node.value)
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Slice):
                if not (base.tensorish or base is Kind.LIST):
                    continue
                for bound in (index.lower, index.upper, index.step):
                    if bound is not None and self.context.kind(bound) is Kind.TENSOR:
                        captured = captured_size(self.context, bound, implicit=True)
                        self.report(node, self.message if captured else UNCAPTURED_BOUND)
                        return
            elif base is Kind.LIST and isinstance(index, cst.Index) and self.context.kind(index.value) is Kind.TENSOR:
                self.report(node, LIST_INDEX)
                return


# A bound `capture_scalar_outputs` was not measured to compile: a step, a bound of a list's slice.
UNCAPTURED_BOUND = (
    "a tensor used as a slice bound is read into Python (an implicit `.item()`) and breaks the graph; take the "
    "bound from a shape (`x.shape[0]`), or keep the full size and mask the rest: `x * (torch.arange(x.shape[0]) < n)`"
)
LIST_INDEX = (
    "a tensor used as the index of a Python list is read into Python (an implicit `.item()`) and breaks the graph; "
    "stack the list and index the stack with a 1-d tensor: `torch.stack(items)[i.view(1)][0]`"
)

"""JIT307 tensor-list-constructor: `torch.as_tensor(list_of_tensors)` (or
`torch.Tensor(...)`) fails to compile at all."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.fixes.guards import spell
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.syntax import positional_arguments


class TensorListConstructor(Rule):
    """`torch.as_tensor(list_of_tensors)` (or `torch.Tensor(...)`) fails to compile at all.

    Why: on torch 2.13 Dynamo runs these constructors on fake tensors, which have no
    data to read, and raises "RuntimeError when making fake tensor call": the compile
    fails even without `fullgraph=True`. `torch.tensor(list)` and `torch.stack(list)`
    trace. The usual source is an accumulation loop (`vals.append(t.sum())`) followed
    by a numpy-style conversion.

    Instead: `torch.tensor(vals)`, which gives exactly what `torch.as_tensor(vals)`
    and `torch.asarray(vals)` give on a list (same dtype, shape and device, detached);
    the fix does this and is safe. Use `torch.stack(vals)` when gradients should flow.
    The legacy typed constructors (`torch.Tensor`, `torch.LongTensor`, ...) are
    flagged without a fix: write `torch.tensor(vals, dtype=...)`.
    """

    code = "JIT307"
    name = "tensor-list-constructor"
    kind = "break"
    fix_applicability = "safe"
    message = (
        "{call}() on a list of tensors fails to compile (fake tensors have no data to read); "
        "use `torch.tensor(values)`, or `torch.stack(values)` to keep gradients"
    )
    steps = ("torch.tensor(values)", "torch.stack(values)")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class PerHeadEntropy(nn.Module):
                def forward(self, attn):
                    entropies = []
                    for head in attn.unbind(1):
                        entropies.append(-(head * head.clamp_min(1e-9).log()).sum())
                    return torch.as_tensor(entropies) / attn.shape[0]
            """,
            fixed="""
            import torch
            from torch import nn

            class PerHeadEntropy(nn.Module):
                def forward(self, attn):
                    entropies = []
                    for head in attn.unbind(1):
                        entropies.append(-(head * head.clamp_min(1e-9).log()).sum())
                    return torch.tensor(entropies) / attn.shape[0]
            """,
            calls="[(torch.rand(2, 4, 8, 8).softmax(-1),)]",
            entry="PerHeadEntropy",
            lines=[9],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ClassCounts(nn.Module):
                def forward(self, labels):
                    counts = [(labels == c).sum() for c in range(3)]
                    return torch.asarray(counts, dtype=torch.float32) / labels.numel()
            """,
            fixed="""
            import torch
            from torch import nn

            class ClassCounts(nn.Module):
                def forward(self, labels):
                    counts = [(labels == c).sum() for c in range(3)]
                    return torch.tensor(counts, dtype=torch.float32) / labels.numel()
            """,
            calls="[(torch.randint(0, 3, (16,)),)]",
            entry="ClassCounts",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LegacyNorms(nn.Module):
                def forward(self, x):
                    norms = [row.norm() for row in x]
                    return x / torch.Tensor(norms)[:, None]
            """,
            entry="LegacyNorms",
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class StackedNorms(nn.Module):
                def forward(self, x):
                    norms = [row.norm() for row in x]
                    return x / torch.stack(norms)[:, None]
            """,
            entry="StackedNorms",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Scales(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.scales = [0.5, 1.0, 2.0, 4.0]

                def forward(self, x):
                    sizes = [x.shape[0], x.shape[1]]
                    scale = torch.as_tensor(self.scales, dtype=x.dtype)
                    return x * torch.as_tensor(sizes).sum() * scale.repeat(2)
            """,
            entry="Scales",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class CopyIn(nn.Module):
                def forward(self, x):
                    y = torch.as_tensor(x, dtype=torch.float32)
                    return torch.tensor([row.sum() for row in y]) + torch.FloatTensor([1.0, 2.0, 3.0, 4.0])
            """,
            entry="CopyIn",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.context.qualname(node.func) or ""
        if qualified not in _COPYING_CONSTRUCTORS and qualified not in _LEGACY_CONSTRUCTORS:
            return
        positional = positional_arguments(node)
        function = self.context.function
        if len(positional) != 1 or function is None or self.context.kind(positional[0]) is not Kind.LIST:
            return  # a tensor argument is copied, not read element by element
        if self.context.facts.element_kind(positional[0], function) is not Kind.TENSOR:
            return
        fix = None
        keywords = {arg.keyword.value for arg in node.args if arg.keyword is not None}
        if qualified in _COPYING_CONSTRUCTORS and keywords <= {"dtype", "device"}:
            name, imports = spell(self.context, "torch.tensor")
            fix = FixPlan([(node.func, cst.parse_expression(name))],
                          "Use torch.tensor(list): the same result, and it compiles", "safe", imports)
        self.report(node, self.message.format(call=spell(self.context, qualified)[0]), fix=fix)


# Constructors that read a list element by element: on tensors they fail under Dynamo.
_COPYING_CONSTRUCTORS = frozenset({"torch.as_tensor", "torch.asarray"})


_LEGACY_CONSTRUCTORS = frozenset(
    {"torch.Tensor", "torch.LongTensor", "torch.IntTensor", "torch.DoubleTensor", "torch.BoolTensor",
     "torch.HalfTensor"}
)


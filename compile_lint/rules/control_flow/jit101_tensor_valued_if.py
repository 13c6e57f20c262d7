"""JIT101 tensor-valued-if: `if`/`elif` on tensor data (`x.sum() > 0`, `mask.any()`) breaks the graph."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.facts import Kind
from compile_lint.rules._conditions import data_dependent
from compile_lint.rules._fixes import where_call
from compile_lint.rules.base import FixPlan, Invalid, Rule, Valid


class TensorValuedIf(Rule):
    """`if`/`elif` on tensor data (`x.sum() > 0`, `mask.any()`) breaks the graph.

    Why: Dynamo cannot know which branch a tensor's value picks without running it,
    so it stops the graph, runs the condition eagerly and resumes in a new graph
    ("Data-dependent branching"); with `fullgraph=True` compilation fails.

    Instead: choose between tensors with `torch.where(cond, a, b)`, or use
    `torch.cond(pred, true_fn, false_fn, operands)` when the branches do different work.
    The fix (unsafe: both branches are evaluated) rewrites an `if`/`else` whose branches
    assign the same name or both return.
    """

    code = "JIT101"
    name = "tensor-valued-if"
    kind = "break"
    gb_type = "Data-dependent branching"
    gb_id = "GB0170"
    fix_applicability = "unsafe"
    message = (
        "`if` on a tensor value breaks the graph (data-dependent branching); "
        "use torch.where(cond, a, b) or torch.cond"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class GatedResidual(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    h = self.proj(x)
                    if h.mean() > 0:
                        out = x + h
                    else:
                        out = x - h
                    return out
            """,
            fixed="""
            import torch
            from torch import nn

            class GatedResidual(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    h = self.proj(x)
                    out = torch.where(h.mean() > 0, x + h, x - h)
                    return out
            """,
            entry="GatedResidual",
            lines=[11],
        ),
        Invalid(
            """
            import torch
            import torch.nn as nn

            class SafeSoftmax(nn.Module):
                def forward(self, scores):
                    if torch.isnan(scores).any():
                        return torch.zeros_like(scores)
                    else:
                        return scores.softmax(-1)
            """,
            fixed="""
            import torch
            import torch.nn as nn

            class SafeSoftmax(nn.Module):
                def forward(self, scores):
                    return torch.where(torch.isnan(scores).any(), torch.zeros_like(scores), scores.softmax(-1))
            """,
            entry="SafeSoftmax",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class ClampedNorm(nn.Module):
                def _too_large(self, x):
                    return x.abs().max() > 10

                def forward(self, x, mask=None):
                    if mask is not None and self._too_large(x):
                        x = x / 10
                    return x
            """,
            calls="[(torch.randn(4, 8), torch.ones(4, 8))]",
            entry="ClampedNorm",
            lines=[9],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LayerDrop(nn.Module):
                def __init__(self, p=0.5):
                    super().__init__()
                    self.p = p
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    skip = False
                    if self.training:
                        skip = torch.rand([]) < self.p
                    if not skip:
                        x = self.proj(x)
                        x = torch.relu(x)
                    return x
            """,
            entry="LayerDrop",
            lines=[14],
            note="`skip` is a tensor once `self.training` assigned it, so the finding says "
                 "\"only when self.training\": a compiled eval() model never breaks here.",
        ),
        Invalid(
            """
            import random

            import torch
            from torch import nn

            class RandomDepth(nn.Module):
                def __init__(self, layerdrop=0.5):
                    super().__init__()
                    self.layerdrop = layerdrop
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    if random.uniform(0, 1) < self.layerdrop:
                        return x
                    return self.proj(x)
            """,
            entry="RandomDepth",
            lines=[13],
            note="Dynamo traces `random.uniform` as a 0-d tensor input, so comparing it branches on data.",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Attention(nn.Module):
                def forward(self, q, k, mask=None):
                    scores = q @ k.transpose(-1, -2)
                    if mask is not None:
                        scores = scores.masked_fill(mask, float("-inf"))
                    if q.dim() == 3 and q.shape[-1] > 4:
                        scores = scores / q.shape[-1] ** 0.5
                    return scores.softmax(-1)
            """,
            calls="[(torch.randn(2, 4, 8), torch.randn(2, 4, 8))]",
            entry="Attention",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Block(nn.Module):
                def __init__(self, use_bias=True):
                    super().__init__()
                    self.use_bias = use_bias
                    self.drop = nn.Dropout(0.1)
                    self.fc = nn.Linear(8, 8, bias=use_bias)

                def forward(self, x):
                    if self.training:
                        x = self.drop(x)
                    if self.use_bias and x.dtype == torch.float32:
                        x = self.fc(x)
                    if isinstance(x, torch.Tensor) and x.is_floating_point():
                        x = x * 2
                    return x
            """,
            entry="Block",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Pooler(nn.Module):
                def forward(self, hidden, lengths=None):
                    if hidden.size(0) == 0 or hidden.numel() == 0:
                        return hidden
                    if len(hidden.shape) == 2:
                        return hidden
                    return torch.where(hidden.sum(-1, keepdim=True) > 0, hidden, -hidden)
            """,
            entry="Pooler",
        ),
        Valid(
            """
            import random

            import torch
            from torch import nn

            class LayerDrop(nn.Module):
                def __init__(self, p=0.5):
                    super().__init__()
                    self.p = p
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    skip = False
                    if self.training:
                        skip = self.p > 0.9
                    if not skip:
                        x = self.proj(x)
                        x = torch.relu(x)
                    level = x.abs().mean()
                    level = 4
                    if level > 3:
                        x = x * random.uniform(0.9, 1.1)
                    return x
            """,
            entry="LayerDrop",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._elifs: set[cst.If] = set()

    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):
            self._elifs.add(node.orelse)
        culprit = data_dependent(self, node.test)
        if culprit is not None:
            self.report(node.test, fix=self._where_fix(node), path_node=culprit)

    def _where_fix(self, node: cst.If) -> Optional[FixPlan]:
        if node in self._elifs or data_dependent(self, node.test) is not node.test:
            return None  # `a and b` conditions need more than a rewrite
        body = _single_statement(node.body)
        orelse = node.orelse
        if isinstance(orelse, cst.Else):
            other = _single_statement(orelse.body)
        elif orelse is None:
            other = None
        else:
            return None  # elif chains are left for a person
        if isinstance(body, cst.Return) and isinstance(other, cst.Return) and body.value and other.value:
            built = where_call(self.context, node.test, body.value, other.value)
            if built is None:
                return None
            call, imports = built
            new = cst.SimpleStatementLine(body=[cst.Return(value=call)], leading_lines=node.leading_lines)
            return FixPlan([(node, new)], "Return torch.where(cond, a, b)", "unsafe", imports)
        assigned, alternative = _assigned_name(body), _assigned_name(other)
        if assigned is None:
            return None
        name, value = assigned
        if orelse is None:
            fallback: cst.BaseExpression = cst.Name(name)
            if self.context.kind(fallback) is not Kind.TENSOR:
                return None
        elif alternative is not None and alternative[0] == name:
            fallback = alternative[1]
        else:
            return None
        built = where_call(self.context, node.test, value, fallback)
        if built is None:
            return None
        call, imports = built
        new = cst.SimpleStatementLine(
            body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=call)],
            leading_lines=node.leading_lines,
        )
        return FixPlan([(node, new)], f"Assign `{name}` with torch.where(cond, a, b)", "unsafe", imports)


def _single_statement(block: cst.BaseSuite) -> Optional[cst.BaseSmallStatement]:
    if isinstance(block, cst.IndentedBlock):
        if len(block.body) != 1:
            return None
        line = block.body[0]
    else:
        line = block  # a SimpleStatementSuite
    if not isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) or len(line.body) != 1:
        return None
    return line.body[0]


def _assigned_name(statement: Optional[cst.BaseSmallStatement]) -> Optional[tuple[str, cst.BaseExpression]]:
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        target = statement.targets[0].target
        if isinstance(target, cst.Name):
            return target.value, statement.value
    return None


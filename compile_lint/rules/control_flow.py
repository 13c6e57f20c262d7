"""Tensor-valued control flow: Python branching on tensor data breaks the graph."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.autofix.builders import where_call
from compile_lint.linter.facts import Kind, annotation_kind
from compile_lint.rules.base import FixPlan, Invalid, Rule, Valid


def data_dependent(rule: Rule, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The part of a condition whose truth depends on tensor data, or None.

    `and`/`or`/`not` are looked through: `if mask is not None and mask.any():` is flagged
    for `mask.any()`. A bare parameter (`if flag:`) is only flagged when annotated as a
    Tensor, since untyped parameters are as often flags as tensors.
    """
    context = rule.context
    if isinstance(expr, cst.BooleanOperation):
        return data_dependent(rule, expr.left) or data_dependent(rule, expr.right)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return data_dependent(rule, expr.expression)
    if isinstance(expr, cst.Name) and context.function is not None:
        param = context.facts.param_kind(context.function, expr.value)
        if param is not None and not _annotated_tensor(rule, expr.value):
            assigned = context.facts._assigned(context.function).get(expr.value)
            if not assigned:
                return None
    return expr if context.kind(expr) is Kind.TENSOR else None


def _annotated_tensor(rule: Rule, name: str) -> bool:
    function = rule.context.function
    if function is None:
        return False
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return annotation_kind(param.annotation, rule.context.imports) is Kind.TENSOR
    return False


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
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._elifs: set[cst.If] = set()

    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):
            self._elifs.add(node.orelse)
        culprit = data_dependent(self, node.test)
        if culprit is not None:
            self.report(node.test, fix=self._where_fix(node))

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


class TensorValuedWhile(Rule):
    """A `while` loop whose condition reads tensor data breaks the graph on every check.

    Why: each test of the condition needs the tensor's value in Python, so Dynamo
    breaks the graph there ("Data-dependent branching"); with `fullgraph=True`
    compilation fails.

    Instead: run a fixed number of iterations and mask finished elements with
    `torch.where`, or use `torch._higher_order_ops.while_loop` for true loops.
    """

    code = "JIT102"
    name = "tensor-valued-while"
    kind = "break"
    gb_type = "Data-dependent branching"
    gb_id = "GB0170"
    message = (
        "`while` on a tensor value breaks the graph at every test; "
        "loop a fixed number of times and mask with torch.where"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Renormalize(nn.Module):
                def forward(self, x):
                    while x.norm() > 1.0:
                        x = x * 0.5
                    return x
            """,
            calls="[(torch.randn(4, 8) * 10,)]",
            entry="Renormalize",
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Sampler(nn.Module):
                def forward(self, logits):
                    steps = 0
                    while (logits > 0).any() and steps < 3:
                        logits = logits - 1
                        steps += 1
                    return logits
            """,
            entry="Sampler",
        ),
        Invalid(
            """
            import torch

            @torch.compile(backend="eager")
            def refine(x):
                while x.max() > 1:
                    x = x / 2
                return x
            """,
            calls="[(torch.randn(4, 8) * 10,)]",
            entry="refine",
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Unrolled(nn.Module):
                def __init__(self, steps=3):
                    super().__init__()
                    self.steps = steps

                def forward(self, x):
                    i = 0
                    while i < self.steps:
                        x = torch.where(x.norm() > 1.0, x * 0.5, x)
                        i += 1
                    return x
            """,
            entry="Unrolled",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Halver(nn.Module):
                def forward(self, x):
                    size = x.shape[-1]
                    while size > 2:
                        x = x[..., : size // 2] + x[..., size // 2 : size // 2 * 2]
                        size = x.shape[-1]
                    return x
            """,
            entry="Halver",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Stack(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

                def forward(self, x):
                    todo = list(self.layers)
                    while todo:
                        x = todo.pop(0)(x)
                    return x
            """,
            entry="Stack",
        ),
    ]

    def visit_While(self, node: cst.While) -> None:
        if data_dependent(self, node.test) is not None:
            self.report(node.test)


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
        ),
        Invalid(
            """
            import torch

            def pick(x, y):
                return x if (x - y).abs().sum() < 1 else y

            compiled = torch.compile(pick, backend="eager")
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="pick",
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
        if data_dependent(self, node.test) is None:
            return
        fix = None
        if data_dependent(self, node.test) is node.test:
            built = where_call(self.context, node.test, node.body, node.orelse)
            if built is not None:
                call, imports = built
                call = call.with_changes(lpar=node.lpar, rpar=node.rpar)
                fix = FixPlan([(node, call)], "Use torch.where(cond, a, b)", "unsafe", imports)
        self.report(node.test, fix=fix)

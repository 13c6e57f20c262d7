"""JIT209 tensor-in-shape-comparison: Comparing a shape with a list or tuple that holds a tensor breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.tensor_data import holds_tensor_data


class TensorInShapeComparison(Rule):
    """Comparing a shape with a list or tuple that holds a tensor breaks the graph.

    Why: `list(t.size()) == [batch, heads, max_len]`, where `max_len` is a 0-d tensor
    (`lengths.max()`), compares element by element and gets a tensor where Python needs
    a bool: Dynamo cannot decide the list comparison ("list_richcompare_nonconst",
    measured on torch 2.13), so the graph breaks and `fullgraph=True` fails. The same
    assertion written element by element (`t.size(2) == max_len`) compiles: Dynamo turns
    a tensor-valued `assert` into a runtime check.

    Instead: compare the sizes one by one (`assert t.size(2) == max_len`), or compare
    against Python ints (`max_len = int(...)` once, outside the compiled region).
    """

    code = "JIT209"
    name = "tensor-in-shape-comparison"
    kind = "break"
    gb_type = "list_richcompare_nonconst"
    gb_id = "GB6622"
    message = (
        "comparing a shape with a list that holds a tensor breaks the graph; compare the "
        "sizes one by one (`t.size(i) == n`)"
    )
    steps = ("t.size(i) == n",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class GlobalAttention(nn.Module):
                def forward(self, scores, is_global: torch.Tensor):
                    max_global = is_global.sum(-1).max()
                    assert list(scores.size()) == [scores.shape[0], max_global], "bad scores"
                    return scores.softmax(-1)
            """,
            calls="[(torch.randn(2, 3), torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]]))]",
            entry="GlobalAttention",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, n: torch.Tensor):
                    if x.shape == (4, n.max()):
                        x = x * 2
                    return x
            """,
            calls="[(torch.randn(4, 8), torch.tensor([8, 3]))]",
            lines=[6],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class GlobalAttention(nn.Module):
                def forward(self, scores, is_global: torch.Tensor):
                    max_global = is_global.sum(-1).max()
                    assert scores.size(1) == max_global, "bad scores"
                    return scores.softmax(-1)
            """,
            calls="[(torch.randn(2, 3), torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]]))]",
            entry="GlobalAttention",
            note="an element-wise assertion becomes a runtime check",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    batch, width = x.shape
                    assert list(x.size()) == [batch, 8], "bad input"
                    assert x.shape[1:] == (width,)
                    return x * 2
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Crop(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.size = (4, 8)

                def forward(self, x):
                    height, width = self.size
                    if tuple(x.shape) != (height, width):
                        x = x[:height, :width]
                    return x * 2
            """,
            entry="Crop",
            note="sizes compared with Python ints from the module's config",
        ),
    ]

    def visit_Comparison(self, node: cst.Comparison) -> None:
        left = node.left
        for target in node.comparisons:
            right = target.comparator
            if isinstance(target.operator, (cst.Equal, cst.NotEqual)) and (
                    self._shape_against_tensor(left, right) or self._shape_against_tensor(right, left)):
                self.report(node)
                return
            left = right

    def _shape_against_tensor(self, shape: cst.BaseExpression, display: cst.BaseExpression) -> bool:
        """`shape` reads a tensor's sizes and `display` is a list/tuple with a tensor in it."""
        return (_reads_sizes(self, shape) and isinstance(display, (cst.List, cst.Tuple))
                and any(not isinstance(element, cst.StarredElement) and holds_tensor_data(self, element.value)
                        for element in display.elements))


def _reads_sizes(rule: Rule, expr: cst.BaseExpression) -> bool:
    """`t.shape`, `t.size()`, `t.shape[1:]`, `list(t.size())`, `tuple(t.shape)`, `torch.Size(...)`."""
    context = rule.context
    if isinstance(expr, cst.Subscript):
        return _reads_sizes(rule, expr.value)
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "shape" and context.kind(expr.value).tensorish
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value == "size" and not expr.args:
            return context.kind(func.value).tensorish
        qualified = context.qualname(func) or ""
        if qualified in ("builtins.list", "builtins.tuple") and len(expr.args) == 1:
            return _reads_sizes(rule, expr.args[0].value)
        return qualified == "torch.Size"
    return False

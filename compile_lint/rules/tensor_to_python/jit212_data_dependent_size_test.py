"""JIT212 data-dependent-size-test: A Python test on the size of a tensor whose size depends on data
(`if keep.numel() == 0:`)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.torch_tables import DYNAMIC_OUTPUT_SHAPE_FUNCTIONS, DYNAMIC_OUTPUT_SHAPE_METHODS


class DataDependentSizeTest(Rule):
    """A Python test on the size of a tensor whose size depends on data (`if keep.numel() == 0:`).

    Why: the size of `torch.where(mask)[0]`, `x.nonzero()`, `torch.unique(x)` or
    `masked_select` is only known from the data. The default compile already breaks at
    the op (JIT207); with `fullgraph=True` (or `capture_dynamic_output_shape_ops`) the op
    is captured with an unbacked size, and a Python `if`/`while`/ternary on that size
    then fails: "Could not guard on data-dependent expression Eq(u0, 0)" (measured on
    torch 2.13). This is where a fullgraph user's compile stops, one line after JIT207's.
    An `assert` on the size compiles under `fullgraph=True` (Dynamo turns it into a
    runtime check), so it is not reported.

    Instead: do not branch on the count; compute with masks so that an empty selection
    is harmless (`(x * mask).sum()`, `torch.where(mask.any(), a, b)`), or state what is
    known with `torch._check(keep.numel() > 0)` when it always holds.
    """

    code = "JIT212"
    name = "data-dependent-size-test"
    kind = "break"
    message = (
        "a Python test on the size of `{name}`, whose size depends on tensor data: fullgraph=True fails here "
        "(\"Could not guard on data-dependent expression\"); compute with masks instead of branching on the count: "
        "`torch.where(mask.any(), a, b)`"
    )
    steps = ("torch.where(mask.any(), a, b)",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Keep(nn.Module):
                def forward(self, x, scores):
                    keep = torch.where(scores > 0)[0]
                    if keep.numel() == 0:
                        return x.sum()
                    return x[keep].sum()
            """,
            calls="[(torch.randn(6, 4), torch.randn(6))]",
            entry="Keep",
            lines=[7],
        ),
        Invalid(
            """
            import torch

            @torch.compile(backend="eager")
            def labels(ids):
                present = torch.unique(ids)
                scale = 2.0 if len(present) > 1 else 1.0
                return present.float().mean() * scale
            """,
            calls="[(torch.tensor([0, 2, 2, 1]),)]",
            entry="labels",
            lines=[6],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Keep(nn.Module):
                def forward(self, x, scores):
                    mask = scores > 0
                    if x.numel() == 0:
                        return x.sum()
                    kept = (x * mask.unsqueeze(-1)).sum()
                    return torch.where(mask.any(), kept, x.sum())
            """,
            calls="[(torch.randn(6, 4), torch.randn(6))]",
            entry="Keep",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Pairs(nn.Module):
                def forward(self, x):
                    rows = torch.where(x > 0, x, 0)
                    if rows.shape[0] > 2:
                        return rows * 2
                    return rows
            """,
            entry="Pairs",
            note="three-argument torch.where keeps the input's shape",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Count(nn.Module):
                def forward(self, x):
                    top = x.topk(2, dim=0).indices
                    if top.numel() == 2 * x.shape[1] and len(top) == 2:
                        return x[top[0]]
                    return x
            """,
            entry="Count",
            note="topk's size comes from its arguments, not the data",
        ),
    ]

    def visit_If(self, node: cst.If) -> None:
        self._check_test(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._check_test(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check_test(node.test)

    def _check_test(self, test: cst.BaseExpression) -> None:
        for part in _operands(test):
            name = self._sized_name(part)
            if name is not None and self._data_dependent_size(name):
                self.report(part, self.message.format(name=name.value))
                return

    def _sized_name(self, expr: cst.BaseExpression) -> Optional[cst.Name]:
        """`n` of `n.numel()`, `n.nelement()`, `n.size(0)`, `n.shape[0]`, `len(n)`."""
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("numel", "nelement", "size"):
                return func.value if isinstance(func.value, cst.Name) else None
            if self.context.qualname(func) == "builtins.len" and len(expr.args) == 1:
                value = expr.args[0].value
                return value if isinstance(value, cst.Name) else None
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute):
            shape = expr.value
            if shape.attr.value == "shape" and isinstance(shape.value, cst.Name):
                return shape.value
        return None

    def _data_dependent_size(self, name: cst.Name) -> bool:
        """Every value bound to `name` is the output of a data-dependent-size op (or an item of it)."""
        values = self.context.local_values(name.value)
        return bool(values) and all(isinstance(v, cst.BaseExpression) and self._sized_by_data(v) for v in values)

    def _sized_by_data(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Subscript):  # torch.where(mask)[0], x.nonzero()[:, 0]
            expr = expr.value
        if not isinstance(expr, cst.Call):
            return False
        positional = [a for a in expr.args if a.keyword is None and not a.star]
        qualified = self.context.qualname(expr.func)
        if qualified is not None:
            if qualified == "torch.where":
                return len(expr.args) == 1 and len(positional) == 1
            return qualified in _SIZED_BY_DATA_FUNCTIONS
        func = expr.func
        return (isinstance(func, cst.Attribute) and func.attr.value in _SIZED_BY_DATA_METHODS
                and self.context.kind(func.value) is Kind.TENSOR)


def _operands(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The size expressions a test compares or tests: `a.numel() == 0`, `not len(a)`, `x and a.shape[0] > 1`."""
    if isinstance(test, cst.BooleanOperation):
        return _operands(test.left) + _operands(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _operands(test.expression)
    if isinstance(test, cst.Comparison):
        return [test.left, *(target.comparator for target in test.comparisons)]
    return [test]


# The ops whose output length is a count read from the data. torch's table also holds
# ops whose size depends on data in another way (one_hot's class count, repeat_interleave's
# repeats, lstsq, ctc_loss): a test on their size is rare and none was measured, so they
# are left out.
_SIZED_BY_DATA_FUNCTIONS = frozenset(
    name for name in DYNAMIC_OUTPUT_SHAPE_FUNCTIONS
    if name.rsplit(".", 1)[-1] in ("nonzero", "argwhere", "masked_select", "unique", "unique_consecutive")
)
_SIZED_BY_DATA_METHODS = frozenset(
    name for name in DYNAMIC_OUTPUT_SHAPE_METHODS
    if name in ("nonzero", "argwhere", "masked_select", "unique", "unique_consecutive")
)

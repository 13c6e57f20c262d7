"""JIT206 tensor-truth-value: `and`/`or`/`not` on tensor data outside a condition breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.tensor_data import holds_tensor_data


class TensorTruthValue(Rule):
    """`and`/`or`/`not` on tensor data outside a condition breaks the graph.

    Why: `a and b`, `a or b` and `not a` call `bool(a)`; on a tensor that needs its
    value ("Data-dependent branching"), so `fullgraph=True` fails. This includes
    `y = mask.any() and z`, `valid = not torch.isnan(x).any()` and `assert not
    x.isnan().any()` (a plain `assert (x > 0).all()` compiles). An `assert` on a
    tensor whose message is computed (`"{} bad".format(name)`, an f-string) breaks
    too: Dynamo turns only an assert with no message or a literal string into a
    runtime check.

    Instead: use tensor logic: `a & b`, `a | b`, `~a` or `torch.logical_and/or/not`,
    and `torch.where(cond, a, b)` to pick values. (`if`/`while`/ternary conditions are
    reported by JIT101-JIT103.)
    """

    code = "JIT206"
    name = "tensor-truth-value"
    kind = "break"
    gb_type = "Data-dependent branching"
    gb_id = "GB0170"
    # `finite = not torch.isnan(x).any()` on torch 2.13: Dynamo skips the whole frame and
    # records only the scalar read underneath ("Data dependent operator", GB0033).
    gb_types = ("Data dependent operator",)
    message = (
        "`and`/`or`/`not` on a tensor calls bool() on its data and breaks the graph; "
        "use tensor logic: `a & b`, `a | b`, `~a`"
    )
    steps = ("a & b", "a | b", "~a", 'assert cond, "..."')
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Gate(nn.Module):
                def forward(self, x, z):
                    mask = x > 0
                    y = mask.any() and z
                    return y * 2
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="Gate",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class NanGuard(nn.Module):
                def forward(self, x):
                    finite = not torch.isnan(x).any()
                    return x * finite
            """,
            entry="NanGuard",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class CheckedNorm(nn.Module):
                def forward(self, x):
                    assert not torch.isnan(x).any(), "NaN in input"
                    return x / x.norm()
            """,
            entry="CheckedNorm",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Increasing(nn.Module):
                def forward(self, t):
                    assert (t[1:] > t[:-1]).all(), "{} must be increasing".format("t")
                    return t * 2
            """,
            calls="[(torch.arange(4.0),)]",
            entry="Increasing",
            lines=[6],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Gate(nn.Module):
                def forward(self, x, z):
                    mask = x > 0
                    y = torch.where(mask.any(), z, mask.to(z.dtype))
                    valid = ~torch.isnan(x) & (x < 10) | mask
                    return y * 2 + valid
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="Gate",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Options(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.use_bias = True
                    self.bias = nn.Parameter(torch.zeros(8))

                def forward(self, x, scale=None, mask=None):
                    scale = scale or 1.0
                    apply = self.use_bias and not self.training
                    mask = mask is not None and mask
                    return x * scale + (self.bias if apply else 0)
            """,
            entry="Options",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Checked(nn.Module):
                def forward(self, x):
                    assert x.dim() == 2 and (x == x).all(), "bad input"
                    assert (x == x).all(), "bad " "input"
                    if x.shape[0] > 1 and not x.is_floating_point():
                        x = x.float()
                    return x * 2
            """,
            entry="Checked",
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        # if/while/ternary/comprehension tests are JIT101-JIT103's to report.
        self._in_conditions: set[cst.BaseExpression] = set()
        # Inner links of an `a and b and c` chain: the outermost one reports.
        self._inner: set[cst.BooleanOperation] = set()

    def _condition(self, test: cst.BaseExpression) -> None:
        self._in_conditions.update(_condition_chain(test))

    def visit_If(self, node: cst.If) -> None:
        self._condition(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._condition(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._condition(node.test)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._condition(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        test = node.test
        # and/or/not tests are reported by the visitors below; a literal message makes a runtime check.
        if node.msg is None or _literal_string(node.msg) or isinstance(test, cst.BooleanOperation) or (
                isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
            return
        if holds_tensor_data(self, test):
            self.report(test, _COMPUTED_MESSAGE_ASSERT)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        for side in (node.left, node.right):
            if isinstance(side, cst.BooleanOperation) and not side.lpar:
                self._inner.add(side)
        if node in self._inner or node in self._in_conditions:
            return
        for operand in _truth_tested(node):
            if holds_tensor_data(self, operand):
                self.report(operand)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if not isinstance(node.operator, cst.Not) or node in self._in_conditions:
            return
        if holds_tensor_data(self, node.expression):
            self.report(node)


_COMPUTED_MESSAGE_ASSERT = (
    "`assert` on a tensor with a computed message calls bool() on its data and breaks the graph; "
    "give it a literal message (`assert cond, \"...\"`), which torch.compile turns into a runtime check"
)


def _literal_string(expr: cst.BaseExpression) -> bool:
    """True when `expr` is a string constant (Python loads it as one: Dynamo's assert rewrite needs that)."""
    if isinstance(expr, cst.SimpleString):
        return True
    if isinstance(expr, cst.ConcatenatedString):
        return _literal_string(expr.left) and _literal_string(expr.right)
    if isinstance(expr, cst.FormattedString):
        return not any(isinstance(part, cst.FormattedStringExpression) for part in expr.parts)
    return False


def _condition_chain(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """`test` and the and/or/not operations inside it, down to their operands."""
    chain: list[cst.BaseExpression] = []
    pending = [test]
    while pending:
        expr = pending.pop()
        if isinstance(expr, cst.BooleanOperation):
            chain.append(expr)
            pending += [expr.left, expr.right]
        elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            chain.append(expr)
            pending.append(expr.expression)
    return chain


def _truth_tested(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of an and/or chain whose truth Python tests: all but the last."""
    operands: list[cst.BaseExpression] = []
    pending = [expr]  # a stack, not a recursive closure: that would be a reference cycle holding nodes
    while pending:
        value = pending.pop()
        if isinstance(value, cst.BooleanOperation) and not value.lpar:
            pending.append(value.right)
            pending.append(value.left)
        else:
            operands.append(value)
    return operands[:-1]


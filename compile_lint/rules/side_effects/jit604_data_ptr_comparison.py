"""JIT604 data-ptr-comparison: Comparing or doing arithmetic on `t.data_ptr()` breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid


class DataPtrComparison(Rule):
    """Comparing or doing arithmetic on `t.data_ptr()` breaks the graph.

    Why: under the compiler tensors have no real storage address; Dynamo lets a bare
    `data_ptr()` call through but cannot evaluate `a.data_ptr() == b.data_ptr()`
    ("Data pointer comparison") or `ptr % 16`, and `untyped_storage().data_ptr()` is an
    unsupported method call.

    Instead: do aliasing or alignment checks outside the compiled region (or in a
    `@torch.compiler.disable` helper); Inductor handles alignment itself.
    """

    code = "JIT604"
    name = "data-ptr-comparison"
    kind = "break"
    gb_type = "Data pointer comparison"
    gb_id = "GB5976"
    gb_types = (  # the same pattern, reported differently
        "Observed exception",
        "Unsupported method call",
    )
    message = (
        "comparing data_ptr() breaks the graph (no real addresses while compiling); "
        "compare the tensors themselves (`x is y`, which Dynamo guards), or check aliasing/alignment outside "
        "the compiled region"
    )
    steps = ("x is y",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class TiedProjection(nn.Module):
                def forward(self, x, weight):
                    if x.data_ptr() == weight.data_ptr():
                        weight = weight.clone()
                    return x @ weight.t()
            """,
            calls="[(torch.randn(4, 8), torch.randn(8, 8))]",
            entry="TiedProjection",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class AlignedCopy(nn.Module):
                def forward(self, x):
                    aligned = x.data_ptr() % 16 == 0
                    return x * 2 if aligned else x.contiguous() * 2
            """,
            entry="AlignedCopy",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    key = x.untyped_storage().data_ptr()
                    return x * 2, key
            """,
            lines=[6],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, y):
                    if x is y:
                        y = y.clone()
                    return x + y
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    same_shape = x.shape == (4, 8)
                    return x * 2 if same_shape and x.is_contiguous() else x
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    cache_key = (tuple(x.shape), x.dtype, x.data_ptr())
                    return x.flatten() * len(cache_key)
            """,
        ),
    ]

    def visit_Comparison(self, node: cst.Comparison) -> None:
        operands = [node.left] + [target.comparator for target in node.comparisons]
        ordered = any(isinstance(target.operator, _ORDERING_OPERATORS) for target in node.comparisons)
        if ordered and any(_is_data_ptr_call(operand) for operand in operands):
            self.report(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if _is_data_ptr_call(node.left) or _is_data_ptr_call(node.right):
            self.report(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (_is_data_ptr_call(node) and isinstance(func, cst.Attribute)
                and isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Attribute)
                and func.value.func.attr.value in ("untyped_storage", "storage", "_typed_storage")):
            self.report(node)


_ORDERING_OPERATORS = (cst.Equal, cst.NotEqual, cst.LessThan, cst.GreaterThan, cst.LessThanEqual,
                       cst.GreaterThanEqual, cst.Is, cst.IsNot)


def _is_data_ptr_call(expr: cst.BaseExpression) -> bool:
    return (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "data_ptr")


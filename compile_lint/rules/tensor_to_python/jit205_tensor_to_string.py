"""JIT205 tensor-to-string: `str(t)`, `repr(t)`, `format(t)` or `"..." % t` on a tensor fails to compile."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.tensor_data import builtin_conversion, holds_tensor_data


class TensorToString(Rule):
    """`str(t)`, `repr(t)`, `format(t)` or `"..." % t` on a tensor fails to compile.

    Why: Dynamo cannot trace turning a tensor into text ("Failed to trace builtin
    operator", "repr() on tensor"): `fullgraph=True` fails and the default compile
    breaks the graph, whatever the config; `format(t, spec)` even raises an internal
    Dynamo error. f-strings and `str.format` with tensors, measured on torch 2.13, are
    traced while the text is only returned; code that uses the text (its `len`, a dict
    key) fails as `str(t)` does ("Observed exception").

    Instead: format shapes and dtypes (`str(x.shape)` is fine); make text from values
    outside the compiled region (return the tensor, format it after the call).
    """

    code = "JIT205"
    name = "tensor-to-string"
    kind = "break"
    gb_type = "Failed to trace builtin operator"
    gb_id = "GB0059"
    gb_types = ("repr() on tensor",)  # the same pattern, reported differently
    message = (
        "turning a tensor into text with str()/repr()/format()/% fails to compile; "
        "format shapes, not values (`str(x.shape)`), or make the text outside the compiled code"
    )
    steps = ("str(x.shape)",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Tagged(nn.Module):
                def forward(self, x):
                    key = str(x.mean())
                    return x * len(key)
            """,
            entry="Tagged",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Report(nn.Module):
                def forward(self, x):
                    loss = x.pow(2).mean()
                    summary = "loss=%.4f" % loss
                    return loss, summary
            """,
            entry="Report",
            lines=[7],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Debug(nn.Module):
                def forward(self, x):
                    probs = x.softmax(-1)
                    text = repr(probs)
                    return probs, text
            """,
            entry="Debug",
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Report(nn.Module):
                def forward(self, x):
                    loss = x.pow(2).mean()
                    return loss, f"loss={loss:.4f}", "loss={}".format(loss)
            """,
            entry="Report",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class ShapeKey(nn.Module):
                def forward(self, x):
                    key = str(x.shape) + str(x.dtype) + "%d" % x.shape[0]
                    return x * len(key)
            """,
            entry="ShapeKey",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Modulo(nn.Module):
                def forward(self, x):
                    name = "layer_%d" % 3
                    return x % 2.0, name
            """,
            entry="Modulo",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = builtin_conversion(self, node, ("str", "repr", "format", "ascii"))
        if name is not None:
            self.report(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Modulo) or not _string_literal(node.left):
            return
        right = node.right
        values = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
        if any(holds_tensor_data(self, value) for value in values):
            self.report(node)


def _string_literal(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.SimpleString, cst.ConcatenatedString))


"""JIT210 data-dependent-operator: `torch.equal` and `torch.allclose` answer a Python bool computed from tensor data."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.torch_tables import DATA_DEPENDENT_OUTPUT_FUNCTIONS, DATA_DEPENDENT_OUTPUT_METHODS


class DataDependentOperator(Rule):
    """`torch.equal` and `torch.allclose` answer a Python bool computed from tensor data.

    Why: torch tags these ops `data_dependent_output`: their result is not a tensor but a
    Python value that only the data decides, so fake tensors cannot compute it ("Data
    dependent operator", DataDependentOutputException). `fullgraph=True` fails; the
    default compile breaks the graph there and runs the op eagerly (measured on torch
    2.13; `capture_scalar_outputs` does not help). The ops are read from torch's own tags
    (rules/support/torch_tables.py); `.item()`, tagged too, is JIT201's.

    Instead: keep the answer a tensor: `(a == b).all()` for `torch.equal` (with a shape
    check, `a.shape == b.shape`, which Dynamo guards on), `torch.isclose(a, b).all()` for
    `allclose`, and branch on it with `torch.where`; or do the check outside the compiled
    code.
    """

    code = "JIT210"
    name = "data-dependent-operator"
    kind = "break"
    gb_type = "Data dependent operator"
    gb_id = "GB0033"
    message = (
        "`{name}` returns a Python bool computed from tensor data: the graph breaks here (fullgraph fails); "
        "keep it a tensor, e.g. `(a == b).all()` or `torch.isclose(a, b).all()`"
    )
    steps = ("(a == b).all()", "torch.isclose(a, b).all()")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Tied(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.a = nn.Linear(8, 8)
                    self.b = nn.Linear(8, 8)

                def forward(self, x):
                    if torch.equal(self.a.weight, self.b.weight):
                        return self.a(x)
                    return self.a(x) + self.b(x)
            """,
            entry="Tied",
            lines=[11],
        ),
        Invalid(
            """
            import torch

            @torch.compile(backend="eager")
            def converged(new, old):
                done = new.allclose(old, atol=1e-4)
                return new * 2, done
            """,
            calls="[(torch.ones(4), torch.ones(4))]",
            entry="converged",
            lines=[5],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Tied(nn.Module):
                def forward(self, x, y):
                    same = (x == y).all() if x.shape == y.shape else torch.tensor(False)
                    close = torch.isclose(x, y, atol=1e-4).all()
                    return torch.where(same | close, x, x + y)
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="Tied",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Version:
                def __init__(self, text):
                    self.text = text

                def equal(self, other):
                    return self.text == other

            VERSION = Version("2.13")

            class Head(nn.Module):
                def forward(self, x):
                    if VERSION.equal("2.13"):
                        return x * 2
                    return x
            """,
            entry="Head",
            note="an `equal` method of something that is not a tensor",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Check(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        assert torch.allclose(x, x.clone())
                    return torch.eq(x, x.flip(0)).float()
            """,
            entry="Check",
            note="eager-only code and the elementwise `torch.eq`",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.context.qualname(func)
        if qualified is not None:
            if qualified in DATA_DEPENDENT_OUTPUT_FUNCTIONS:
                self.report(node, self.message.format(name=qualified))
            return
        if (isinstance(func, cst.Attribute) and func.attr.value in DATA_DEPENDENT_OUTPUT_METHODS
                and func.attr.value not in _OTHER_RULES_METHODS and self.context.kind(func.value) is Kind.TENSOR):
            self.report(node, self.message.format(name=f"Tensor.{func.attr.value}"))


# `.item()` is tagged data_dependent_output too, but JIT201 reports it (with its fix, and
# knowing that fullgraph=True captures it as an unbacked value, which these ops are not).
_OTHER_RULES_METHODS = frozenset({"item"})

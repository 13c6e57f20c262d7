"""JIT410 random-draw-arithmetic: Python arithmetic on a `random.randint/uniform/randrange`
draw with a Python number breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid


class RandomDrawArithmetic(Rule):
    """Python arithmetic on a `random.randint/uniform/randrange` draw with a Python number breaks the graph.

    Why: Dynamo traces these three draws (JIT402 reports the `random` functions it
    skips) by making each one a 0-d tensor input of the graph. Arithmetic between that
    value and a tensor compiles (`x * random.uniform(0.9, 1.1)`), but with a Python
    number, a size or another draw (`random.randint(0, 3) + 1`, `h - random.randint(0,
    4)`, `-draw`, `draw ** 0.5`, `k += 1`) Dynamo has no operator for it ("unimplemented
    builtin op on tensor arguments"): `fullgraph=True` fails and the default compile
    runs the whole frame eagerly, in forward and in compiled functions, in both modes
    (measured on torch 2.13). Comparing a draw (`draw < p`) is traced (a tensor `if` on it
    is JIT101's; `not draw` breaks as JIT206's truth test). Operand order matters:
    `x * draw * 2` compiles, `2 * draw * x` does not. The rules about a tensor used as a
    size, slice bound or test stay silent on such arithmetic: it breaks first.

    Instead: draw with torch and keep a tensor (`torch.randint(low, high + 1, ())`,
    `torch.empty(()).uniform_(a, b)`), or put the tensor first (`x * draw * 2`), or draw
    outside the compiled code and pass the number in. No fix: folding a constant into
    `randint`'s bounds gives the same number only by CPython's implementation of
    `randrange`, and a torch draw gives other numbers than a seeded Python run.
    """

    code = "JIT410"
    name = "random-draw-arithmetic"
    kind = "break"
    gb_type = "unimplemented builtin op on tensor arguments"
    gb_id = "GB0213"
    message = (
        "arithmetic on a Python random draw with a number breaks the graph (Dynamo holds the draw as a "
        "0-d tensor and has no operator for it with a Python number); draw with torch and keep a tensor "
        "(`torch.randint(low, high + 1, ())`, `torch.empty(()).uniform_(a, b)`), or pass the number in"
    )
    steps = ("torch.randint(low, high + 1, ())", "torch.empty(()).uniform_(a, b)")
    invalid = [
        Invalid(
            """
            import random

            import torch
            from torch import nn

            class RandomShift(nn.Module):
                def __init__(self, max_shift=3):
                    super().__init__()
                    self.max_shift = max_shift

                def forward(self, x):
                    shift = random.randint(0, self.max_shift) + 1
                    return x.roll(shift, -1)
            """,
            entry="RandomShift",
            lines=[12],
        ),
        Invalid(
            """
            import random

            import torch
            from torch import nn

            class RandomCrop(nn.Module):
                def forward(self, x):
                    width = x.shape[-1]
                    start = random.randint(0, width // 2)
                    return x[..., start:start + 4]
            """,
            entry="RandomCrop",
            calls="[(torch.randn(2, 16),)]",
            lines=[10],
            note="a slice bound computed from the draw",
        ),
        Invalid(
            """
            import random

            import torch

            @torch.compile(backend="eager")
            def jitter(x):
                scale = random.uniform(0.9, 1.1)
                scale -= 0.5
                return 2 * random.uniform(0.0, 1.0) * x + scale * x
            """,
            entry="jitter",
            lines=[8, 9],
            note="an augmented assignment, and a number before the draw",
        ),
    ]
    valid = [
        Valid(
            """
            import random

            import torch
            from torch import nn

            class ScaleJitter(nn.Module):
                def forward(self, x):
                    scale = random.uniform(0.9, 1.1)
                    return x * scale * 2 + (x - random.randint(0, 2))
            """,
            entry="ScaleJitter",
            note="the draw meets a tensor first",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class RandomShift(nn.Module):
                def forward(self, x):
                    shift = torch.randint(0, 4, ()) + 1
                    scale = torch.empty(()).uniform_(0.9, 1.1) * 2
                    return x * scale + shift
            """,
            entry="RandomShift",
            note="torch draws",
        ),
        Valid(
            """
            import random

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, offset=0):
                    keep = random.uniform(0, 1) < 0.5
                    shift = random.randint(1, 4)
                    return x * keep + x * shift + offset * 2
            """,
            note="a comparison of a draw is traced; the draw alone times a tensor compiles",
        ),
    ]

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._check(node)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        self._check(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node)

    def _check(self, node: cst.CSTNode) -> None:
        function = self.context.function
        if function is not None and self.context.facts.draw_arithmetic(node, function):
            self.report(node)

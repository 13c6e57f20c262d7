"""JIT618 class-statement-in-forward: A `class` statement inside compiled code breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid


class ClassStatementInForward(Rule):
    """A `class` statement inside compiled code breaks the graph.

    Why: a `class` statement runs `__build_class__`, which Dynamo cannot trace: the
    default compile breaks the graph at it ("Invalid call to __build_class__") on
    every call, and `fullgraph=True` fails (measured on torch 2.13). Defining a small
    helper class, a dataclass or a NamedTuple for the outputs inside forward is the
    usual way this happens.

    Instead: define the class once at module level (or in `__init__`'s module) and
    only instantiate it in forward.
    """

    code = "JIT618"
    name = "class-statement-in-forward"
    kind = "break"
    gb_type = "Invalid call to __build_class__"
    gb_id = "GB8977"
    message = (
        "a `class` statement in compiled code breaks the graph (Dynamo cannot trace __build_class__); "
        "define the class at module level (`class Helper: ...` above the model) and only instantiate it here"
    )
    steps = ("class Helper: ...",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Head(nn.Module):
                def forward(self, x):
                    class Output:
                        def __init__(self, logits):
                            self.logits = logits

                    return Output(x * 2).logits
            """,
            entry="Head",
            lines=[6],
        ),
        Invalid(
            """
            import torch
            from typing import NamedTuple

            @torch.compile(backend="eager")
            def split(x):
                class Halves(NamedTuple):
                    left: torch.Tensor
                    right: torch.Tensor

                return Halves(*x.chunk(2, dim=-1)).left + 1
            """,
            entry="split",
            lines=[6],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Output:
                def __init__(self, logits):
                    self.logits = logits

            class Head(nn.Module):
                def forward(self, x):
                    return Output(x * 2).logits
            """,
            entry="Head",
        ),
        Valid(
            """
            import torch
            from typing import NamedTuple

            class Halves(NamedTuple):
                left: torch.Tensor
                right: torch.Tensor

            @torch.compile(backend="eager")
            def split(x):
                return Halves(*x.chunk(2, dim=-1)).left + 1
            """,
            entry="split",
        ),
        Valid(
            """
            import torch
            from torch import nn

            def make_head():
                class Head(nn.Module):
                    def forward(self, x):
                        return x * 2

                return Head()

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.head = make_head()

                def forward(self, x):
                    return self.head(x) + 1
            """,
            entry="Model",
            note="a class made by a factory called in __init__, not in traced code",
        ),
    ]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self.context.function is not None:
            self.report(node.name)

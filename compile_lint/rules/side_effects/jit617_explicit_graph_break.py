"""JIT617 explicit-graph-break: `torch._dynamo.graph_break()` in compiled code breaks the
graph on purpose: fullgraph fails there."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid


class ExplicitGraphBreak(Rule):
    """`torch._dynamo.graph_break()` in compiled code breaks the graph on purpose: fullgraph fails there.

    Why: `torch._dynamo.graph_break()` (and `torch._dynamo.step_unsupported()`, which
    also gives up on the rest of the frame) exist to end the graph: the default compile
    splits the function there, and `torch.compile(..., fullgraph=True)` fails at the
    call ("Call to `torch._dynamo.graph_break()`"). Left in a model from debugging, or
    placed to work around an old bug, they cost a graph split on every call; a user who
    compiles with `fullgraph=True` cannot compile the model at all.

    Instead: remove the call once what it worked around is fixed; to keep a piece of
    code out of the graph, put it in a function decorated with
    `@torch.compiler.disable`, which says so and stays visible to this linter.
    """

    code = "JIT617"
    name = "explicit-graph-break"
    kind = "break"
    gb_type = "Call to `torch._dynamo.graph_break()`"
    gb_id = "GB0025"
    gb_types = (  # step_unsupported()
        "Call to `torch._dynamo.step_unsupported()`",
        "torch._dynamo.step_unsupported() with empty checkpoint",
        "cannot resume from torch._dynamo.step_unsupported()",
    )
    message = (
        "`{name}()` ends the graph here on purpose: the default compile splits, fullgraph=True fails; "
        "remove it, or move that code into a `@torch.compiler.disable` function"
    )
    steps = ("@torch.compiler.disable",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Block(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x):
                    h = self.fc(x)
                    torch._dynamo.graph_break()
                    return h.relu()
            """,
            entry="Block",
            lines=[11],
        ),
        Invalid(
            """
            import torch
            from torch._dynamo import step_unsupported

            @torch.compile(backend="eager")
            def head(x):
                y = x * 2
                step_unsupported()
                return y + 1
            """,
            entry="head",
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Block(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        torch._dynamo.graph_break()
                    return x.relu()
            """,
            entry="Block",
            note="eager-only code is never traced",
        ),
        Valid(
            """
            import torch
            from torch import nn

            def graph_break():
                return None

            class Block(nn.Module):
                def forward(self, x):
                    graph_break()
                    return x.relu()
            """,
            entry="Block",
            note="a function of the same name that is not torch's",
        ),
        Valid(
            """
            import torch
            from torch import nn

            @torch.compiler.disable
            def log_stats(x):
                torch._dynamo.graph_break()
                return None

            class Block(nn.Module):
                def forward(self, x):
                    y = x.relu()
                    return y * 2
            """,
            entry="Block",
            note="a disabled function is not traced (and not called here)",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func)
        if name in _EXPLICIT_BREAKS:
            self.report(node, self.message.format(name=name))


_EXPLICIT_BREAKS = frozenset(
    f"torch._dynamo.{module}{name}" for module in ("", "decorators.") for name in ("graph_break", "step_unsupported")
)

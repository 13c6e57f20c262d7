"""JIT614 dynamo-mark-in-forward: `torch._dynamo.mark_static_address` or `mark_dynamic` inside a compiled region stops
the compile with an error."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid


class DynamoMarkInForward(Rule):
    """`torch._dynamo.mark_static_address` or `mark_dynamic` inside a compiled region stops the compile with an error.

    Why: these functions tell Dynamo about an input before it traces; Dynamo refuses to
    trace them ("Attempt to trace forbidden callable"), and the error is raised by
    `torch.compile` itself, with or without `fullgraph=True` (measured on torch 2.13 for
    `mark_static_address`, `mark_dynamic`, `maybe_mark_dynamic` and `mark_unbacked`).
    Caches that allocate their buffers lazily in forward hit this on the first call.

    Instead: mark tensors before calling the compiled function, or guard the call with
    `if not torch.compiler.is_compiling():` (transformers' caches do), so that it runs
    only eagerly.
    """

    code = "JIT614"
    name = "dynamo-mark-in-forward"
    kind = "break"
    message = (
        "Dynamo cannot trace this call and torch.compile fails; mark tensors before the "
        "compiled call (`torch._dynamo.mark_dynamic(x, 0)`, then `compiled(x)`), or guard it with "
        "`if not torch.compiler.is_compiling():`"
    )
    steps = ("torch._dynamo.mark_dynamic(x, 0)", "if not torch.compiler.is_compiling():")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class StaticCache(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("keys", torch.zeros(4, 8))

                def forward(self, x):
                    torch._dynamo.mark_static_address(self.keys)
                    self.keys.copy_(x)
                    return self.keys * 2
            """,
            entry="StaticCache",
            lines=[10],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    torch._dynamo.mark_dynamic(x, 0)
                    return x * 2
            """,
            lines=[6],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class StaticCache(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("keys", torch.zeros(4, 8))
                    torch._dynamo.mark_static_address(self.keys)

                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        torch._dynamo.mark_static_address(self.keys)
                    return self.keys * 2 + x
            """,
            entry="StaticCache",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    torch._dynamo.mark_static(x, 0)
                    return x * 2
            """,
            note="mark_static is traced",
        ),
        Valid(
            """
            import torch
            from torch import nn

            def prepare(batch):
                torch._dynamo.mark_dynamic(batch, 0)
                return batch

            class Model(nn.Module):
                def forward(self, x):
                    return x * 2
            """,
            note="marking inputs before the compiled call",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualname(node.func) in _FORBIDDEN_MARKS:
            self.report(node)


_FORBIDDEN_MARKS = frozenset(
    f"torch._dynamo.{module}{name}"
    for module in ("", "decorators.")
    for name in ("mark_static_address", "mark_dynamic", "maybe_mark_dynamic", "mark_unbacked")
)

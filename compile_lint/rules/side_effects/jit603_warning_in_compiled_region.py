"""JIT603 warning-in-compiled-region: `warnings.warn(...)` in a compiled region breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules._fixes import StatementCalls, eager_only_guard
from compile_lint.rules.base import Invalid, Rule, Valid


class WarningInCompiledRegion(StatementCalls, Rule):
    """`warnings.warn(...)` in a compiled region breaks the graph.

    Why: the warnings machinery inspects the caller's frame and global registry, which
    Dynamo skips ("Attempted to call function marked as skipped"); this holds for every
    category, filtered or not.

    Instead: warn once at construction (`__init__`) or outside the compiled call, or
    under `if not torch.compiler.is_compiling():` (the unsafe fix). Adding
    `warnings.warn` to `torch._dynamo.config.reorderable_logging_functions` also compiles.
    """

    code = "JIT603"
    name = "warning-in-compiled-region"
    kind = "break"
    gb_type = "Attempted to call function marked as skipped"
    gb_id = "GB0007"
    fix_applicability = "unsafe"
    config_note = "adding warnings.warn to torch._dynamo.config.reorderable_logging_functions makes it compile"
    message = (
        "warnings.warn breaks the graph; warn in __init__ or under "
        "`if not torch.compiler.is_compiling():`"
    )
    invalid = [
        Invalid(
            """
            import warnings

            import torch
            from torch import nn

            class BertSelfOutput(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.dense = nn.Linear(8, 8)

                def forward(self, hidden_states, head_mask=None):
                    if head_mask is None:
                        warnings.warn("head_mask is deprecated and ignored", FutureWarning)
                    return self.dense(hidden_states)
            """,
            fixed="""
            import warnings

            import torch
            from torch import nn

            class BertSelfOutput(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.dense = nn.Linear(8, 8)

                def forward(self, hidden_states, head_mask=None):
                    if head_mask is None:
                        if not torch.compiler.is_compiling():
                            warnings.warn("head_mask is deprecated and ignored", FutureWarning)
                    return self.dense(hidden_states)
            """,
            entry="BertSelfOutput",
            lines=[13],
        ),
        Invalid(
            """
            from warnings import warn

            from torch import nn

            class Resize(nn.Module):
                def forward(self, x):
                    if x.shape[-1] % 2:
                        warn("odd width; the last column is dropped")
                    return x[..., : x.shape[-1] // 2 * 2]
            """,
            fixed="""
            from warnings import warn

            from torch import nn
            import torch

            class Resize(nn.Module):
                def forward(self, x):
                    if x.shape[-1] % 2:
                        if not torch.compiler.is_compiling():
                            warn("odd width; the last column is dropped")
                    return x[..., : x.shape[-1] // 2 * 2]
            """,
            calls="[(torch.randn(4, 7),)]",
            entry="Resize",
            lines=[8],
        ),
    ]
    valid = [
        Valid(
            """
            import warnings

            from torch import nn

            class BertSelfOutput(nn.Module):
                def __init__(self, legacy=False):
                    super().__init__()
                    if legacy:
                        warnings.warn("legacy mode is deprecated", FutureWarning)
                    self.dense = nn.Linear(8, 8)

                def forward(self, hidden_states):
                    return self.dense(hidden_states)
            """,
            entry="BertSelfOutput",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    warn_threshold = 10.0
                    return x.clamp(max=warn_threshold)
            """,
        ),
        Valid(
            """
            import warnings

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        warnings.warn("eager path is slow")
                    return x * 2
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualname(node.func) in _WARNING_FUNCTIONS:
            self.report(node, fix=eager_only_guard(self.context, self.statement_of(node), "warning"))


_WARNING_FUNCTIONS = frozenset({"warnings.warn", "warnings.warn_explicit"})


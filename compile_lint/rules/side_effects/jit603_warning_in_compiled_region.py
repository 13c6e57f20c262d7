"""JIT603 warning-in-compiled-region: `warnings.warn(...)` in a compiled region breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.fixes.deferred_logging import report_deferrable
from compile_lint.fixes.guards import StatementCalls
from compile_lint.rules.base import Invalid, Rule, Valid


class WarningInCompiledRegion(StatementCalls, Rule):
    """`warnings.warn(...)` in a compiled region breaks the graph.

    Why: the warnings machinery inspects the caller's frame and global registry, which
    Dynamo skips ("Attempted to call function marked as skipped"); this holds for every
    category, filtered or not.

    Instead: warn once at construction (`__init__`) or outside the compiled call, or
    under `if not torch.compiler.is_compiling():` (the unsafe fix, spelled with the file's
    own is-compiling helper when it imports one). Code an is-compiling test already
    confines is not guarded: eager-only code is not flagged, and a warning only compiled
    runs reach gets no fix (a guard would make it dead code). Adding
    `warnings.warn` to `torch._dynamo.config.reorderable_logging_functions` also compiles,
    warning after the graph; the fix takes that where the file has one `torch.compile` call
    and the warning passes only a message (measured on torch 2.13: a category argument,
    `warnings.warn(msg, FutureWarning)`, still breaks), else the guard.
    """

    code = "JIT603"
    name = "warning-in-compiled-region"
    kind = "break"
    gb_type = "Attempted to call function marked as skipped"
    gb_id = "GB0007"
    fix_applicability = "unsafe"
    config_note = "adding warnings.warn to torch._dynamo.config.reorderable_logging_functions makes it compile"
    message = (
        "warnings.warn breaks the graph; warn in `__init__` or under "
        "`if not torch.compiler.is_compiling():`"
    )
    steps = ("if not torch.compiler.is_compiling():",
             "torch._dynamo.config.reorderable_logging_functions.add(warnings.warn)", "@torch.compiler.disable")
    invalid = [
        Invalid(
            """
            import warnings

            import torch
            from torch import nn

            class Clamp(nn.Module):
                def forward(self, x):
                    warnings.warn("Clamp is slow; use torch.clamp")
                    return x.clamp(0, 1)

            model = torch.compile(Clamp())
            """,
            fixed="""
            import warnings

            import torch
            from torch import nn

            class Clamp(nn.Module):
                def forward(self, x):
                    warnings.warn("Clamp is slow; use torch.clamp")
                    return x.clamp(0, 1)

            torch._dynamo.config.reorderable_logging_functions.add(warnings.warn)
            model = torch.compile(Clamp())
            """,
            entry="Clamp",
            lines=[8],
            note="A message only, and a compile call in the file: the warning is deferred after the graph.",
        ),
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
        Invalid(
            """
            import warnings

            from torch import nn
            from torch.compiler import is_compiling

            class Pool(nn.Module):
                def forward(self, x):
                    warnings.warn("Pool is deprecated; use AdaptivePool", DeprecationWarning)
                    return x.mean(-1)
            """,
            fixed="""
            import warnings

            from torch import nn
            from torch.compiler import is_compiling

            class Pool(nn.Module):
                def forward(self, x):
                    if not is_compiling():
                        warnings.warn("Pool is deprecated; use AdaptivePool", DeprecationWarning)
                    return x.mean(-1)
            """,
            entry="Pool",
            note="the guard uses the is-compiling helper the file already imports",
            lines=[8],
        ),
        Invalid(
            """
            import warnings

            import torch
            from torch import nn

            def is_torchdynamo_compiling():
                return torch.compiler.is_compiling()

            class FusedGelu(nn.Module):
                def forward(self, x):
                    if not is_torchdynamo_compiling():
                        return self.fused(x)
                    else:
                        warnings.warn("compiling: using the Python GELU")
                    return torch.nn.functional.gelu(x)

                def fused(self, x):
                    return torch.nn.functional.gelu(x)
            """,
            entry="FusedGelu",
            note="only compiled runs reach the warning: no guard, it would be dead code",
            lines=[14],
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
        Valid(
            """
            import warnings

            import torch
            from torch import nn

            class Embeddings(nn.Module):
                def forward(self, input_ids):
                    self.warn_if_padding(input_ids)
                    return input_ids * 2

                def warn_if_padding(self, input_ids):
                    compiling = torch.compiler.is_compiling()
                    if compiling:
                        return
                    if (input_ids == 0).any():
                        warnings.warn("pass an attention_mask for padded input")
            """,
            calls="[(torch.randint(0, 4, (2, 8)),)]",
            entry="Embeddings",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func)
        if name in _WARNING_FUNCTIONS:
            report_deferrable(self, node, "warning", WARN_SETTING if name == "warnings.warn" else None)


# Makes `warnings.warn` compile: Dynamo runs it after the graph (measured on torch 2.13).
WARN_SETTING = "torch._dynamo.config.reorderable_logging_functions.add(warnings.warn)"
_WARNING_FUNCTIONS = frozenset({"warnings.warn", "warnings.warn_explicit"})


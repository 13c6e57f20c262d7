"""JIT601 print-in-compiled-region: `print(...)` (or `sys.stdout.write`,
`pprint`) in a compiled region breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.fixes.deferred_logging import report_deferrable
from compile_lint.fixes.guards import StatementCalls
from compile_lint.rules.base import Invalid, Rule, Valid


class PrintInCompiledRegion(StatementCalls, Rule):
    """`print(...)` (or `sys.stdout.write`, `pprint`) in a compiled region breaks the graph.

    Why: printing is a side effect Dynamo cannot record in a graph ("Failed to trace
    builtin operator"), so the graph ends at the call; with `fullgraph=True` compilation
    fails.

    Instead: drop the print, or run it only eagerly under
    `if not torch.compiler.is_compiling():` (compiled runs print nothing), or let Dynamo
    print after the graph: `torch._dynamo.config.reorderable_logging_functions.add(print)`.
    The fix (unsafe) takes the setting where the file has one `torch.compile` call and the
    print reads only strings, constants and tensors that nothing changes in place after it
    (measured on torch 2.13: the deferred print shows the values the graph computed, a
    tensor updated in place afterwards its new value; `x.shape` or an `.item()` still
    break); else the guard.
    """

    code = "JIT601"
    name = "print-in-compiled-region"
    kind = "break"
    gb_type = "Failed to trace builtin operator"
    gb_id = "GB0059"
    gb_types = ("Unsupported method call",)  # the same pattern, reported differently
    fix_applicability = "unsafe"
    config_note = "torch._dynamo.config.reorderable_logging_functions.add(print) makes print compile"
    message = (
        "print() breaks the graph; remove it, or print only eagerly: "
        "`if not torch.compiler.is_compiling(): print(...)`"
    )
    steps = ("if not torch.compiler.is_compiling(): print(...)",
             "torch._dynamo.config.reorderable_logging_functions.add(print)",
             "@torch.compiler.disable")
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Scorer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 2)

                def forward(self, x):
                    scores = self.proj(x).softmax(-1)
                    print("scores", scores)
                    return scores * 2

            model = torch.compile(Scorer())
            """,
            fixed="""
            import torch
            from torch import nn

            class Scorer(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 2)

                def forward(self, x):
                    scores = self.proj(x).softmax(-1)
                    print("scores", scores)
                    return scores * 2

            torch._dynamo.config.reorderable_logging_functions.add(print)
            model = torch.compile(Scorer())
            """,
            entry="Scorer",
            lines=[11],
            note=("A tensor and a string, nothing changed in place after: the fix lets Dynamo print after "
                  "the graph, with the values it computed (the file compiles the model)."),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Accumulate(nn.Module):
                def forward(self, x):
                    total = x.sum(0)
                    print("total", total)
                    total.add_(1)
                    return total

            model = torch.compile(Accumulate())
            """,
            fixed="""
            import torch
            from torch import nn

            class Accumulate(nn.Module):
                def forward(self, x):
                    total = x.sum(0)
                    if not torch.compiler.is_compiling():
                        print("total", total)
                    total.add_(1)
                    return total

            model = torch.compile(Accumulate())
            """,
            entry="Accumulate",
            lines=[7],
            note=("Changed in place after the print: deferred, it would print the new value, so the "
                  "fix prints only eagerly."),
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    h = self.proj(x)
                    # debug: shapes
                    print("encoder out", h.shape)
                    return h.relu()
            """,
            fixed="""
            import torch
            from torch import nn

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    h = self.proj(x)
                    # debug: shapes
                    if not torch.compiler.is_compiling():
                        print("encoder out", h.shape)
                    return h.relu()
            """,
            entry="Encoder",
            lines=[12],
        ),
        Invalid(
            """
            import sys
            from torch import nn

            class Head(nn.Module):
                def _log(self, x):
                    sys.stderr.write(f"head input {tuple(x.shape)}\\n")

                def forward(self, x):
                    self._log(x)
                    return x.softmax(-1)
            """,
            fixed="""
            import sys
            from torch import nn
            import torch

            class Head(nn.Module):
                def _log(self, x):
                    if not torch.compiler.is_compiling():
                        sys.stderr.write(f"head input {tuple(x.shape)}\\n")

                def forward(self, x):
                    self._log(x)
                    return x.softmax(-1)
            """,
            entry="Head",
            lines=[6],
        ),
        Invalid(
            """
            import torch

            @torch.compile(backend="eager")
            def step(x, verbose: bool = True):
                y = x * 2
                if verbose: print("step", y.shape)
                return y
            """,
            entry="step",
            lines=[6],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Encoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)
                    print("built encoder")

                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        print("encoder input", x.shape)
                    return self.proj(x)
            """,
            entry="Encoder",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Block(nn.Module):
                def extra_repr(self):
                    return "block"

                def forward(self, x):
                    name = f"{self.extra_repr()}:{x.shape[-1]}"
                    return x * len(name)
            """,
            entry="Block",
        ),
        Valid(
            """
            import torch
            from torch import nn

            def report(model):
                print(model)

            class Model(nn.Module):
                def forward(self, x):
                    pretty = repr(x.shape)
                    return x + len(pretty)
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func)
        if name in _PRINT_FUNCTIONS:
            report_deferrable(self, node, "print", PRINT_SETTING if name == "builtins.print" else None)


# Makes `print` compile: Dynamo runs it after the graph (measured on torch 2.13).
PRINT_SETTING = "torch._dynamo.config.reorderable_logging_functions.add(print)"
_PRINT_FUNCTIONS = frozenset({"builtins.print", "sys.stdout.write", "sys.stderr.write", "pprint.pprint", "pprint.pp"})


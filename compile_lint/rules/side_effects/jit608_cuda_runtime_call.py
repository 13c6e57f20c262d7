"""JIT608 cuda-runtime-call: `torch.cuda.synchronize()` or a CUDA memory query in a compiled region breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid


class CudaRuntimeCall(Rule):
    """`torch.cuda.synchronize()` or a CUDA memory query in a compiled region breaks the graph.

    Why: `torch.cuda.synchronize` is skipped by Dynamo (measured on an H200 with torch
    2.11: "Attempted to call function marked as skipped"), and memory queries such as
    `torch.cuda.memory_allocated()` return Python ints, not tensors ("torch.* op returned
    non-Tensor"; measured on torch 2.13). `torch.cuda.is_available()`, `empty_cache()`
    and stream/event `synchronize()` compile.

    Instead: synchronise and read memory statistics around the compiled call, e.g. in
    the benchmark loop, not inside forward.
    """

    code = "JIT608"
    name = "cuda-runtime-call"
    kind = "break"
    gb_type = "torch.* op returned non-Tensor"
    gb_id = "GB0208"
    message = (
        "torch.cuda.synchronize()/memory queries break the graph; call them around the "
        "compiled model, not inside it: `out = model(x); torch.cuda.synchronize()`"
    )
    steps = ("out = model(x); torch.cuda.synchronize()",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class Profiled(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.peak = 0

                def forward(self, x):
                    y = self.fc(x)
                    self.peak = max(self.peak, torch.cuda.max_memory_allocated())
                    return y
            """,
            entry="Profiled",
            lines=[12],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    budget = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
                    chunks = 1 if budget >= 0 else 2
                    return torch.cat([c * 2 for c in x.chunk(chunks)])
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
                def forward(self, x):
                    if torch.cuda.is_available() and x.is_cuda:
                        x = x.half()
                    return x * 2
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            def benchmark(model, x):
                torch.cuda.synchronize()
                out = model(x)
                torch.cuda.synchronize()
                return out, torch.cuda.max_memory_allocated()

            class Model(nn.Module):
                def forward(self, x):
                    return x.relu()
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    torch.cpu.synchronize()
                    return x.sigmoid()
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualname(node.func) in _CUDA_RUNTIME_CALLS:
            self.report(node)


_CUDA_RUNTIME_CALLS = frozenset(
    {
        "torch.cuda.synchronize", "torch.cuda.memory_allocated", "torch.cuda.max_memory_allocated",
        "torch.cuda.memory_reserved", "torch.cuda.max_memory_reserved", "torch.cuda.memory_stats",
        "torch.cuda.device_count", "torch.cuda.mem_get_info",
    }
)


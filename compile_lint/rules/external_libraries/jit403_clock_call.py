"""JIT403 clock-call: `time.time()`, `time.perf_counter()`, `time.sleep()` or `datetime.now()` in a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid


class ClockCall(Rule):
    """`time.time()`, `time.perf_counter()`, `time.sleep()` or `datetime.now()` in a compiled region.

    Why: the clock is outside the program's tensors; Dynamo skips the `time` module
    ("Attempted to call function marked as skipped") and `datetime.now` is an unsupported
    method call. Timing inside forward also measures tracing, not the kernels.

    Instead: time the compiled call from outside (with `torch.cuda.synchronize()` around
    it on GPU), or use `torch.profiler.record_function("name")` blocks, which compile.
    """

    code = "JIT403"
    name = "clock-call"
    kind = "break"
    gb_type = "Attempted to call function marked as skipped"
    gb_id = "GB0007"
    gb_types = ("Unsupported method call",)  # the same pattern, reported differently
    message = (
        "reading the clock breaks the graph; time the compiled call from outside, or mark the code with "
        "`torch.profiler.record_function(\"name\")`, which compiles"
    )
    steps = ("torch.profiler.record_function(\"name\")", "out = compiled(x); time.sleep(s)")
    invalid = [
        Invalid(
            """
            import time

            import torch
            from torch import nn

            class TimedBlock(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.elapsed = 0.0

                def forward(self, x):
                    start = time.perf_counter()
                    y = self.fc(x)
                    self.elapsed += time.perf_counter() - start
                    return y
            """,
            entry="TimedBlock",
            lines=[13, 15],
        ),
        Invalid(
            """
            from datetime import datetime

            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    self.stamp = datetime.now().isoformat()
                    return x.relu()
            """,
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import math

            import torch
            from torch import nn

            class TimestepEmbedding(nn.Module):
                def forward(self, timesteps):
                    half = 4
                    freqs = torch.exp(-math.log(10000.0) * torch.arange(half) / half)
                    args = timesteps[:, None] * freqs[None]
                    return torch.cat([args.sin(), args.cos()], dim=-1)
            """,
            calls="[(torch.arange(4).float(),)]",
            entry="TimestepEmbedding",
        ),
        Valid(
            """
            import time

            import torch
            from torch import nn

            def benchmark(model, x):
                start = time.perf_counter()
                model(x)
                return time.perf_counter() - start

            class Model(nn.Module):
                def forward(self, x):
                    with torch.profiler.record_function("model"):
                        return x * 2
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, time_steps: int = 3):
                    for _ in range(time_steps):
                        x = x.tanh()
                    return x
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func) or ""
        if name == "time.sleep":
            self.report(node, message=SLEEP_MESSAGE)
        elif name.startswith("time.") or name in _CLOCK_CALLS:
            self.report(node)


SLEEP_MESSAGE = ("sleeping breaks the graph (Dynamo skips the `time` module); sleep outside the compiled call: "
                 "`out = compiled(x); time.sleep(s)`")


# Kept by hand: the clocks are C functions of `time` / `datetime`, which no trace-rule table
# names one by one (Dynamo skips them: "Attempted to call function marked as skipped",
# measured on torch 2.13).
_CLOCK_CALLS = frozenset(
    {"datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today"}
)


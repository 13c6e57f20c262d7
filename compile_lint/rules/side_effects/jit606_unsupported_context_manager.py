"""JIT606 unsupported-context-manager: `with lock:`, `with warnings.catch_warnings():` or `with torch.random.fork_rng():` breaks."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules._bindings import call_name
from compile_lint.rules._threads import is_thread_primitive
from compile_lint.rules.base import Invalid, Rule, Valid


class UnsupportedContextManager(Rule):
    """`with lock:`, `with warnings.catch_warnings():` or `with torch.random.fork_rng():` breaks.

    Why: Dynamo only traces context managers it knows (`torch.no_grad`, `autocast`,
    `contextlib.nullcontext`, `record_function`...). A threading lock, condition or
    semaphore is an "Unsupported context manager"; `catch_warnings` and `fork_rng` run
    skipped code. The whole frame then falls back to eager.

    Instead: take locks outside the compiled call (compiled code runs in one thread per
    call anyway), set warning filters once at start-up, and seed generators outside.
    """

    code = "JIT606"
    name = "unsupported-context-manager"
    kind = "break"
    gb_type = "Unsupported context manager"
    gb_id = "GB0142"
    gb_types = ("Attempted to call function marked as skipped",)  # the same pattern, reported differently
    message = (
        "this context manager is not traceable and breaks the graph; enter it outside "
        "the compiled region"
    )
    invalid = [
        Invalid(
            """
            import threading

            import torch
            from torch import nn

            class CachedEmbedding(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lock = threading.Lock()
                    self.emb = nn.Linear(8, 8)

                def forward(self, x):
                    with self.lock:
                        out = self.emb(x)
                    return out
            """,
            entry="CachedEmbedding",
            lines=[13],
        ),
        Invalid(
            """
            import threading

            from torch import nn

            _STATS_LOCK = threading.RLock()

            class Model(nn.Module):
                def forward(self, x):
                    with _STATS_LOCK:
                        y = x * 2
                    return y
            """,
            lines=[9],
        ),
        Invalid(
            """
            import warnings

            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        y = x.sqrt()
                    return y
            """,
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import contextlib

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    with torch.no_grad(), contextlib.nullcontext():
                        y = x * 2
                    with torch.autocast("cpu", enabled=False):
                        y = y + 1
                    return y
            """,
        ),
        Valid(
            """
            import contextlib

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    with torch.profiler.record_function("block"):
                        y = x.relu()
                    with contextlib.suppress(ValueError):
                        y = y * 2
                    return y
            """,
        ),
        Valid(
            """
            import threading

            import torch
            from torch import nn

            _LOCK = threading.Lock()

            def load_weights(model):
                with _LOCK:
                    model.loaded = True

            class Model(nn.Module):
                def forward(self, x):
                    lock_free = x * 2
                    return lock_free
            """,
        ),
    ]

    def visit_WithItem(self, node: cst.WithItem) -> None:
        item = node.item
        if isinstance(item, cst.Call) and call_name(self.context, item) in _UNSUPPORTED_CONTEXT_CALLS:
            self.report(item)
        elif is_thread_primitive(self, item):
            self.report(item)


_UNSUPPORTED_CONTEXT_CALLS = frozenset({"warnings.catch_warnings", "torch.random.fork_rng"})


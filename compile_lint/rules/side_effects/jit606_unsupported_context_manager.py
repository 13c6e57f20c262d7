"""JIT606 unsupported-context-manager: `with lock:`, `with warnings.catch_warnings():`,
`with torch.backends.cudnn.flags(...)` and other untraceable context managers break."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.bindings import call_name
from compile_lint.rules.support.threads import is_thread_primitive


class UnsupportedContextManager(Rule):
    """`with lock:`, `with warnings.catch_warnings():` or `with torch.random.fork_rng():` breaks.

    Why: Dynamo only traces context managers it knows (`torch.no_grad`, `autocast`,
    `contextlib.nullcontext`, `record_function`, `sdpa_kernel`...). A threading lock,
    condition or semaphore, or `with torch.device(...)`, is an "Unsupported context
    manager"; `catch_warnings`, `fork_rng`, `torch.backends.cudnn.flags` /
    `mkldnn.flags`, `detect_anomaly` and `redirect_stdout` run skipped code. The whole
    frame then falls back to eager (measured on torch 2.13).

    Instead: take locks outside the compiled call (compiled code runs in one thread per
    call anyway), set warning filters and backend flags once at start-up (or around the
    compiled call), and seed generators outside.
    """

    code = "JIT606"
    name = "unsupported-context-manager"
    kind = "break"
    gb_type = "Unsupported context manager"
    gb_id = "GB0142"
    gb_types = (  # the same pattern, reported differently
        "Attempted to call function marked as skipped",
        "torch.* op returned non-Tensor",
        "Attempted to inline function marked as skipped",
        "unsupported contextlib.* API",
    )
    message = (
        "this context manager is not traceable and breaks the graph; enter it around the "
        "compiled call instead: `with manager: out = compiled(x)`"
    )
    steps = ("with manager: out = compiled(x)",)
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
        Invalid(
            """
            import torch
            from torch import nn

            class AudioEncoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.conv = nn.Conv1d(4, 4, 3, padding=1)

                def forward(self, x):
                    with torch.no_grad(), torch.backends.cudnn.flags(enabled=False):
                        y = self.conv(x)
                    return y.relu()
            """,
            calls="[(torch.randn(2, 4, 8),)]",
            entry="AudioEncoder",
            lines=[10],
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
        Valid(
            """
            import torch
            from torch import nn
            from torch.nn.attention import SDPBackend, sdpa_kernel

            class Attention(nn.Module):
                def forward(self, x):
                    q = x.view(1, 1, 4, 8)
                    with sdpa_kernel(SDPBackend.MATH), torch.set_grad_enabled(False):
                        out = nn.functional.scaled_dot_product_attention(q, q, q)
                    return out.view(4, 8)
            """,
            entry="Attention",
            note="torch's attention-backend and grad-mode context managers are traced",
        ),
    ]

    def visit_WithItem(self, node: cst.WithItem) -> None:
        item = node.item
        if isinstance(item, cst.Call) and call_name(self.context, item) in _UNSUPPORTED_CONTEXT_CALLS:
            self.report(item)
        elif is_thread_primitive(self, item):
            self.report(item)


# Each measured on torch 2.13: fullgraph=True fails and the default compile skips the frame.
_UNSUPPORTED_CONTEXT_CALLS = frozenset({
    "warnings.catch_warnings",
    "torch.random.fork_rng",
    "torch.backends.cudnn.flags",
    "torch.backends.mkldnn.flags",
    "torch.backends.cuda.sdp_kernel",
    "torch.autograd.detect_anomaly",
    "torch.autograd.set_detect_anomaly",
    "torch.autograd.profiler.emit_nvtx",
    "torch.device",
    "contextlib.redirect_stdout",
    "contextlib.redirect_stderr",
})


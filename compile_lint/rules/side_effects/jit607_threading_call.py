"""JIT607 threading-call: Calling `threading` (`lock.acquire()`, `threading.get_ident()`)
in a compiled region breaks."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.bindings import call_name
from compile_lint.rules.support.threads import is_thread_primitive


class ThreadingCall(Rule):
    """Calling `threading` (`lock.acquire()`, `threading.get_ident()`) in a compiled region breaks.

    Why: thread identities and locks are interpreter state Dynamo skips ("Attempted to
    call function marked as skipped" / "Unsupported method call").

    Instead: synchronise outside the compiled call; keep per-thread state out of forward.
    """

    code = "JIT607"
    name = "threading-call"
    kind = "break"
    gb_type = "Unsupported method call"
    gb_id = "GB0156"
    gb_types = ("Attempted to call function marked as skipped",)  # the same pattern, reported differently
    message = ("threading calls break the graph; synchronise around the compiled call instead: "
               "`with lock: out = compiled(x)`")
    steps = ("with lock: out = compiled(x)",)
    invalid = [
        Invalid(
            """
            import threading

            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.mutex = threading.Lock()

                def forward(self, x):
                    self.mutex.acquire()
                    y = x * 2
                    self.mutex.release()
                    return y
            """,
            lines=[11, 13],
        ),
        Invalid(
            """
            import threading

            from torch import nn

            class PerThreadScale(nn.Module):
                def forward(self, x):
                    worker = threading.get_ident() % 2
                    return x * (worker + 1)
            """,
            entry="PerThreadScale",
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, mask):
                    seen = set()
                    seen.clear()
                    return x.masked_fill(mask, 0.0)
            """,
            calls="[(torch.randn(4, 8), torch.zeros(4, 8, dtype=torch.bool))]",
        ),
        Valid(
            """
            import threading

            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.ready = threading.Event()
                    self.ready.set()

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
                    out = {}
                    out.setdefault("y", x * 2)
                    return out["y"]
            """,
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._with_items: set[cst.BaseExpression] = set()

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self._with_items.add(node.item)  # JIT606 reports `with threading.Lock():`

    def visit_Call(self, node: cst.Call) -> None:
        if node in self._with_items:
            return
        name = call_name(self.context, node) or ""
        if name.startswith("threading."):
            self.report(node)
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _THREAD_METHODS:
            if is_thread_primitive(self, func.value):
                self.report(node)


_THREAD_METHODS = frozenset({"acquire", "release", "locked", "wait", "notify", "notify_all", "set", "clear", "is_set"})


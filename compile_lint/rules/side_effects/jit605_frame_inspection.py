"""JIT605 frame-inspection: Reading Python frames or source (`inspect.stack()`, `sys._getframe`, `traceback`) breaks."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid


class FrameInspection(Rule):
    """Reading Python frames or source (`inspect.stack()`, `sys._getframe`, `traceback`) breaks.

    Why: frames and source files are interpreter state Dynamo does not model; these
    functions are skipped ("Attempted to call function marked as skipped"). Signature
    introspection is fine: `inspect.signature`, `inspect.getfullargspec`,
    `inspect.isfunction` and friends compile on torch 2.13.

    Instead: compute caller/source information once, outside the compiled region.
    """

    code = "JIT605"
    name = "frame-inspection"
    kind = "break"
    gb_type = "Attempted to call function marked as skipped"
    gb_id = "GB0007"
    message = (
        "inspecting frames or source breaks the graph; compute it once outside the "
        "compiled region and keep it, e.g. in `__init__`: `self.caller = inspect.stack()[1].function`"
    )
    steps = ("self.caller = inspect.stack()[1].function",)
    invalid = [
        Invalid(
            """
            import inspect

            from torch import nn

            class Traced(nn.Module):
                def forward(self, x):
                    caller = inspect.stack()[1].function
                    return x * (2 if caller else 1)
            """,
            entry="Traced",
            lines=[7],
        ),
        Invalid(
            """
            import traceback

            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    self.where = traceback.format_stack(limit=2)
                    return x.relu()
            """,
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import inspect

            import torch
            from torch import nn

            class Wrapper(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x, **kwargs):
                    accepted = inspect.signature(self.fc.forward).parameters
                    extra = {k: v for k, v in kwargs.items() if k in accepted}
                    return self.fc(x, **extra)
            """,
            entry="Wrapper",
        ),
        Valid(
            """
            import inspect

            import torch
            from torch import nn

            class Model(nn.Module):
                def helper(self, a, b=2):
                    return a * b

                def forward(self, x):
                    n = len(inspect.getfullargspec(self.helper).args)
                    return self.helper(x) * n if inspect.ismethod(self.helper) else x
            """,
        ),
        Valid(
            """
            import inspect
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    stack = torch.stack([x, x])
                    return stack.sum(0)
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func) or ""
        if name in _FRAME_FUNCTIONS or name.startswith("traceback."):
            self.report(node)


_FRAME_FUNCTIONS = frozenset(
    {
        "inspect.stack", "inspect.currentframe", "inspect.getframeinfo", "inspect.getouterframes",
        "inspect.getinnerframes", "inspect.trace", "inspect.getsource", "inspect.getsourcelines",
        "inspect.getsourcefile", "inspect.getfile", "sys._getframe", "sys.exc_info",
    }
)


"""JIT406 copy-in-compiled-region: `copy.copy(...)` anything, or `copy.deepcopy` of a
tensor or module, breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid


class CopyInCompiledRegion(Rule):
    """`copy.copy(...)` anything, or `copy.deepcopy` of a tensor or module, breaks the graph.

    Why: `copy.deepcopy` of a tensor or module is unsupported ("Attempted to copy.deepcopy
    a tensor"), and `copy.copy` is skipped for every argument on torch 2.13, plain lists
    and dicts included. `copy.deepcopy` of a plain dict or list of Python values compiles.

    Instead: `t.clone()` (add `.detach()` to cut the graph), `dict(d)` / `d.copy()` /
    `list(xs)` for shallow copies, and copy modules once outside the compiled region.
    """

    code = "JIT406"
    name = "copy-in-compiled-region"
    kind = "break"
    gb_type = "Attempted to copy.deepcopy a tensor"
    gb_id = "GB4198"
    gb_types = ("Attempted to call function marked as skipped",)  # the same pattern, reported differently
    fix_applicability = "safe"
    message = (
        "copy.copy / copy.deepcopy of a tensor or module breaks the graph; use `t.clone()`, "
        "`dict(d)` or `list(xs)`"
    )
    steps = ("t.clone()", "dict(d)", "list(xs)")
    invalid = [
        Invalid(
            """
            import copy

            import torch
            from torch import nn

            class EmaTarget(nn.Module):
                def forward(self, x):
                    target = copy.deepcopy(x)
                    return x - target.mean()
            """,
            entry="EmaTarget",
            lines=[8],
        ),
        Invalid(
            """
            import copy

            from torch import nn

            class Wrapper(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.head = nn.Linear(8, 8)

                def forward(self, x):
                    frozen = copy.deepcopy(self.head)
                    return frozen(x)
            """,
            entry="Wrapper",
            lines=[11],
        ),
        Invalid(
            """
            import copy

            from torch import nn

            class Model(nn.Module):
                def forward(self, x, scale: float = 2.0):
                    options = {"scale": scale, "bias": 1.0}
                    local = copy.copy(options)
                    local["bias"] = 0.0
                    return x * local["scale"] + local["bias"]
            """,
            fixed="""
            import copy

            from torch import nn

            class Model(nn.Module):
                def forward(self, x, scale: float = 2.0):
                    options = {"scale": scale, "bias": 1.0}
                    local = options.copy()
                    local["bias"] = 0.0
                    return x * local["scale"] + local["bias"]
            """,
            lines=[8],
        ),
    ]
    valid = [
        Valid(
            """
            import copy

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    defaults = copy.deepcopy({"scale": 2.0, "shift": [1.0]})
                    return x * defaults["scale"] + defaults["shift"][0]
            """,
        ),
        Valid(
            """
            import copy

            import torch
            from torch import nn

            class EmaTarget(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.online = nn.Linear(8, 8)
                    self.target = copy.deepcopy(self.online)

                def forward(self, x):
                    return self.online(x) - self.target(x).detach()
            """,
            entry="EmaTarget",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    snapshot = x.detach().clone()
                    options = {"scale": 2.0}.copy()
                    return (x - snapshot) + x * options["scale"]
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func)
        if name not in ("copy.copy", "copy.deepcopy") or len(node.args) != 1:
            return
        value = node.args[0].value
        kind = self.context.kind(value)
        if name == "copy.copy":
            fix = None
            if kind is Kind.DICT and isinstance(value, (cst.Name, cst.Attribute)):
                call = cst.Call(func=cst.Attribute(value=value, attr=cst.Name("copy")))
                fix = FixPlan([(node, call)], "Use d.copy()", "safe")
            self.report(node, fix=fix)
        elif kind in (Kind.TENSOR, Kind.MODULE, Kind.SELF) or _holds_tensor(self, value):
            self.report(node)


def _holds_tensor(rule: Rule, value: cst.BaseExpression) -> bool:
    """A list/tuple/dict display with a tensor among its elements."""
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return any(not isinstance(el, cst.StarredElement) and rule.context.kind(el.value) is Kind.TENSOR
                   for el in value.elements)
    if isinstance(value, cst.Dict):
        return any(isinstance(el, cst.DictElement) and rule.context.kind(el.value) is Kind.TENSOR
                   for el in value.elements)
    return False


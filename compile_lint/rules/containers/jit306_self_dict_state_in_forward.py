"""JIT306 self-dict-state-in-forward: A dict on `self` that forward counts in or grows
(`self.stats["calls"] += 1`) recompiles every call."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.syntax.walk import iter_nodes
from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.self_state import GROW_METHODS, reset_in_traced_method, self_container
from compile_lint.rules.support.syntax import self_attribute


class SelfDictStateInForward(Rule):
    """A dict on `self` that forward counts in or grows (`self.stats["calls"] += 1`) recompiles every call.

    Why: Dynamo guards on the Python numbers and the key set of every dict it reads.
    A counter kept in `self.stats`, a key made from `len(self.cache)`, or a list in the
    dict that forward appends to, has a new value at each call, so each call fails the
    guard and compiles again (eager after the recompile limit, 8). Storing tensors or
    shapes under fixed keys (`self.cache["last"] = x.detach()`) is fine.

    Instead: keep counters as tensors (`self.register_buffer("calls", torch.zeros(()))`,
    then `self.calls += 1`), or count outside the compiled forward. There is no
    automatic fix: the dict is state that other code reads.
    """

    code = "JIT306"
    name = "self-dict-state-in-forward"
    kind = "recompile"
    message = (
        "`self.{attr}` changes its Python contents on every call: Dynamo guards on them, so each "
        "call recompiles (eager after 8); keep counters in a tensor buffer updated in place "
        "(`self.register_buffer(\"calls\", torch.zeros(()))`, then `self.calls.add_(1)`), or outside forward"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class RoutingStats(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.router = nn.Linear(8, 2)
                    self.stats = {"calls": 0}

                def forward(self, x):
                    self.stats["calls"] += 1
                    return self.router(x).softmax(-1)
            """,
            calls="[(torch.randn(4, 8),)] * 4",
            entry="RoutingStats",
            lines=[11],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class StepCache(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.cache = {}

                def forward(self, x):
                    self.cache[len(self.cache)] = x.detach()
                    return x * 2
            """,
            calls="[(torch.randn(4, 8),)] * 4",
            entry="StepCache",
            lines=[10],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class LossTracker(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.history = dict()

                def forward(self, x):
                    loss = x.pow(2).mean()
                    self.history.setdefault("loss", []).append(loss.detach())
                    return loss
            """,
            calls="[(torch.randn(4, 8),)] * 4",
            entry="LossTracker",
            lines=[11],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class LastActivation(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.cache = {}

                def forward(self, x):
                    h = self.fc(x)
                    self.cache["last"] = h.detach()
                    self.cache["rows"] = x.shape[0]
                    return h
            """,
            entry="LastActivation",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class RunningMean(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.stats = {}
                    self.register_buffer("calls", torch.zeros(()))

                def forward(self, x):
                    self.calls += 1
                    self.stats["sum"] = self.stats.get("sum", 0) + x.sum()
                    return x - self.stats["sum"] / self.calls
            """,
            entry="RunningMean",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class PerLevel(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.levels = ["p3", "p4"]
                    self.outputs = {}

                def forward(self, x):
                    self.outputs = {}
                    for i, name in enumerate(self.levels):
                        self.outputs[name] = x * (i + 1)
                        self.outputs.setdefault("all", []).append(x)
                    return torch.stack(self.outputs["all"]).sum(0) + self.outputs["p4"]
            """,
            entry="PerLevel",
        ),
    ]

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Subscript):
            attr = self_attribute(node.target.value)
            if attr is not None and not self.context.kind(node.value).tensorish:
                self._check(node, attr)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if not isinstance(target.target, cst.Subscript):
                continue
            attr = self_attribute(target.target.value)
            if attr is None:
                continue
            key_reads = _reads_attribute(target.target.slice[0], attr) if target.target.slice else False
            counts = _reads_attribute(node.value, attr) and not self.context.kind(node.value).tensorish
            if key_reads or counts:
                self._check(node, attr)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        if func.attr.value in GROW_METHODS:
            attr = _self_dict_subscript(func.value)
            if attr is not None:
                self._check(node, attr)
        elif func.attr.value == "update":
            attr = self_attribute(func.value)
            if attr is not None and any(_reads_attribute(arg.value, attr) for arg in node.args):
                self._check(node, attr)

    def _check(self, node: cst.CSTNode, attr: str) -> None:
        cls = self.context.owner_class
        if cls is None or not self_container(self, cls, attr, (cst.Dict, cst.DictComp), "dict"):
            return
        if not reset_in_traced_method(self, cls, attr):
            self.report(node, self.message.format(attr=attr))


def _reads_attribute(expr: cst.CSTNode, attr: str) -> bool:
    """True when `expr` reads `self.attr` anywhere inside."""
    return any(isinstance(node, cst.Attribute) and self_attribute(node) == attr for node in iter_nodes(expr))


def _self_dict_subscript(expr: cst.BaseExpression) -> Optional[str]:
    """`NAME` when `expr` is `self.NAME[...]` or `self.NAME.setdefault(...)`."""
    if isinstance(expr, cst.Subscript):
        return self_attribute(expr.value)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "setdefault":
        return self_attribute(expr.func.value)
    return None


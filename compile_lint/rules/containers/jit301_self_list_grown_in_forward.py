"""JIT301 self-list-grown-in-forward: A list on `self` grown in forward
(`self.cache.append(x)`) recompiles on every call."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.self_state import GROW_METHODS, reset_in_traced_method, self_container
from compile_lint.rules.support.syntax import self_attribute


class SelfListGrownInForward(Rule):
    """A list on `self` grown in forward (`self.cache.append(x)`) recompiles on every call.

    Why: Dynamo guards on the length of every list it reads, and a list that lives on
    the module is longer at each call, so each call fails the guard and compiles again;
    after `torch._dynamo.config.recompile_limit` (8) the forward runs eagerly. The list
    also keeps every stored tensor alive.

    Instead: return the values from forward (or collect them outside the compiled
    region, e.g. in the training loop). A list that forward rebinds (`self.feats = []`)
    or clears before it returns does not grow across calls and is not flagged; neither
    is a bounded window that forward also `pop`s (it recompiles until the window is
    full, then stays). There is no automatic fix: the list is state other code may read
    between calls, so keeping it local would change what the program does.
    """

    code = "JIT301"
    name = "self-list-grown-in-forward"
    kind = "recompile"
    message = (
        "`self.{attr}` grows on every call: Dynamo guards on its length, so each call "
        "recompiles (eager after 8); return the values from forward instead"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class AttentionProbe(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.qk = nn.Linear(8, 8)
                    self.attention_maps = []

                def forward(self, x):
                    scores = self.qk(x) @ x.transpose(-1, -2)
                    probs = scores.softmax(-1)
                    self.attention_maps.append(probs.detach())
                    return probs @ x
            """,
            calls="[(torch.randn(2, 4, 8),)] * 4",
            entry="AttentionProbe",
            lines=[13],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class StreamingEncoder(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)
                    self.history = []

                def _remember(self, h):
                    self.history += [h]

                def forward(self, chunk):
                    h = self.proj(chunk)
                    self._remember(h)
                    return h + len(self.history)
            """,
            calls="[(torch.randn(4, 8),)] * 4",
            entry="StreamingEncoder",
            lines=[11],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Policy(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.affine = nn.Linear(8, 4)
                    self.saved_log_probs = []

                def forward(self, state):
                    probs = self.affine(state).softmax(-1)
                    self.saved_log_probs.append(probs.log())
                    return probs
            """,
            calls="[(torch.randn(1, 8),)] * 4",
            entry="Policy",
            lines=[12],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class FeaturePyramid(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.stages = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
                    self.features = []

                def forward(self, x):
                    self.features = []
                    for stage in self.stages:
                        x = stage(x)
                        self.features.append(x)
                    return torch.stack(self.features)
            """,
            entry="FeaturePyramid",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class DenseBlock(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = nn.ModuleList([nn.Linear(8 * (i + 1), 8) for i in range(3)])

                def forward(self, x):
                    features = [x]
                    for layer in self.layers:
                        features.append(layer(torch.cat(features, -1)))
                    return torch.cat(features, -1)
            """,
            entry="DenseBlock",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class HookedBackbone(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
                    self.outputs = []

                def forward(self, x):
                    for block in self.blocks:
                        x = block(x)
                        self.outputs.append(x)
                    merged = torch.cat(self.outputs, -1)
                    self.outputs.clear()
                    return merged
            """,
            entry="HookedBackbone",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class SlidingContext(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.window = []

                def forward(self, x):
                    self.window.append(x)
                    if len(self.window) > 2:
                        self.window.pop(0)
                    return torch.stack(self.window).mean(0)
            """,
            entry="SlidingContext",
            note="bounded: recompiles until the window is full, then stable",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in GROW_METHODS:
            self._check(node, func.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign):
            self._check(node, node.target)

    def _check(self, node: cst.CSTNode, target: cst.BaseExpression) -> None:
        attr = self_attribute(target)
        cls = self.context.owner_class
        if attr is None or cls is None or not self_container(self, cls, attr, (cst.List, cst.ListComp), "list"):
            return
        if not reset_in_traced_method(self, cls, attr):
            self.report(node, self.message.format(attr=attr))


"""JIT611 compiler-disabled-call: A call to a `@torch.compiler.disable` function from a
compiled region (an intended break)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.analysis.syntax.imports import dotted_name
from compile_lint.rules.base import Invalid, Rule, Valid


class CompilerDisabledCall(Rule):
    """A call to a `@torch.compiler.disable` function from a compiled region (an intended break).

    Why: Dynamo ends the graph before the call, runs the function eagerly and starts a
    new graph after it ("Skip calling `torch.compiler.disable()`d function"). That is
    usually deliberate, so this perf rule is off by default; enable it to see where
    compiled graphs are split.

    Instead: keep such calls out of hot loops, or make the function traceable (or a
    custom op) and drop the decorator.
    """

    code = "JIT611"
    name = "compiler-disabled-call"
    kind = "perf"
    default_enabled = False
    gb_type = "Skip calling `torch.compiler.disable()`d function"
    gb_id = "GB0098"
    message = (
        "calls a @torch.compiler.disable function: the graph is split here; keep the call out of hot "
        "loops, or make the function traceable and drop the decorator"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            @torch.compiler.disable
            def host_nms(boxes):
                return boxes[boxes[:, 0] > 0]

            class Detector(nn.Module):
                def forward(self, boxes):
                    keep = host_nms(boxes)
                    return keep * 2
            """,
            entry="Detector",
            lines=[10],
        ),
        Invalid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                @torch._dynamo.disable
                def _debug_stats(self, x):
                    return x.mean()

                def forward(self, x):
                    stats = self._debug_stats(x)
                    return x - stats
            """,
            lines=[10],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            @torch.compiler.disable
            def host_nms(boxes):
                return boxes[boxes[:, 0] > 0]

            def postprocess(model, boxes):
                return host_nms(model(boxes))

            class Detector(nn.Module):
                def forward(self, boxes):
                    return boxes * 2
            """,
            entry="Detector",
        ),
        Valid(
            """
            import torch
            from torch import nn

            @torch.compiler.disable
            def debug_dump(x):
                print(x)

            class Model(nn.Module):
                def forward(self, x):
                    if not torch.compiler.is_compiling():
                        debug_dump(x)
                    return x * 2
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            def host_nms(boxes):
                return boxes * 2

            class Model(nn.Module):
                def forward(self, x):
                    return host_nms(x)
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        target: Optional[cst.FunctionDef] = None
        regions = self.context.regions
        if isinstance(func, cst.Name):
            target = regions.disabled.get(func.value)
            if target is not None and target in regions.owner_class:
                target = None  # a method of that name, not this free function
        elif (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
              and func.value.value == "self"):
            target = regions.disabled.get(func.attr.value)
            if target is not None and target not in regions.owner_class:
                target = None
        if target is not None or self._disabled_elsewhere(func):
            self.report(node)

    def _disabled_elsewhere(self, func: cst.BaseExpression) -> bool:
        """True when the project index resolved this traced call to a disabled function of another file."""
        reach = self.context.reach
        function = self.context.function
        if reach is None or function is None or not reach.disabled_calls:
            return False
        spelled = dotted_name(func)
        qualname = self.context.regions.qualnames.get(function)
        return spelled is not None and (qualname, spelled) in reach.disabled_calls


"""JIT610 module-hook-in-forward: Registering a module hook (`register_forward_hook`,
...) in a compiled region breaks."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.kinds.facts import Kind
from compile_lint.rules.base import Invalid, Rule, Valid


class ModuleHookInForward(Rule):
    """Registering a module hook (`register_forward_hook`, ...) in a compiled region breaks.

    Why: registering mutates the module's hook dictionaries, which Dynamo cannot replay
    ("setattr() on unsupported type"). Tensor hooks (`t.register_hook(fn)`) are fine on
    torch 2.13 and are not flagged.

    Instead: register module hooks once, after building the model and before compiling.
    """

    code = "JIT610"
    name = "module-hook-in-forward"
    kind = "break"
    gb_type = "setattr() on unsupported type"
    gb_id = "GB0467"
    message = ("registering a module hook in forward breaks the graph; register it once before compiling: "
               "`model.register_forward_hook(hook)`, then `torch.compile(model)`")
    steps = ("model.register_forward_hook(hook)",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class FeatureTap(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.backbone = nn.Linear(8, 8)
                    self.features = {}

                def forward(self, x):
                    handle = self.backbone.register_forward_hook(
                        lambda module, args, out: self.features.update(out=out)
                    )
                    y = self.backbone(x)
                    handle.remove()
                    return y
            """,
            entry="FeatureTap",
            lines=[11],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            class FeatureTap(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.backbone = nn.Linear(8, 8)
                    self.features = {}
                    self.backbone.register_forward_hook(self._save)

                def _save(self, module, args, out):
                    self.features["out"] = out

                def forward(self, x):
                    return self.backbone(x)
            """,
            entry="FeatureTap",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class GradScale(nn.Module):
                def forward(self, x):
                    y = x * 2
                    if y.requires_grad:
                        y.register_hook(lambda grad: grad * 0.5)
                    return y
            """,
            entry="GradScale",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("scale", torch.ones(8))

                def forward(self, x):
                    return x * self.scale
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = self.context.qualname(func) or ""
        if name.startswith(_GLOBAL_MODULE_HOOKS):
            self.report(node)
        elif isinstance(func, cst.Attribute) and func.attr.value in _MODULE_HOOK_METHODS:
            if self.context.kind(func.value) is not Kind.TENSOR:
                self.report(node)


_MODULE_HOOK_METHODS = frozenset(
    {
        "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
        "register_full_backward_pre_hook", "register_backward_hook",
        "register_state_dict_pre_hook", "register_load_state_dict_post_hook",
    }
)


_GLOBAL_MODULE_HOOKS = ("torch.nn.modules.module.register_module_", "torch.nn.modules.register_module_")


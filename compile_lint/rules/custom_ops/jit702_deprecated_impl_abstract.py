"""JIT702 deprecated-impl-abstract: `torch.library.impl_abstract` is deprecated: use `torch.library.register_fake`."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.fixes.guards import spell
from compile_lint.fixes.plan import FixPlan
from compile_lint.rules.base import Invalid, Rule, Valid


class DeprecatedImplAbstract(Rule):
    """`torch.library.impl_abstract` is deprecated: use `torch.library.register_fake`.

    Why: `impl_abstract` was renamed to `register_fake` in PyTorch 2.4. On torch 2.13
    it still works (it forwards to `register_fake`) but warns at every registration
    ("we will remove `torch.library.impl_abstract` in a future version"); once it is
    removed the op loses its fake implementation and every compiled caller fails.
    This is a deprecation, not a graph break today, so it is reported as a warning.

    Instead: `torch.library.register_fake(op)`, which takes the same arguments. The fix
    (safe) renames `torch.library.impl_abstract(...)` calls and decorators; a call that
    passes the op as `qualname=` is left alone, since `register_fake` takes it only
    positionally.
    """

    code = "JIT702"
    name = "deprecated-impl-abstract"
    kind = "perf"
    fix_applicability = "safe"
    scope = "module"
    trigger_words = ("impl_abstract",)
    torch_versions = ">=2.4"
    message = (
        "torch.library.impl_abstract is deprecated (renamed in torch 2.4, to be removed); "
        "use torch.library.register_fake with the same arguments"
    )
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit702::rms_scale", mutates_args=())
            def rms_scale(x: torch.Tensor, eps: float) -> torch.Tensor:
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

            @torch.library.impl_abstract("demo_jit702::rms_scale")
            def _(x, eps):
                return torch.empty_like(x)

            class RMSNorm(nn.Module):
                def forward(self, x):
                    return rms_scale(x, 1e-6)
            """,
            fixed="""
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit702::rms_scale", mutates_args=())
            def rms_scale(x: torch.Tensor, eps: float) -> torch.Tensor:
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

            @torch.library.register_fake("demo_jit702::rms_scale")
            def _(x, eps):
                return torch.empty_like(x)

            class RMSNorm(nn.Module):
                def forward(self, x):
                    return rms_scale(x, 1e-6)
            """,
            entry="RMSNorm",
            lines=[8],
        ),
        Invalid(
            """
            import torch
            import torch.library as library

            @library.custom_op("demo_jit702b::double", mutates_args=())
            def double(x: torch.Tensor) -> torch.Tensor:
                return x * 2

            library.impl_abstract("demo_jit702b::double", lambda x: torch.empty_like(x))

            @torch.compile(backend="eager")
            def twice(x):
                return torch.ops.demo_jit702b.double(x) + 1
            """,
            fixed="""
            import torch
            import torch.library as library

            @library.custom_op("demo_jit702b::double", mutates_args=())
            def double(x: torch.Tensor) -> torch.Tensor:
                return x * 2

            library.register_fake("demo_jit702b::double", lambda x: torch.empty_like(x))

            @torch.compile(backend="eager")
            def twice(x):
                return torch.ops.demo_jit702b.double(x) + 1
            """,
            entry="twice",
            lines=[8],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit702v::rms_scale", mutates_args=())
            def rms_scale(x: torch.Tensor, eps: float) -> torch.Tensor:
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

            @torch.library.register_fake("demo_jit702v::rms_scale")
            def _(x, eps):
                return torch.empty_like(x)

            class RMSNorm(nn.Module):
                def forward(self, x):
                    return rms_scale(x, 1e-6)
            """,
            entry="RMSNorm",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Registry:
                def impl_abstract(self, name):
                    return lambda fn: fn

            registry = Registry()

            @registry.impl_abstract("not a torch op")
            def shape_rule(x):
                return x

            class Head(nn.Module):
                def forward(self, x):
                    return shape_rule(x) * 2
            """,
            entry="Head",
        ),
        Valid(
            """
            import torch
            from torch import nn

            @torch.library.custom_op("demo_jit702v::softcap", mutates_args=())
            def softcap(x: torch.Tensor, cap: float) -> torch.Tensor:
                return torch.tanh(x / cap) * cap

            @softcap.register_fake
            def _(x, cap):
                return torch.empty_like(x)

            class Logits(nn.Module):
                def forward(self, x):
                    return softcap(x, 30.0)
            """,
            entry="Logits",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualname(node.func) != "torch.library.impl_abstract":
            return
        fix = None
        if not any(arg.keyword is not None and arg.keyword.value == "qualname" for arg in node.args):
            fix = self._rename(node.func)
        self.report(node.func, fix=fix)

    def visit_Decorator(self, node: cst.Decorator) -> None:
        # A bare `@impl_abstract` is not a call; the usual `@impl_abstract("ns::op")` is
        # reported by visit_Call.
        if isinstance(node.decorator, (cst.Name, cst.Attribute)):
            if self.context.qualname(node.decorator) == "torch.library.impl_abstract":
                self.report(node.decorator)

    def _rename(self, func: cst.BaseExpression) -> Optional[FixPlan]:
        if isinstance(func, cst.Attribute):
            new: cst.BaseExpression = func.with_changes(attr=cst.Name("register_fake"))
            imports: tuple[str, ...] = ()
        else:
            spelled, imports = spell(self.context, "torch.library.register_fake")
            new = cst.parse_expression(spelled)
        return FixPlan([(func, new)], "Use torch.library.register_fake", "safe", imports)


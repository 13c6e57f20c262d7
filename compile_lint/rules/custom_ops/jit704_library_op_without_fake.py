"""JIT704 library-op-without-fake: An op defined with `torch.library.Library.define` and
only device kernels breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.file.compile_spellings import call_or_alias_pattern
from compile_lint.rules.base import Invalid, Rule, Valid


class LibraryOpWithoutFake(Rule):
    """An op defined with `torch.library.Library.define` and only device kernels breaks the graph.

    Why: Dynamo runs every op on fake tensors to learn output shapes. An op whose only
    kernels are for real devices ("CPU", "CUDA") has none that accepts fake tensors,
    so Dynamo stops the graph at each call ("Operator does not support running with
    fake tensors"); with `fullgraph=True` compilation fails. A "Meta" kernel, a
    `register_fake`, or a "CompositeExplicitAutograd"/"CompositeImplicitAutograd"
    kernel (written in torch ops) all make it traceable (measured on torch 2.13).

    Instead: add `torch.library.register_fake("ns::op")` (or `lib.impl("op", fn,
    "Meta")`) returning empty outputs of the right shape; for new code prefer
    `torch.library.custom_op`. Ops whose kernels are registered in another file are
    not reported.
    """

    code = "JIT704"
    name = "library-op-without-fake"
    kind = "break"
    gb_type = "Operator does not support running with fake tensors"
    gb_id = "GB0090"
    scope = "module"
    trigger_words = ("define",)
    trigger_pattern = call_or_alias_pattern("define")  # `lib.define(...)` or `torch.library.define(...)`
    message = (
        "op `{op}` has only device kernels ({keys}): Dynamo cannot run it on fake tensors and breaks the graph "
        "at every call; add `@torch.library.register_fake(\"{op}\")` on a function returning empty outputs, "
        "or a \"Meta\" kernel"
    )
    steps = ("@torch.library.register_fake(\"{op}\")",)
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            lib = torch.library.Library("demo_jit704", "FRAGMENT")
            lib.define("bias_gelu(Tensor x, Tensor bias) -> Tensor")
            lib.impl("bias_gelu", lambda x, bias: torch.nn.functional.gelu(x + bias), "CPU")


            class FusedMLP(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.bias = nn.Parameter(torch.zeros(8))

                def forward(self, x):
                    return torch.ops.demo_jit704.bias_gelu(self.fc(x), self.bias)
            """,
            entry="FusedMLP",
            lines=[5],
        ),
        Invalid(
            """
            import torch

            torch.library.define("demo_jit704b::clip_grad_norm", "(Tensor x, float limit) -> Tensor")

            @torch.library.impl("demo_jit704b::clip_grad_norm", "cpu")
            def _clip_cpu(x, limit):
                return x.clamp(-limit, limit)

            @torch.compile(backend="eager")
            def step(x):
                return torch.ops.demo_jit704b.clip_grad_norm(x, 1.0) * 2
            """,
            entry="step",
            lines=[3],
        ),
    ]
    valid = [
        Valid(
            """
            import torch
            from torch import nn

            lib = torch.library.Library("demo_jit704v", "FRAGMENT")
            lib.define("bias_gelu(Tensor x, Tensor bias) -> Tensor")
            lib.impl("bias_gelu", lambda x, bias: torch.nn.functional.gelu(x + bias), "CPU")
            lib.impl("bias_gelu", lambda x, bias: torch.empty_like(x), "Meta")


            class FusedMLP(nn.Module):
                def forward(self, x):
                    return torch.ops.demo_jit704v.bias_gelu(x, x)
            """,
            entry="FusedMLP",
        ),
        Valid(
            """
            import torch
            from torch import nn

            lib = torch.library.Library("demo_jit704v2", "FRAGMENT")
            lib.define("scale(Tensor x, float s) -> Tensor")
            lib.impl("scale", lambda x, s: x * s, "CompositeExplicitAutograd")


            class Scale(nn.Module):
                def forward(self, x):
                    return torch.ops.demo_jit704v2.scale(x, 2.0)
            """,
            entry="Scale",
        ),
        Valid(
            """
            import torch

            torch.library.define("demo_jit704v3::clip", "(Tensor x, float limit) -> Tensor")

            @torch.library.impl("demo_jit704v3::clip", "cpu")
            def _clip_cpu(x, limit):
                return x.clamp(-limit, limit)

            @torch.library.register_fake("demo_jit704v3::clip")
            def _clip_fake(x, limit):
                return torch.empty_like(x)

            @torch.compile(backend="eager")
            def step(x):
                return torch.ops.demo_jit704v3.clip(x, 1.0) * 2
            """,
            entry="step",
        ),
    ]

    def visit_Module(self, node: cst.Module) -> None:
        ops = self.context.library_ops
        for op, define in ops.defined.items():
            keys = ops.keys.get(op)
            if not keys or "?" in keys or keys & FAKE_CAPABLE_KEYS or op in ops.fake:
                continue
            self.report(define, self.message.format(op=op, keys=", ".join(sorted(keys))))


# Dispatch keys whose kernel also serves fake tensors: with one of them Dynamo can trace the op.
FAKE_CAPABLE_KEYS = frozenset({"meta", "compositeexplicitautograd", "compositeimplicitautograd"})

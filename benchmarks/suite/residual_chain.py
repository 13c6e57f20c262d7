"""Reuse-heavy workload: a residual add + RMSNorm chain around an opaque custom op.

Each layer's `residual = x + residual` feeds both the RMSNorm reduction and its scale,
and the opaque op (a stand-in for a fused attention or all-reduce kernel) forces
Inductor to materialize its input, which is where the reuse decision matters.
"""

import torch


@torch.library.custom_op("compile_lint_bench::opaque_mix", mutates_args=())
def opaque_mix(x: torch.Tensor) -> torch.Tensor:
    """An op Inductor cannot see into (like a custom kernel)."""
    return x * 0.5 + 0.25


@opaque_mix.register_fake
def _(x):
    return torch.empty_like(x)


class ResidualRMSNormChain(torch.nn.Module):
    """`layers` x (residual add, RMSNorm, opaque op)."""

    def __init__(self, hidden=1024, layers=4, eps=1e-6):
        super().__init__()
        self.weights = torch.nn.ParameterList(
            [torch.nn.Parameter(1.0 + 0.1 * torch.randn(hidden)) for _ in range(layers)])
        self.eps = eps

    def forward(self, x, residual):
        for weight in self.weights:
            residual = x + residual
            variance = residual.float().pow(2).mean(-1, keepdim=True)
            normed = (residual.float() * torch.rsqrt(variance + self.eps)).to(x.dtype) * weight
            x = opaque_mix(normed)
        return x, residual


def make(tokens=(16, 256, 4096), hidden=1024, device="cpu", dtype=torch.float32):
    """The model and one call per token count."""
    torch.manual_seed(0)
    model = ResidualRMSNormChain(hidden).to(device=device, dtype=dtype)
    calls = [(torch.randn(n, hidden, device=device, dtype=dtype),
              torch.randn(n, hidden, device=device, dtype=dtype)) for n in tokens]
    return model, calls


def make_bf16(device="cpu"):
    """The serving setting: bf16, token counts from decode-sized to prefill-sized."""
    return make(tokens=(16, 256, 4096), hidden=4096, device=device, dtype=torch.bfloat16)


def make_small(device="cpu", dtype=torch.float32):
    """A CPU-test-sized version."""
    return make(tokens=(8,), hidden=64, device=device, dtype=dtype)

"""A pre-norm transformer block (RMSNorm, attention via SDPA, SwiGLU MLP) at several token counts."""

import torch
import torch.nn.functional as F


class RMSNorm(torch.nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype) * self.weight


class SwiGLU(torch.nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.gate_up = torch.nn.Linear(hidden, 2 * intermediate, bias=False)
        self.down = torch.nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class Block(torch.nn.Module):
    def __init__(self, hidden=1024, heads=16, intermediate=2816):
        super().__init__()
        self.heads = heads
        self.attn_norm = RMSNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden, bias=False)
        self.out = torch.nn.Linear(hidden, hidden, bias=False)
        self.mlp_norm = RMSNorm(hidden)
        self.mlp = SwiGLU(hidden, intermediate)

    def forward(self, x):
        batch, tokens, hidden = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).chunk(3, dim=-1)
        q, k, v = (t.view(batch, tokens, self.heads, hidden // self.heads).transpose(1, 2) for t in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(attn.transpose(1, 2).reshape(batch, tokens, hidden))
        return x + self.mlp(self.mlp_norm(x))


def make(device="cpu", tokens=(16, 256, 2048), dtype=torch.bfloat16):
    """One block in bf16 and one call per token count (batch 1)."""
    torch.manual_seed(0)
    model = Block().to(device=device, dtype=dtype)
    return model, [(torch.randn(1, n, 1024, device=device, dtype=dtype),) for n in tokens]

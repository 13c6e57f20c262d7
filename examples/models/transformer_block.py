"""A pre-norm transformer block: RMSNorm, attention, SwiGLU MLP."""

import logging

import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # Clean: shape and dtype checks are guarded by Dynamo, not graph breaks.
        if x.dtype == torch.float16 and x.dim() == 3:
            x = x.float()
        variance = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(variance + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        # Graph break: branching on tensor data.
        if torch.isnan(scores).any():
            scores = torch.nan_to_num(scores)
        attn = scores.softmax(-1)
        return self.out((attn @ v).transpose(1, 2).reshape(b, t, d))


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate = nn.Linear(dim, hidden)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class TransformerBlock(nn.Module):
    def __init__(self, dim=32, heads=4, hidden=64):
        super().__init__()
        self.norm1 = RMSNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = RMSNorm(dim)
        self.mlp = SwiGLU(dim, hidden)
        self.calls = 0

    def forward(self, x, mask=None):
        # Recompile trap: Python state on self mutated on every call.
        self.calls += 1
        h = x + self.attn(self.norm1(x), mask)
        # Graph break: logging inside forward.
        logger.debug("block output norm %s", h.norm())
        return h + self.mlp(self.norm2(h))

"""Self-attention with rotary position embeddings (rotary-embedding-torch's README), a cached-key
decoding step, and 2-D axial rotary embeddings of image patches; compiled."""

import torch
import torch.nn.functional as F
from rotary_embedding_torch import RotaryEmbedding, apply_rotary_emb
from torch import nn


class RotaryAttention(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 2, xpos: bool = False):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.out = nn.Linear(dim, dim)
        self.xpos = xpos
        self.rotary = RotaryEmbedding(dim=dim // heads // 2, use_xpos=xpos)

    def split(self, x):
        batch, length, _ = x.shape
        return (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))

    def forward(self, x):
        q, k, v = self.split(x)
        if self.xpos:
            q, k = self.rotary.rotate_queries_and_keys(q, k)
        else:
            q, k = self.rotary.rotate_queries_or_keys(q), self.rotary.rotate_queries_or_keys(k)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(attended.transpose(1, 2).reshape(x.shape))


def attention() -> RotaryAttention:
    return RotaryAttention()


def xpos_attention() -> RotaryAttention:
    return RotaryAttention(xpos=True)


def decode_step(layer, x_new, k_cache, v_cache):
    """One new token against cached keys: its query rotated at the position after them."""
    q, k, v = layer.split(x_new)
    k, v = torch.cat([k_cache, k], dim=2), torch.cat([v_cache, v], dim=2)
    q, k = layer.rotary.rotate_queries_with_cached_keys(q, k)
    attended = F.scaled_dot_product_attention(q, k, v)
    return layer.out(attended.transpose(1, 2).reshape(x_new.shape))


def rotate_patches(rotary, patches):
    """Axial (height, width) frequencies for a grid of image patches, applied to their features."""
    height, width = patches.shape[1], patches.shape[2]
    freqs = rotary.get_axial_freqs(height, width)
    return apply_rotary_emb(freqs, patches)


def pixel_rotary() -> RotaryEmbedding:
    return RotaryEmbedding(dim=8, freqs_for="pixel", max_freq=64)


compiled_attention = torch.compile(attention())
compiled_decode_step = torch.compile(decode_step)
compiled_rotate_patches = torch.compile(rotate_patches)

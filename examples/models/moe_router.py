"""A top-k mixture-of-experts layer with a learned router."""

import torch
import torch.nn.functional as F
from torch import nn


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class MoERouter(nn.Module):
    def __init__(self, dim=32, hidden=64, num_experts=4, top_k=2, aux_weight=0.01):
        super().__init__()
        self.top_k = top_k
        self.aux_weight = aux_weight
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(num_experts)])

    def forward(self, x, temperature=1.0):
        tokens = x.reshape(-1, x.shape[-1])
        logits = self.gate(tokens) / temperature
        weights, chosen = logits.softmax(-1).topk(self.top_k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(tokens)
        # Clean: a Python loop over a fixed ModuleList unrolls into one graph.
        for index, expert in enumerate(self.experts):
            hit = (chosen == index).to(tokens.dtype)
            gate = (weights * hit).sum(-1, keepdim=True)
            out = out + gate * expert(tokens)
        # Graph break: reading a tensor value into Python for a load-balancing statistic.
        imbalance = (chosen == 0).float().mean().item()
        aux_loss = weights.mean() * imbalance * self.aux_weight
        return out.reshape(x.shape), aux_loss


class SparseDispatch(nn.Module):
    """Dispatch that gathers tokens per expert: data-dependent sizes everywhere."""

    def __init__(self, dim=32, num_experts=4):
        super().__init__()
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([nn.Linear(dim, dim) for _ in range(num_experts)])

    def forward(self, x):
        expert_of = self.gate(x).argmax(-1)
        counts = torch.bincount(expert_of, minlength=len(self.experts))
        # Graph break: tensor values used as Python split sizes.
        order = expert_of.argsort()
        groups = torch.split(x[order], counts.tolist())
        outs = [expert(group) for expert, group in zip(self.experts, groups)]
        return torch.cat(outs)[order.argsort()]

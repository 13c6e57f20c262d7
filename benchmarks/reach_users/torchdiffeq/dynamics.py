"""A latent ODE's vector field: what a torchdiffeq user writes and hands to the solver."""

import torch
from torch import nn


class ODEFunc(nn.Module):
    """dy/dt = f(t, y): a small MLP of the state, with time as an extra input."""

    def __init__(self, dim: int = 4, hidden: int = 16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 1, hidden), nn.Tanh(), nn.Linear(hidden, dim))

    def forward(self, t, y):
        time = t.expand(*y.shape[:-1], 1)
        return self.net(torch.cat([y, time], dim=-1))

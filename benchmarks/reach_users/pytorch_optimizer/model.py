"""A small classifier and the optimizers this project tries on it, built the way the library's README does."""

from dataclasses import dataclass

import torch
from pytorch_optimizer import SAM, AdamP, Lookahead, Muon, create_optimizer, load_optimizer
from torch import nn


class Classifier(nn.Module):
    def __init__(self, features: int = 12, hidden: int = 16, classes: int = 3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.GELU(), nn.LayerNorm(hidden))
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x))


@dataclass
class Setup:
    """The model and its optimizer, as a training script holds them."""

    model: nn.Module
    optimizer: torch.optim.Optimizer


def by_name(name: str, **options) -> Setup:
    """The optimizer looked up in the library's registry by the name a config file gives."""
    model = Classifier()
    return Setup(model, load_optimizer(name)(model.parameters(), **options))


def from_factory(name: str, **options) -> Setup:
    """create_optimizer: weight-decay groups (no decay on biases and LayerNorm), registry lookup."""
    model = Classifier()
    return Setup(model, create_optimizer(model, name, **options))


def lookahead_adamp() -> Setup:
    model = Classifier()
    return Setup(model, Lookahead(AdamP(model.parameters(), lr=1e-3), k=2, alpha=0.5))


def sharpness_aware() -> Setup:
    model = Classifier()
    return Setup(model, SAM(model.parameters(), torch.optim.SGD, rho=0.05, lr=0.1, momentum=0.9))


def muon() -> Setup:
    """Muon on the hidden matrices, AdamW on the rest (the split the library asks for)."""
    model = Classifier()
    hidden = [p for p in model.body.parameters() if p.ndim >= 2]
    rest = [p for p in model.body.parameters() if p.ndim < 2] + list(model.head.parameters())
    groups = [dict(params=hidden, use_muon=True), dict(params=rest, use_muon=False)]
    return Setup(model, Muon(groups, lr=0.02))

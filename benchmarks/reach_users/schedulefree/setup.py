"""A small regressor with Schedule-Free optimizers, set up as the library's README says (optimizer.train()
before training, optimizer.eval() before evaluating)."""

from dataclasses import dataclass

import torch
from schedulefree import AdamWScheduleFree, RAdamScheduleFree, ScheduleFreeWrapper, SGDScheduleFreeClosure
from torch import nn


def regressor() -> nn.Module:
    return nn.Sequential(nn.Linear(6, 16), nn.SiLU(), nn.BatchNorm1d(16), nn.Linear(16, 1))


@dataclass
class Setup:
    model: nn.Module
    optimizer: object


def _ready(model, optimizer) -> Setup:
    optimizer.train()
    return Setup(model, optimizer)


def adamw() -> Setup:
    model = regressor()
    return _ready(model, AdamWScheduleFree(model.parameters(), lr=1e-3, warmup_steps=10, weight_decay=1e-2))


def radam() -> Setup:
    model = regressor()
    return _ready(model, RAdamScheduleFree(model.parameters(), lr=1e-3))


def wrapped_sgd() -> Setup:
    """Any optimizer made Schedule-Free by the wrapper (its momentum replaces the base one's; torch's
    RMSprop and Adam, whose state the wrapper shares, fail eagerly on torch 2.13: plain SGD here)."""
    model = regressor()
    base = torch.optim.SGD(model.parameters(), lr=0.05)
    return _ready(model, ScheduleFreeWrapper(base, momentum=0.9, weight_decay_at_y=0.1))


def sgd_closure() -> Setup:
    model = regressor()
    return Setup(model, SGDScheduleFreeClosure(model.parameters(), lr=0.05, warmup_steps=5))

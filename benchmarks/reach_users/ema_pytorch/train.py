"""A training loop keeping an exponential moving average of the weights (ema-pytorch's README):
the EMA updated after every optimizer step, evaluation on the averaged model; the steps compiled."""

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from ema_pytorch import EMA, PostHocEMA
from torch import nn


def network() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.BatchNorm1d(16), nn.Linear(16, 2))


@dataclass
class Setup:
    model: nn.Module
    optimizer: torch.optim.Optimizer
    ema: nn.Module


def with_ema() -> Setup:
    model = network()
    ema = EMA(model, beta=0.99, update_after_step=2, update_every=1)
    return Setup(model, torch.optim.SGD(model.parameters(), lr=0.1), ema)


def with_post_hoc_ema() -> Setup:
    """Karras et al.'s post-hoc EMA: two averages of different widths, combined after training."""
    model = network()
    # Checkpoints (none written: "manual") would go to the benchmarks' git-ignored cache.
    folder = Path(__file__).resolve().parents[2] / ".cache" / "post-hoc-ema"
    ema = PostHocEMA(model, sigma_rels=(0.05, 0.28), checkpoint_every_num_steps="manual", checkpoint_folder=folder)
    return Setup(model, torch.optim.SGD(model.parameters(), lr=0.1), ema)


def train_step(model, optimizer, ema, x, y):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    ema.update()
    return loss


def update_ema(ema):
    ema.update()


def evaluate(ema, x):
    """Predictions of the averaged weights (EMA.__call__ runs the EMA copy)."""
    return ema(x).argmax(-1)


compiled_train_step = torch.compile(train_step)
compiled_update_ema = torch.compile(update_ema)
compiled_evaluate = torch.compile(evaluate)

"""Bayesian regression and a Gaussian mixture as Pyro programs (the PyroModule tutorial's layout)."""

import pyro
import pyro.distributions as dist
import torch
from pyro.infer.autoguide import AutoDiagonalNormal, AutoNormal
from pyro.nn import PyroModule, PyroSample
from torch import nn


class BayesianRegression(PyroModule):
    def __init__(self, in_features: int = 3, out_features: int = 1):
        super().__init__()
        self.linear = PyroModule[nn.Linear](in_features, out_features)
        self.linear.weight = PyroSample(dist.Normal(0.0, 1.0).expand([out_features, in_features]).to_event(2))
        self.linear.bias = PyroSample(dist.Normal(0.0, 10.0).expand([out_features]).to_event(1))

    def forward(self, x, y=None):
        sigma = pyro.sample("sigma", dist.Uniform(0.0, 10.0))
        mean = self.linear(x).squeeze(-1)
        with pyro.plate("data", x.shape[0]):
            return pyro.sample("obs", dist.Normal(mean, sigma), obs=y)


def mixture(data, components: int = 2):
    """A Gaussian mixture with its assignments summed out (enumeration-free marginal)."""
    weights = pyro.sample("weights", dist.Dirichlet(torch.ones(components)))
    with pyro.plate("components", components):
        locs = pyro.sample("locs", dist.Normal(0.0, 5.0))
    with pyro.plate("data", data.shape[0]):
        pyro.sample("obs", dist.MixtureSameFamily(dist.Categorical(weights), dist.Normal(locs, 1.0)), obs=data)


class Fitted:
    """A model with its automatic guide, as an SVI script holds them."""

    def __init__(self, model, guide):
        self.model, self.guide = model, guide


def regression() -> Fitted:
    pyro.clear_param_store()
    model = BayesianRegression()
    guide = AutoNormal(model)
    guide(torch.randn(4, 3), torch.randn(4))  # the guide makes its parameters on its first call
    return Fitted(model, guide)


def mixture_model() -> Fitted:
    pyro.clear_param_store()
    guide = AutoDiagonalNormal(mixture)
    guide(torch.randn(6))
    return Fitted(mixture, guide)

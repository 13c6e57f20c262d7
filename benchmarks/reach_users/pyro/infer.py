"""Variational inference and prediction, each step compiled whole."""

import pyro
import torch
from pyro.infer import Predictive, Trace_ELBO
from pyro.poutine import trace

elbo = Trace_ELBO()


def elbo_step(model, guide, *data):
    """The ELBO's gradients with respect to the guide's parameters (what SVI.step computes)."""
    loss = elbo.differentiable_loss(model, guide, *data)
    loss.backward()
    return loss


def predict(model, guide, x, samples: int = 3):
    """Posterior predictive draws of the observations."""
    return Predictive(model, guide=guide, num_samples=samples)(x)["obs"]


def log_joint(model, guide, x, y):
    """log p(y, z | x) at a draw from the guide: the model replayed on the guide's trace."""
    guide_trace = trace(guide).get_trace(x, y)
    model_trace = trace(pyro.poutine.replay(model, trace=guide_trace)).get_trace(x, y)
    return model_trace.log_prob_sum()


def posterior_median(guide, x):
    return guide.median(x)


compiled_elbo_step = torch.compile(elbo_step)
compiled_predict = torch.compile(predict)
compiled_log_joint = torch.compile(log_joint)
compiled_posterior_median = torch.compile(posterior_median)

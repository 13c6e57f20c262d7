"""Fitting the flow by maximum likelihood, and drawing posterior samples: each compiled whole."""

import torch


def train_step(flow, theta, x):
    """Negative log-likelihood of the parameters given their simulations, and its gradients."""
    loss = -flow(x).log_prob(theta).mean()
    loss.backward()
    return loss


def posterior_samples(flow, x_observed, n: int = 4):
    """Samples of the parameters given one observation (the inverse pass of the flow)."""
    return flow(x_observed).sample((n,))


def log_density(flow, theta, x):
    return flow(x).log_prob(theta)


def reparameterized(flow, x):
    """rsample and log_prob of the same draws (what a variational objective needs)."""
    theta, log_prob = flow(x).rsample_and_log_prob()
    return theta, log_prob


compiled_train_step = torch.compile(train_step)
compiled_posterior_samples = torch.compile(posterior_samples)
compiled_log_density = torch.compile(log_density)
compiled_reparameterized = torch.compile(reparameterized)

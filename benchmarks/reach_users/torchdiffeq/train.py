"""Fitting the vector field to a trajectory, and sampling it: the solver calls compiled whole."""

import torch
from dynamics import ODEFunc
from torchdiffeq import odeint, odeint_adjoint


def trajectory(func: ODEFunc, y0, t, method="dopri5"):
    """The states at times t (adaptive steps unless a fixed-grid method is named)."""
    return odeint(func, y0, t, method=method, rtol=1e-3, atol=1e-4)


def fixed_step_trajectory(func: ODEFunc, y0, t):
    return odeint(func, y0, t, method="rk4", options={"step_size": 0.25})


def adjoint_trajectory(func: ODEFunc, y0, t):
    """Memory-light gradients: the adjoint method solves backwards for them."""
    return odeint_adjoint(func, y0, t, method="dopri5", rtol=1e-3, atol=1e-4)


def train_step(func: ODEFunc, y0, t, target):
    """One step of fitting: solve, compare with the observed trajectory, backward."""
    prediction = odeint(func, y0, t, method="dopri5", rtol=1e-3, atol=1e-4)
    loss = torch.nn.functional.mse_loss(prediction, target)
    loss.backward()
    return loss


compiled_trajectory = torch.compile(lambda func, y0, t: trajectory(func, y0, t))
compiled_fixed_step = torch.compile(fixed_step_trajectory)
compiled_adjoint = torch.compile(adjoint_trajectory)
compiled_train_step = torch.compile(train_step)

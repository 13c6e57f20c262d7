"""Training and evaluation steps, each compiled whole."""

import torch
import torch.nn.functional as F


def train_step(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def closure_step(model, optimizer, x, y):
    """The closure variants evaluate the gradient themselves (at the interpolated point)."""
    def closure():
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss

    return optimizer.step(closure)


def evaluate(model, optimizer, x, y):
    """Metrics at the averaged weights: optimizer.eval() swaps them in, optimizer.train() back."""
    model.eval()
    optimizer.eval()
    loss = F.mse_loss(model(x), y)
    optimizer.train()
    model.train()
    return loss


def optimizer_step(optimizer):
    optimizer.step()


compiled_train_step = torch.compile(train_step)
compiled_closure_step = torch.compile(closure_step)
compiled_evaluate = torch.compile(evaluate)
compiled_optimizer_step = torch.compile(optimizer_step)

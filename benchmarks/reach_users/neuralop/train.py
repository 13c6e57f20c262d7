"""A training step with the relative L2 loss, and the H1 loss evaluated alone: compiled."""

import torch
from neuralop.losses import H1Loss, LpLoss

l2loss = LpLoss(d=2, p=2)
h1loss = H1Loss(d=2)


def train_step(model, x, y):
    loss = l2loss(model(x), y)
    loss.backward()
    return loss


def evaluate(model, x, y):
    prediction = model(x)
    return {"l2": l2loss(prediction, y), "h1": h1loss(prediction, y)}


compiled_train_step = torch.compile(train_step)
compiled_evaluate = torch.compile(evaluate)
compiled_h1 = torch.compile(h1loss)

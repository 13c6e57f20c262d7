"""The training loop's step, compiled whole (forward, loss, backward, the optimizer's update), and the
optimizer's update compiled alone (PyTorch's "compiled optimizer" recipe)."""

import torch
import torch.nn.functional as F
from model import Setup, by_name


def train_step(model, optimizer, x, y):
    optimizer.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def sam_train_step(model, optimizer, x, y):
    """Sharpness-aware minimisation: a step to the worst neighbour, then the real update."""
    F.cross_entropy(model(x), y).backward()
    optimizer.first_step(zero_grad=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.second_step(zero_grad=True)
    return loss


def sam_closure_step(model, optimizer, x, y):
    """The same through the closure the library's docs show."""
    def closure():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss

    loss = closure()
    optimizer.step(closure)
    return loss


def optimizer_step(optimizer):
    optimizer.step()


compiled_train_step = torch.compile(train_step)
compiled_sam_train_step = torch.compile(sam_train_step)
compiled_sam_closure_step = torch.compile(sam_closure_step)
compiled_optimizer_step = torch.compile(optimizer_step)


def fit(setup: Setup, batches):
    for x, y in batches:
        compiled_train_step(setup.model, setup.optimizer, x, y)


if __name__ == "__main__":
    setup = by_name("adabelief", lr=1e-3)
    fit(setup, [(torch.randn(8, 12), torch.randint(0, 3, (8,)))])

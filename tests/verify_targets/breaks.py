"""Verify-test targets: a data-dependent branch and a print break the graph; a scale recompiles."""

import torch


class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x, scale: float = 1.0):
        y = self.proj(x)
        if y.sum() > 0:
            y = y * 2
        return torch.nn.functional.dropout(y, p=scale * 0.0, training=False) * scale


def make():
    torch.manual_seed(0)
    x = torch.randn(4, 8)
    return Gate(), [(x, 1.0), (x, 2.0)]


def clean():
    return (lambda x: torch.relu(x) * 2), [(torch.randn(3, 5),), (torch.randn(6, 5),)]

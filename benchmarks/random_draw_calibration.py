"""What Dynamo does with Python random draws in forward, and what eager code gets (torch 2.13 CPU).

Each case is compiled with backend="eager", fullgraph=True and the default, called three
times, and run eagerly. Written for the JIT404 fix-safety issue: `math.sqrt` of a
`random.uniform` draw, and timm's `math.copysign(random.randint(0, abs(d)), d)`.

Usage: python benchmarks/random_draw_calibration.py   (prints one line per case and mode)
"""

from __future__ import annotations

import math
import random

import torch
import torch._dynamo.testing
from torch import nn


class SqrtOfDraw(nn.Module):  # the repro, before the fix
    def forward(self, x):
        f = random.uniform(0.9, 1.1)
        f = math.sqrt(f)
        return x * f


class TorchSqrtOfDraw(nn.Module):  # what the old JIT404 fix wrote
    def forward(self, x):
        f = random.uniform(0.9, 1.1)
        return x * torch.sqrt(f)


class CopysignOfRandint(nn.Module):  # timm data/transforms.py, sizes from the input
    def forward(self, x):
        d = x.shape[-1] // 2
        return x.roll(int(math.copysign(random.randint(0, abs(d)), d)), -1)


class DrawTimesTensor(nn.Module):
    def forward(self, x):
        return x * random.uniform(0.9, 1.1)


class PowerOfDraw(nn.Module):
    def forward(self, x):
        return x * random.uniform(0.9, 1.1) ** 0.5


def main() -> None:
    print(f"torch {torch.__version__}")
    for cls in (SqrtOfDraw, TorchSqrtOfDraw, CopysignOfRandint, DrawTimesTensor, PowerOfDraw):
        for fullgraph in (True, False):
            torch._dynamo.reset()
            counter = torch._dynamo.testing.CompileCounter()
            compiled = torch.compile(cls(), backend=counter, fullgraph=fullgraph)
            try:
                for _ in range(3):
                    compiled(torch.randn(3, 8))
                outcome = f"compiles, {counter.frame_count} frame(s)"
            except Exception as error:  # noqa: BLE001 - what the compiler says is the result
                outcome = f"fails: {type(error).__name__}: {str(error).splitlines()[0][:110]}"
            print(f"{cls.__name__:18} {'fullgraph' if fullgraph else 'default':9} {outcome}")
        try:
            cls()(torch.randn(3, 8))
            print(f"{cls.__name__:18} eager     runs")
        except Exception as error:  # noqa: BLE001
            print(f"{cls.__name__:18} eager     fails: {type(error).__name__}: {str(error)[:110]}")


if __name__ == "__main__":
    main()

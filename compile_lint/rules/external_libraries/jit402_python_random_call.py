"""JIT402 python-random-call: `random.random()`, `random.choice`, `random.gauss`,
`uuid4()`... in a compiled region break."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid


class PythonRandomCall(Rule):
    """`random.random()`, `random.choice`, `random.gauss`, `uuid4()`... in a compiled region break.

    Why: Dynamo skips most of the `random` module ("Attempted to call function marked
    as skipped"); on torch 2.13 only `random.uniform`, `random.randint` and
    `random.randrange` are traced (fresh values per call). `secrets`, `os.urandom` and
    `uuid.uuid4` break too.

    Instead: draw with torch (`torch.rand(())`, `torch.randint`, `torch.randperm`), or
    draw outside the compiled region and pass the value in.
    """

    code = "JIT402"
    name = "python-random-call"
    kind = "break"
    gb_type = "Attempted to call function marked as skipped"
    gb_id = "GB0007"
    message = (
        "this random-module call breaks the graph; draw with torch (`torch.rand(())`, "
        "`torch.randint(low, high, ())`, `torch.randperm(n)`) or pass the value in"
    )
    steps = ("torch.rand(())", "torch.randint(low, high, ())", "torch.randperm(n)")
    invalid = [
        Invalid(
            """
            import random

            from torch import nn

            class DropPath(nn.Module):
                def __init__(self, p=0.1):
                    super().__init__()
                    self.p = p

                def forward(self, x):
                    if random.random() < self.p:
                        return x * 0
                    return x
            """,
            entry="DropPath",
            lines=[11],
        ),
        Invalid(
            """
            import random

            import torch
            from torch import nn

            class RandomAugment(nn.Module):
                def forward(self, x):
                    op = random.choice(["flip", "rot90"])
                    return x.flip(-1) if op == "flip" else x.rot90(1, [0, 1])
            """,
            calls="[(torch.randn(8, 8),)]",
            entry="RandomAugment",
            lines=[8],
        ),
        Invalid(
            """
            import uuid

            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    self.last_request = uuid.uuid4().hex
                    return x * 2
            """,
            lines=[7],
        ),
    ]
    valid = [
        Valid(
            """
            import random

            import torch
            from torch import nn

            class DropPath(nn.Module):
                def __init__(self, p=0.1):
                    super().__init__()
                    self.p = p

                def forward(self, x):
                    keep = (torch.rand(x.shape[0], 1) >= self.p).to(x.dtype)
                    return x * keep
            """,
            entry="DropPath",
        ),
        Valid(
            """
            import random

            import torch
            from torch import nn

            class ScaleJitter(nn.Module):
                def forward(self, x):
                    scale = random.uniform(0.9, 1.1)
                    shift = random.randint(0, 2)
                    return x * scale + shift
            """,
            entry="ScaleJitter",
        ),
        Valid(
            """
            import random

            import torch
            from torch import nn

            def seed_everything(seed):
                random.seed(seed)
                torch.manual_seed(seed)

            class Model(nn.Module):
                def forward(self, x):
                    return torch.randn_like(x) * 0 + x
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func) or ""
        if name.startswith("random.") and name[len("random."):] not in _TRACED_PYTHON_RANDOM:
            self.report(node)
        elif name in _RANDOM_ID_CALLS or name.startswith("secrets."):
            self.report(node)


_TRACED_PYTHON_RANDOM = frozenset({"uniform", "randint", "randrange", "Random"})


_RANDOM_ID_CALLS = frozenset({"os.urandom", "uuid.uuid1", "uuid.uuid4"})


"""JIT401 untraceable-numpy-random: An `np.random` call Dynamo cannot trace:
most distributions, generators, scalar draws."""

from __future__ import annotations

import libcst as cst

from compile_lint.rules.base import Invalid, Rule, Valid
from compile_lint.rules.support.bindings import made_by


class UntraceableNumpyRandom(Rule):
    """An `np.random` call Dynamo cannot trace: most distributions, generators, scalar draws.

    Why: torch 2.13 traces only `rand`, `randn`, `random`/`random_sample`, `uniform`,
    `normal`, `randint` (with a `size`), `shuffle` and `seed`, through torch's own
    generator. Other distributions (`beta`, `binomial`, `permutation`, `choice`),
    `default_rng()`/`RandomState` generators, and draws without a size (a Python scalar)
    break the graph. Note that even traced draws use torch's random stream, so
    `np.random.seed` no longer reproduces eager results.

    Instead: draw with torch (`torch.distributions.Beta(a, a).sample()`,
    `torch.randperm`, `torch.rand(())`), or draw outside the compiled region and pass
    the value in.
    """

    code = "JIT401"
    name = "untraceable-numpy-random"
    kind = "break"
    gb_type = "attempted to trace numpy function unsupported by PyTorch"
    gb_id = "GB0294"
    gb_types = (  # the same pattern, reported differently
        "Unsupported method call",
        "Data dependent operator",
    )
    message = (
        "this np.random call breaks the graph; draw with torch (`torch.rand(())`, `torch.randperm(n)`, "
        "`torch.distributions`) or pass the value in"
    )
    steps = ("torch.rand(())", "torch.randperm(n)")
    invalid = [
        Invalid(
            """
            import numpy as np
            import torch
            from torch import nn

            class Mixup(nn.Module):
                def __init__(self, alpha=0.2):
                    super().__init__()
                    self.alpha = alpha

                def forward(self, x):
                    lam = float(np.random.beta(self.alpha, self.alpha))
                    return lam * x + (1 - lam) * x.flip(0)
            """,
            entry="Mixup",
            lines=[11],
        ),
        Invalid(
            """
            import numpy as np
            import torch
            from torch import nn

            class TokenDrop(nn.Module):
                def forward(self, tokens):
                    keep = np.random.permutation(tokens.shape[0])[: tokens.shape[0] // 2]
                    return tokens[torch.from_numpy(keep)]
            """,
            entry="TokenDrop",
            lines=[7],
        ),
        Invalid(
            """
            import numpy as np
            from torch import nn

            class NoisyPolicy(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.rng = np.random.RandomState(0)
                    self.pi = nn.Linear(8, 4)

                def forward(self, obs):
                    eps = self.rng.rand()
                    return self.pi(obs) + eps
            """,
            entry="NoisyPolicy",
            lines=[11],
        ),
        Invalid(
            """
            import numpy as np
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    return x * np.random.normal()
            """,
            lines=[6],
        ),
    ]
    valid = [
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class Jitter(nn.Module):
                def forward(self, x):
                    noise = torch.from_numpy(np.random.rand(4, 8)).float()
                    gauss = torch.from_numpy(np.random.normal(0.0, 1.0, size=(4, 8))).float()
                    return x + 0.01 * noise + 0.01 * gauss
            """,
            entry="Jitter",
        ),
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class Mixup(nn.Module):
                def __init__(self, alpha=0.2):
                    super().__init__()
                    self.beta = torch.distributions.Beta(torch.tensor(alpha), torch.tensor(alpha))

                def forward(self, x):
                    lam = torch.rand(())
                    return lam * x + (1 - lam) * x.flip(0)
            """,
            entry="Mixup",
        ),
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    y = np.sin(x.numpy()) + np.pi
                    return torch.from_numpy(y) * np.sqrt(x.shape[-1])
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func) or ""
        if name.startswith("numpy.random."):
            function = name[len("numpy.random."):]
            size_position = _TRACED_NUMPY_DRAWS.get(function, "untraced")
            if size_position == "untraced" or not _has_size(node, size_position):
                self.report(node)
            return
        func = node.func
        if isinstance(func, cst.Attribute) and not isinstance(func.value, cst.Call):
            # Methods of a generator made elsewhere: `self.rng = np.random.RandomState(0)`.
            if any(maker in _NUMPY_GENERATORS for maker in made_by(self.context, func.value)):
                self.report(node)


# numpy.random functions torch._numpy implements, and which argument carries `size`:
# "*" = any positional argument is part of the shape; None = no size needed.
# Kept by hand: torch has no table of these. numpy is on Dynamo's skip list, yet its calls
# are traced through torch._numpy, which models some numpy.random draws and not others;
# which ones (and how their size is passed) was measured on torch 2.13.
_TRACED_NUMPY_DRAWS: dict[str, object] = {
    "seed": None, "shuffle": None, "rand": "*", "randn": "*", "random_sample": 0,
    "random": 0, "uniform": 2, "normal": 2, "randint": 2,
}


_NUMPY_GENERATORS = frozenset(
    {"numpy.random.RandomState", "numpy.random.default_rng", "numpy.random.Generator"}
)


def _has_size(call: cst.Call, size_position: object) -> bool:
    if size_position is None:
        return True
    if any(arg.keyword is not None and arg.keyword.value == "size" for arg in call.args):
        return True
    positional = [arg for arg in call.args if arg.keyword is None]
    if size_position == "*":
        return bool(positional)
    assert isinstance(size_position, int)
    return len(positional) > size_position


"""External libraries: numpy, random, time, math, I/O, copy, scipy and pandas in compiled code.

Dynamo 2.13 traces much more of the standard library and numpy than common advice says:
numpy on tensors (`np.sin(x)`, `x.numpy()` round trips), sized `np.random.rand(4, 8)`
draws, `random.uniform/randint/randrange`, `math.sqrt(x.shape[-1])`, `os.environ.get`,
`os.path.join` and `copy.deepcopy` of plain containers all compile. The rules below flag
only what was measured to break (torch 2.13, CPU, backend="eager").
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from compile_lint.autofix.builders import spell
from compile_lint.linter.facts import Kind
from compile_lint.rules._bindings import call_name, made_by
from compile_lint.rules.base import FixPlan, Invalid, Rule, Valid

# numpy.random functions torch._numpy implements, and which argument carries `size`:
# "*" = any positional argument is part of the shape; None = no size needed.
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


class NumpyRandomUntraceable(Rule):
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
    message = (
        "this np.random call breaks the graph; draw with torch (torch.rand, torch.randperm, "
        "torch.distributions) or pass the value in"
    )
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
        ),
        Invalid(
            """
            import numpy as np
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    return x * np.random.normal()
            """,
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


_TRACED_PYTHON_RANDOM = frozenset({"uniform", "randint", "randrange", "Random"})
_RANDOM_ID_CALLS = frozenset({"os.urandom", "uuid.uuid1", "uuid.uuid4"})


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
        "this random-module call breaks the graph; use torch.rand/torch.randint/torch.randperm "
        "or pass the value in"
    )
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


_CLOCK_CALLS = frozenset(
    {"datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.date.today"}
)


class ClockCall(Rule):
    """`time.time()`, `time.perf_counter()`, `time.sleep()` or `datetime.now()` in a compiled region.

    Why: the clock is outside the program's tensors; Dynamo skips the `time` module
    ("Attempted to call function marked as skipped") and `datetime.now` is an unsupported
    method call. Timing inside forward also measures tracing, not the kernels.

    Instead: time the compiled call from outside (with `torch.cuda.synchronize()` around
    it on GPU), or use `torch.profiler.record_function("name")` blocks, which compile.
    """

    code = "JIT403"
    name = "clock-call"
    kind = "break"
    gb_type = "Attempted to call function marked as skipped"
    gb_id = "GB0007"
    message = (
        "reading the clock breaks the graph; time the compiled call from outside or use "
        "torch.profiler.record_function"
    )
    invalid = [
        Invalid(
            """
            import time

            import torch
            from torch import nn

            class TimedBlock(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)
                    self.elapsed = 0.0

                def forward(self, x):
                    start = time.perf_counter()
                    y = self.fc(x)
                    self.elapsed += time.perf_counter() - start
                    return y
            """,
            entry="TimedBlock",
        ),
        Invalid(
            """
            from datetime import datetime

            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    self.stamp = datetime.now().isoformat()
                    return x.relu()
            """,
        ),
    ]
    valid = [
        Valid(
            """
            import math

            import torch
            from torch import nn

            class TimestepEmbedding(nn.Module):
                def forward(self, timesteps):
                    half = 4
                    freqs = torch.exp(-math.log(10000.0) * torch.arange(half) / half)
                    args = timesteps[:, None] * freqs[None]
                    return torch.cat([args.sin(), args.cos()], dim=-1)
            """,
            calls="[(torch.arange(4).float(),)]",
            entry="TimestepEmbedding",
        ),
        Valid(
            """
            import time

            import torch
            from torch import nn

            def benchmark(model, x):
                start = time.perf_counter()
                model(x)
                return time.perf_counter() - start

            class Model(nn.Module):
                def forward(self, x):
                    with torch.profiler.record_function("model"):
                        return x * 2
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, time_steps: int = 3):
                    for _ in range(time_steps):
                        x = x.tanh()
                    return x
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func) or ""
        if name.startswith("time.") or name in _CLOCK_CALLS:
            self.report(node)


# math functions with a torch twin of the same meaning on a one-element tensor.
_MATH_TO_TORCH = frozenset(
    {"exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan", "asin",
     "acos", "atan", "sinh", "cosh", "tanh", "erf", "erfc"}
)


class MathOnTensor(Rule):
    """A `math.*` function applied to a tensor (`math.exp(self.logit_scale)`) breaks the graph.

    Why: `math` functions need a Python float, so Dynamo must read the tensor's value
    ("Data dependent operator"); with `fullgraph=True` it is a hard error, with or
    without `capture_scalar_outputs`. `math` on sizes (`math.sqrt(x.shape[-1])`) and
    constants is fine.

    Instead: the torch twin keeps it in the graph: `torch.exp(t)`, `t.sqrt()`. The fix
    (unsafe: the result becomes a 0-d tensor, computed in the tensor's dtype instead of
    float64) rewrites one-argument calls with a torch twin.
    """

    code = "JIT404"
    name = "math-on-tensor"
    kind = "break"
    gb_type = "Data dependent operator"
    gb_id = "GB0033"
    fix_applicability = "unsafe"
    message = "math.* on a tensor reads its value and breaks the graph; use the torch function"
    invalid = [
        Invalid(
            """
            import math

            import torch
            from torch import nn

            class ClipHead(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

                def forward(self, image, text):
                    scale = math.exp(self.logit_scale)
                    return scale * image @ text.t()
            """,
            fixed="""
            import math

            import torch
            from torch import nn

            class ClipHead(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

                def forward(self, image, text):
                    scale = torch.exp(self.logit_scale)
                    return scale * image @ text.t()
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="ClipHead",
        ),
        Invalid(
            """
            from math import sqrt

            from torch import nn

            class RmsScale(nn.Module):
                def forward(self, x):
                    return x / sqrt(x.pow(2).mean() + 1e-6)
            """,
            fixed="""
            from math import sqrt

            from torch import nn
            import torch

            class RmsScale(nn.Module):
                def forward(self, x):
                    return x / torch.sqrt(x.pow(2).mean() + 1e-6)
            """,
            entry="RmsScale",
        ),
        Invalid(
            """
            import math

            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    if math.isfinite(x.sum()):
                        return x
                    return x.nan_to_num()
            """,
        ),
    ]
    valid = [
        Valid(
            """
            import math

            import torch
            from torch import nn

            class Attention(nn.Module):
                def forward(self, q, k):
                    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
                    return scores.softmax(-1)
            """,
            calls="[(torch.randn(2, 4, 8), torch.randn(2, 4, 8))]",
            entry="Attention",
        ),
        Valid(
            """
            import math

            import torch
            from torch import nn

            class ClipHead(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

                def forward(self, image, text):
                    return self.logit_scale.exp() * image @ text.t()
            """,
            calls="[(torch.randn(4, 8), torch.randn(4, 8))]",
            entry="ClipHead",
        ),
        Valid(
            """
            import math

            import torch
            from torch import nn

            class Flatten(nn.Module):
                def forward(self, x):
                    n = math.prod(x.shape[1:])
                    half = math.ceil(n / 2)
                    return x.reshape(x.shape[0], n)[:, :half] * math.pi
            """,
            entry="Flatten",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func) or ""
        if not name.startswith("math."):
            return
        if any(self.context.kind(arg.value) is Kind.TENSOR for arg in node.args):
            self.report(node, fix=self._torch_twin(node, name[len("math."):]))

    def _torch_twin(self, node: cst.Call, function: str) -> Optional[FixPlan]:
        if function not in _MATH_TO_TORCH or len(node.args) != 1 or node.args[0].keyword or node.args[0].star:
            return None
        twin, imports = spell(self.context, f"torch.{function}")
        call = node.with_changes(func=cst.parse_expression(twin))
        return FixPlan([(node, call)], f"Use {twin}(...)", "unsafe", imports)


_IO_CALLS = frozenset(
    {
        "builtins.open", "builtins.input", "io.open", "gzip.open", "torch.save", "torch.load",
        "torch.hub.load_state_dict_from_url", "numpy.save", "numpy.savez", "numpy.savez_compressed",
        "numpy.load", "numpy.loadtxt", "numpy.savetxt", "numpy.genfromtxt", "numpy.fromfile",
        "json.load", "json.dump", "json.loads", "json.dumps",
        "os.makedirs", "os.mkdir", "os.remove", "os.unlink", "os.rename", "os.replace",
        "os.listdir", "os.scandir", "os.walk", "os.stat", "os.path.exists", "os.path.isfile",
        "os.path.isdir", "os.path.getsize", "os.path.getmtime",
        "safetensors.torch.save_file", "safetensors.torch.load_file", "h5py.File",
    }
)
_IO_PREFIXES = (
    "pickle.", "shutil.", "tempfile.", "glob.", "requests.", "urllib.request.", "http.client.",
    "socket.", "subprocess.",
)
_PATH_IO_METHODS = frozenset(
    {"read_text", "write_text", "read_bytes", "write_bytes", "open", "exists", "is_file", "is_dir",
     "mkdir", "unlink", "iterdir", "glob", "rglob", "touch", "stat"}
)


class FileOrNetworkIO(Rule):
    """File, network or process I/O (`open`, `torch.save`, `json.dump`, `requests.get`) in forward.

    Why: I/O reaches outside the program; Dynamo cannot put it in a graph and skips it
    ("Attempted to call function marked as skipped", "Failed to trace builtin operator").
    `os.environ.get`, `os.getenv` and `os.path.join` are fine on torch 2.13.

    Instead: load and save outside the compiled call (in `__init__`, the data loader or
    the training loop), and pass tensors in.
    """

    code = "JIT405"
    name = "io-in-compiled-region"
    kind = "break"
    gb_type = "Attempted to call function marked as skipped"
    gb_id = "GB0007"
    message = "file/network I/O breaks the graph; do it outside the compiled region and pass tensors in"
    invalid = [
        Invalid(
            """
            import torch
            from torch import nn

            class ActivationDump(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(8, 8)

                def forward(self, x):
                    h = self.fc(x)
                    torch.save(h, "/tmp/compile_lint_activations.pt")
                    return h
            """,
            entry="ActivationDump",
        ),
        Invalid(
            """
            import json

            from torch import nn

            class Labeler(nn.Module):
                def forward(self, logits):
                    with open(__file__) as handle:
                        lines = handle.read().count("\\n")
                    return logits * lines
            """,
            entry="Labeler",
        ),
        Invalid(
            """
            import json

            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    self.meta = json.dumps({"rows": x.shape[0]})
                    return x * 2
            """,
        ),
    ]
    valid = [
        Valid(
            """
            import os

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    if os.environ.get("COMPILE_LINT_DEMO_FLAG"):
                        x = x * 2
                    return x * (2 if os.getenv("COMPILE_LINT_OTHER") else 1)
            """,
        ),
        Valid(
            """
            import json
            import os

            import torch
            from torch import nn

            class Model(nn.Module):
                def __init__(self, config_path=None):
                    super().__init__()
                    self.labels = json.loads('["cat", "dog"]')
                    self.cache_dir = os.path.join("/tmp", "cache")
                    self.fc = nn.Linear(8, len(self.labels))

                def forward(self, x):
                    return self.fc(x)
            """,
        ),
        Valid(
            """
            import torch
            from torch import nn

            def export(model, path):
                torch.save(model.state_dict(), path)

            class Model(nn.Module):
                def forward(self, x):
                    saved = x.clone()
                    return saved * 2
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = call_name(self.context, node) or ""
        if self.context.qualname(node.func) is not None and (name in _IO_CALLS or name.startswith(_IO_PREFIXES)):
            self.report(node)
            return
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        if func.attr.value == "tofile":
            self.report(node)
        elif func.attr.value in _PATH_IO_METHODS:
            if any(maker.startswith("pathlib.") for maker in made_by(self.context, func.value)):
                self.report(node)


class CopyOfTensor(Rule):
    """`copy.copy(...)` anything, or `copy.deepcopy` of a tensor or module, breaks the graph.

    Why: `copy.deepcopy` of a tensor or module is unsupported ("Attempted to copy.deepcopy
    a tensor"), and `copy.copy` is skipped for every argument on torch 2.13, plain lists
    and dicts included. `copy.deepcopy` of a plain dict or list of Python values compiles.

    Instead: `t.clone()` (add `.detach()` to cut the graph), `dict(d)` / `d.copy()` /
    `list(xs)` for shallow copies, and copy modules once outside the compiled region.
    """

    code = "JIT406"
    name = "copy-in-compiled-region"
    kind = "break"
    gb_type = "Attempted to copy.deepcopy a tensor"
    gb_id = "GB4198"
    fix_applicability = "safe"
    message = (
        "copy.copy / copy.deepcopy of a tensor or module breaks the graph; use t.clone(), "
        "d.copy() or list(xs)"
    )
    invalid = [
        Invalid(
            """
            import copy

            import torch
            from torch import nn

            class EmaTarget(nn.Module):
                def forward(self, x):
                    target = copy.deepcopy(x)
                    return x - target.mean()
            """,
            entry="EmaTarget",
        ),
        Invalid(
            """
            import copy

            from torch import nn

            class Wrapper(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.head = nn.Linear(8, 8)

                def forward(self, x):
                    frozen = copy.deepcopy(self.head)
                    return frozen(x)
            """,
            entry="Wrapper",
        ),
        Invalid(
            """
            import copy

            from torch import nn

            class Model(nn.Module):
                def forward(self, x, scale: float = 2.0):
                    options = {"scale": scale, "bias": 1.0}
                    local = copy.copy(options)
                    local["bias"] = 0.0
                    return x * local["scale"] + local["bias"]
            """,
            fixed="""
            import copy

            from torch import nn

            class Model(nn.Module):
                def forward(self, x, scale: float = 2.0):
                    options = {"scale": scale, "bias": 1.0}
                    local = options.copy()
                    local["bias"] = 0.0
                    return x * local["scale"] + local["bias"]
            """,
        ),
    ]
    valid = [
        Valid(
            """
            import copy

            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    defaults = copy.deepcopy({"scale": 2.0, "shift": [1.0]})
                    return x * defaults["scale"] + defaults["shift"][0]
            """,
        ),
        Valid(
            """
            import copy

            import torch
            from torch import nn

            class EmaTarget(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.online = nn.Linear(8, 8)
                    self.target = copy.deepcopy(self.online)

                def forward(self, x):
                    return self.online(x) - self.target(x).detach()
            """,
            entry="EmaTarget",
        ),
        Valid(
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    snapshot = x.detach().clone()
                    options = {"scale": 2.0}.copy()
                    return (x - snapshot) + x * options["scale"]
            """,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func)
        if name not in ("copy.copy", "copy.deepcopy") or len(node.args) != 1:
            return
        value = node.args[0].value
        kind = self.context.kind(value)
        if name == "copy.copy":
            fix = None
            if kind is Kind.DICT and isinstance(value, (cst.Name, cst.Attribute)):
                call = cst.Call(func=cst.Attribute(value=value, attr=cst.Name("copy")))
                fix = FixPlan([(node, call)], "Use d.copy()", "safe")
            self.report(node, fix=fix)
        elif kind in (Kind.TENSOR, Kind.MODULE, Kind.SELF) or _holds_tensor(self, value):
            self.report(node)


def _holds_tensor(rule: Rule, value: cst.BaseExpression) -> bool:
    """A list/tuple/dict display with a tensor among its elements."""
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return any(not isinstance(el, cst.StarredElement) and rule.context.kind(el.value) is Kind.TENSOR
                   for el in value.elements)
    if isinstance(value, cst.Dict):
        return any(isinstance(el, cst.DictElement) and rule.context.kind(el.value) is Kind.TENSOR
                   for el in value.elements)
    return False


_UNTRACEABLE_LIBRARIES = (
    "scipy.", "pandas.", "sklearn.", "cv2.", "PIL.", "skimage.", "librosa.", "soundfile.",
    "numba.", "tensorflow.", "jax.",
)


class UntraceableLibraryCall(Rule):
    """A call into scipy, pandas, scikit-learn, OpenCV, PIL, librosa... in a compiled region.

    Why: Dynamo traces torch and (through torch's own implementation) numpy; other
    libraries run compiled C code or numpy internals it does not model, so the graph
    breaks ("Unsupported method call", "Attempted to call function marked as skipped";
    measured with scipy and pandas on torch 2.13).

    Instead: use the torch equivalent (`torch.special.expit`, `torch.signal.windows`,
    `torch.fft`), precompute constants in `__init__`, or wrap the call in a
    `torch.library.custom_op` so it becomes one opaque node of the graph.
    """

    code = "JIT407"
    name = "untraceable-library-call"
    kind = "break"
    gb_type = "Unsupported method call"
    gb_id = "GB0156"
    message = (
        "calls into this library are not traceable and break the graph; use a torch "
        "equivalent, precompute in __init__, or wrap it in a custom op"
    )
    invalid = [
        Invalid(
            """
            import torch
            from scipy.optimize import linear_sum_assignment
            from torch import nn

            class HungarianMatcher(nn.Module):
                @torch.no_grad()
                def forward(self, pred_logits, tgt_ids):
                    cost = -pred_logits.softmax(-1)[:, tgt_ids]
                    rows, cols = linear_sum_assignment(cost.cpu())
                    return torch.as_tensor(rows), torch.as_tensor(cols)
            """,
            calls="[(torch.randn(6, 5), torch.tensor([0, 2, 4]))]",
            entry="HungarianMatcher",
        ),
        Invalid(
            """
            import scipy.special
            import torch
            from torch import nn

            class Gate(nn.Module):
                def forward(self, x):
                    return torch.from_numpy(scipy.special.expit(x.numpy()))
            """,
            entry="Gate",
        ),
        Invalid(
            """
            import pandas as pd
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    frame = pd.DataFrame(x.numpy())
                    return torch.as_tensor(frame.values) * 2
            """,
        ),
    ]
    valid = [
        Valid(
            """
            import scipy.signal
            import torch
            from torch import nn

            class Spectrogram(nn.Module):
                def __init__(self):
                    super().__init__()
                    window = scipy.signal.get_window("hann", 8)
                    self.register_buffer("window", torch.as_tensor(window, dtype=torch.float32))

                def forward(self, x):
                    return x * self.window
            """,
            entry="Spectrogram",
        ),
        Valid(
            """
            import pandas as pd
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    if isinstance(x, pd.DataFrame):
                        x = torch.as_tensor(x.values)
                    return torch.special.expit(x)
            """,
        ),
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class Gate(nn.Module):
                def forward(self, x):
                    return torch.from_numpy(1 / (1 + np.exp(-x.numpy())))
            """,
            entry="Gate",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.qualname(node.func) or ""
        if name.startswith(_UNTRACEABLE_LIBRARIES):
            self.report(node)



_SHAPE_REDUCTIONS = frozenset({"numpy.prod", "numpy.product"})


class NumpyProdOfShape(Rule):
    """`np.prod(x.shape)` in a compiled region breaks the graph; `math.prod` does not.

    Why: Dynamo traces numpy through torch, so `np.prod` of a size tuple becomes a
    tensor computation whose result is needed as a Python int ("torch.* op returned
    non-Tensor"); it fails even with `fullgraph=True`. (Reading numbers out of arrays
    that come from tensor data, `float(x.numpy().sum())`, is the tensor-to-Python
    rules' business.)

    Instead: `math.prod(x.shape)` works on sizes directly and keeps them symbolic. The
    fix is unsafe only in type: the result is a Python int instead of a numpy integer.
    """

    code = "JIT408"
    name = "numpy-prod-of-shape"
    kind = "break"
    gb_type = "torch.* op returned non-Tensor"
    gb_id = "GB0208"
    fix_applicability = "unsafe"
    message = "np.prod of a shape breaks the graph; use math.prod(x.shape)"
    invalid = [
        Invalid(
            """
            import numpy as np
            import torch
            from torch import nn

            class Flatten(nn.Module):
                def forward(self, x):
                    n = int(np.prod(x.shape[1:]))
                    return x.reshape(x.shape[0], n)
            """,
            fixed="""
            import numpy as np
            import torch
            from torch import nn
            import math

            class Flatten(nn.Module):
                def forward(self, x):
                    n = int(math.prod(x.shape[1:]))
                    return x.reshape(x.shape[0], n)
            """,
            entry="Flatten",
        ),
        Invalid(
            """
            import math

            import numpy as np
            from torch import nn

            class SpatialTokens(nn.Module):
                def forward(self, x):
                    tokens = np.prod(x.shape[2:])
                    return x.reshape(x.shape[0], x.shape[1], tokens).transpose(1, 2)
            """,
            fixed="""
            import math

            import numpy as np
            from torch import nn

            class SpatialTokens(nn.Module):
                def forward(self, x):
                    tokens = math.prod(x.shape[2:])
                    return x.reshape(x.shape[0], x.shape[1], tokens).transpose(1, 2)
            """,
            calls="[(torch.randn(2, 3, 4, 4),)]",
            entry="SpatialTokens",
        ),
    ]
    valid = [
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class PositionalScale(nn.Module):
                def forward(self, x):
                    scale = float(np.log(10000.0)) / x.shape[-1]
                    half = int(np.ceil(x.shape[0] / 2))
                    return x[:half] * scale
            """,
            entry="PositionalScale",
        ),
        Valid(
            """
            import numpy as np
            import torch
            from torch import nn

            class NumpyGate(nn.Module):
                def forward(self, x):
                    gate = np.tanh(x.numpy())
                    return torch.from_numpy(gate) * x
            """,
            entry="NumpyGate",
        ),
        Valid(
            """
            import math

            import torch
            from torch import nn

            class Flatten(nn.Module):
                def forward(self, x):
                    n = math.prod(x.shape[1:])
                    weights = x.sum(-1).softmax(0)
                    return x.reshape(x.shape[0], n) * weights[:, None]
            """,
            entry="Flatten",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        context = self.context
        if context.qualname(node.func) not in _SHAPE_REDUCTIONS or len(node.args) != 1:
            return
        if node.args[0].keyword is None and context.kind(node.args[0].value) is Kind.SHAPE:
            prod, imports = spell(context, "math.prod")
            call = node.with_changes(func=cst.parse_expression(prod))
            self.report(node, fix=FixPlan([(node, call)], f"Use {prod}(...)", "unsafe", imports))

"""External-library rules (JIT4xx) beyond their calibrated examples: which numpy/random
calls Dynamo 2.13 traces, how math-on-tensor is told from math-on-sizes, and the fixes."""

from __future__ import annotations

import textwrap

import pytest

from compile_lint.engine.api import fix_text
from compile_lint.engine.lint import lint_text
from compile_lint.settings.config import Config


def _forward(body: str, header: str = "import numpy as np\nimport random\nimport math\nimport copy") -> str:
    lines = textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8)
    module = "class M(nn.Module):\n    def forward(self, x):\n"
    return f"{header}\nimport torch\nfrom torch import nn\n\n{module}{lines}\n        return x\n"


def _codes(source: str, select: str = "JIT4") -> list[str]:
    return [d.code for d in lint_text(source, "m.py", Config(select=(select,)))]


@pytest.mark.parametrize(
    "call",
    [
        "np.random.rand(4, 8)",
        "np.random.randn(*x.shape)",
        "np.random.normal(0.0, 1.0, (4, 8))",
        "np.random.uniform(size=(4, 8))",
        "np.random.randint(0, 3, size=(4,))",
        "np.random.random((4, 8))",
        "np.random.seed(0)",
        "np.sin(x.numpy())",
        "np.sqrt(x.shape[-1])",
    ],
)
def test_traced_numpy_calls_are_silent(call):
    assert _codes(_forward(f"y = {call}"), "JIT401") == []


@pytest.mark.parametrize(
    "call",
    [
        "np.random.rand()",
        "np.random.normal()",
        "np.random.uniform(0.0, 1.0)",
        "np.random.randint(3)",
        "np.random.choice(4, 2)",
        "np.random.permutation(4)",
        "np.random.beta(0.2, 0.2, size=4)",
        "np.random.default_rng(0)",
    ],
)
def test_untraced_numpy_random_calls_are_flagged(call):
    assert _codes(_forward(f"y = {call}"), "JIT401") == ["JIT401"]


def test_numpy_generator_methods_are_flagged_but_arrays_from_draws_are_not():
    source = """
import numpy as np
from torch import nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.rng = np.random.default_rng(0)

    def forward(self, x):
        noise = np.random.rand(4, 8)
        total = noise.sum()
        return x + self.rng.normal() + total
"""
    diagnostics = lint_text(source, "m.py", Config(select=("JIT401",)))
    assert [d.line for d in diagnostics] == [13]


@pytest.mark.parametrize(
    "call, flagged",
    [
        ("random.random()", True),
        ("random.gauss(0, 1)", True),
        ("random.shuffle(order)", True),
        ("random.uniform(0, 1)", False),
        ("random.randint(0, 3)", False),
        ("random.randrange(3)", False),
    ],
)
def test_python_random(call, flagged):
    assert _codes(_forward(f"order = [1, 2]\ny = {call}"), "JIT402") == (["JIT402"] if flagged else [])


@pytest.mark.parametrize(
    "expr, flagged",
    [
        ("math.exp(x.sum())", True),
        ("math.sqrt(self.scale)", True),
        ("math.sqrt(x.shape[-1])", False),
        ("math.log(10000.0)", False),
        ("math.ceil(x.size(0) / 2)", False),
        ("math.prod(x.shape)", False),
    ],
)
def test_math_on_tensors_only(expr, flagged):
    source = _forward(f"y = {expr}").replace(
        "class M(nn.Module):\n",
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.scale = nn.Parameter(torch.ones(()))\n\n",
    )
    assert _codes(source, "JIT404") == (["JIT404"] if flagged else [])


def test_math_fix_only_for_one_argument_functions_with_a_torch_twin():
    source = _forward("a = math.exp(x.sum())\nb = math.log(x.sum(), 2)\nc = math.isnan(x.sum())")
    diagnostics = lint_text(source, "m.py", Config(select=("JIT404",)))
    assert [d.fix is not None for d in diagnostics] == [True, False, False]
    fixed = fix_text(source, "m.py", Config(select=("JIT404",)), unsafe=True).text
    assert "a = torch.exp(x.sum())" in fixed and "math.log(x.sum(), 2)" in fixed


def test_copy_rules_tell_plain_containers_from_tensors():
    source = _forward(
        """
        plain = copy.deepcopy({"a": 1, "b": [2]})
        tensors = copy.deepcopy([x, x])
        mod = copy.deepcopy(self)
        shallow = copy.copy(plain)
        unknown = copy.deepcopy(self.config)
        """
    )
    diagnostics = lint_text(source, "m.py", Config(select=("JIT406",)))
    assert [d.line for d in diagnostics] == [11, 12, 13]


@pytest.mark.parametrize(
    "stmt, flagged",
    [
        ("open('f').read()", True),
        ("torch.load('w.pt')", True),
        ("pathlib.Path('a').write_text('b')", True),
        ("requests.get('http://example.com')", True),
        ("x.numpy().tofile('a.bin')", True),
        ("os.environ.get('A')", False),
        ("os.getenv('A')", False),
        ("os.path.join('a', 'b')", False),
        ("pathlib.Path('a') / 'b'", False),
    ],
)
def test_io(stmt, flagged):
    source = _forward(f"y = {stmt}", header="import os\nimport pathlib\nimport requests")
    assert _codes(source, "JIT405") == (["JIT405"] if flagged else [])


def test_library_calls_flagged_but_type_checks_and_init_are_not():
    source = """
import pandas as pd
import scipy.signal
from sklearn.metrics import roc_auc_score
import torch
from torch import nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.window = torch.as_tensor(scipy.signal.get_window("hann", 8))

    def forward(self, x, y):
        if isinstance(x, pd.DataFrame):
            x = torch.as_tensor(x.values)
        auc = roc_auc_score(y, x)
        return x * auc
"""
    diagnostics = lint_text(source, "m.py", Config(select=("JIT407",)))
    assert [d.line for d in diagnostics] == [16]


def test_clock_reads_in_helpers_called_from_forward_are_flagged():
    source = """
import time
from torch import nn

class M(nn.Module):
    def _tick(self):
        return time.monotonic()

    def forward(self, x):
        self._tick()
        return x
"""
    diagnostics = lint_text(source, "m.py", Config(select=("JIT403",)))
    assert [d.line for d in diagnostics] == [7]



@pytest.mark.parametrize(
    "body, flagged",
    [
        ("y = int(np.prod(x.shape))", True),
        ("y = np.prod(x.size()[1:])", True),
        ("y = np.prod([2, 3])", False),
        ("y = np.prod(x.numpy())", False),
        ("y = math.prod(x.shape)", False),
    ],
)
def test_numpy_prod_of_shape(body, flagged):
    assert _codes(_forward(body), "JIT408") == (["JIT408"] if flagged else [])


# ----- JIT410 random-draw-arithmetic --------------------------------------------------------------


@pytest.mark.parametrize(
    "body, flagged",
    [
        ("k = random.randint(0, 3) + 1", True),
        ("k = x.shape[0] - random.randint(0, 3)", True),
        ("k = -random.uniform(0, 1)", True),
        ("k = random.randint(0, 3)\nk += 1", True),
        ("k = random.randint(0, 3) + random.randrange(2)", True),
        ("k = random.uniform(0, 1)\nj = k\ny = j * 2", True),
        ("k = x * random.uniform(0, 1) * 2", False),  # the draw meets a tensor first
        ("k = random.uniform(0, 1) + x.sum()", False),
        ("k = random.uniform(0, 1) < 0.5", False),  # a comparison is traced
        ("k = random.random() + 1", False),  # JIT402: the call itself breaks first
        ("k = 3 if x.dim() else random.randint(0, 3)\ny = k + 1", False),  # not a draw on every path
        ("k = random.randint(0, 3)\nk = 2\ny = k + 1", False),  # the draw does not reach the read
    ],
)
def test_arithmetic_on_a_python_draw(body, flagged):
    assert _codes(_forward(body), "JIT410") == (["JIT410"] if flagged else [])


@pytest.mark.parametrize(
    "body",
    [
        "x = x[:random.randint(0, 2) + 1]",  # JIT211 alone would say: a slice bound
        "x = torch.zeros(random.randint(1, 3) + 1) + x.sum()",  # JIT204: a size
        "x = x * int(random.uniform(0, 3) + 1)",  # JIT202: int() of a tensor
        "x = x * math.floor(random.uniform(0, 3) + 1)",  # JIT404: math on a tensor
        "x = x * 2 if random.uniform(0, 1) * 2 > 1 else x",  # JIT103: a tensor ternary
    ],
)
def test_a_line_whose_draw_arithmetic_breaks_first_gets_that_finding_only(body):
    """Dynamo fails at the arithmetic (GB0213) before the use: one finding, JIT410's, on the line."""
    assert _codes(_forward(body), "JIT") == ["JIT410"]

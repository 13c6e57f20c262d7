"""Tensor-to-Python rules (JIT2xx): edge cases, look-alikes, and the keep-the-tensor fix.

The rules' own examples are calibrated on the real compiler by test_calibration.py and
test_fix_proof.py; this file covers what examples cannot: exact positions, where a rule
must stay silent, when the fix must not be offered, and gradient behaviour of the fix.
"""

from __future__ import annotations

import textwrap

import pytest

from compile_lint.engine.lint import lint_text
from compile_lint.fixes.apply import fix_text
from compile_lint.settings.config import Config

HEADER = (
    "import numpy as np\nimport torch\nfrom torch import nn\n\n\n"
    "class Model(nn.Module):\n    def forward(self, x):\n"
)


def _module(body: str, header: str = HEADER) -> str:
    return header + textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8) + "\n"


def findings(source: str, select: str = "JIT2") -> list[tuple[int, str]]:
    """(line, code) of every JIT2xx finding in `source`."""
    return [(d.line, d.code) for d in lint_text(source, "model.py", Config(select=(select,)))]


def codes_in_forward(body: str, select: str = "JIT2") -> list[str]:
    """Codes found in a forward(self, x) whose body is `body`."""
    return [code for _, code in findings(_module(body), select)]


def fixed(body: str, unsafe: bool = True) -> str:
    """The forward body after --fix (with --unsafe-fixes by default)."""
    source = _module(body)
    outcome = fix_text(source, "model.py", Config(select=("JIT2",)), unsafe=unsafe)
    assert outcome.error is None
    assert outcome.text.startswith(HEADER)
    return textwrap.dedent(outcome.text[len(HEADER):]).strip("\n")


# ----- what each rule reports -------------------------------------------------------

@pytest.mark.parametrize(
    "body, expected",
    [
        ("return x * x.sum().item()", ["JIT201"]),
        ("return x * x.numpy().max().item()", ["JIT201"]),
        ("return x * float(x.mean())", ["JIT202"]),
        ("return x * int(x.argmax())", ["JIT202"]),
        ("b = bool((x > 0).all())\nreturn x * b", ["JIT202"]),
        ("return x * float(np.abs(x.numpy()).max())", ["JIT202"]),
        ("a = x.numpy()\nreturn x * float(a.max())", ["JIT202"]),
        ("return x.sum(0).tolist()", ["JIT203"]),
        ("return torch.arange(x.max())", ["JIT204"]),
        ("for h, w in zip(x.sum(0).long(), x.sum(1).long()):\n    x = x + torch.zeros(h, w).sum()\nreturn x",
         ["JIT204", "JIT204"]),
        ("return torch.zeros((x > 0).sum(), 3)", ["JIT204"]),
        ("return x.view((x > 0).sum(), -1)", ["JIT204"]),
        ("return torch.split(x, (x > 0).sum())", ["JIT204"]),
        ("i = x.sum(1).argmax()\nreturn x[i]", ["JIT204"]),
        ("return x[torch.argmax(x)]", ["JIT204"]),
        ("return x, str(x.sum())", ["JIT205"]),
        ("return x, format(x.sum(), '.3f')", ["JIT205"]),
        ("return x, 'loss %.3f (%d)' % (x.mean(), 3)", ["JIT205"]),
        ("y = x.any() or x\nreturn y", ["JIT206"]),
        ("y = not x.all()\nreturn x * y", ["JIT206"]),
        ("assert x.all() and x.any()\nreturn x", ["JIT206"]),
        ("return x[x > 0]", ["JIT207"]),
        ("m = torch.isnan(x) | (x < 0)\nreturn x[~m]", ["JIT207"]),
        ("return x[:, x[0] > 0]", ["JIT207"]),
        ("return x.nonzero()", ["JIT207"]),
        ("return torch.where(x > 0)", ["JIT207"]),
        ("return torch.repeat_interleave(x, x.long().abs().flatten()[:4], dim=0)", ["JIT207"]),
    ],
)
def test_reports(body, expected):
    assert codes_in_forward(body) == expected


LOOK_ALIKES = [
    # sizes and Python values are not tensor data
    "return x * float(x.shape[-1]) ** -0.5 + int(x.size(0))",
    "return x * float(np.pi) + float(np.sqrt(8))",
    "return x.view(x.shape[0], -1)",
    "b, n = x.shape\nreturn torch.zeros(b, n) + torch.arange(n)",
    # f-strings and str.format of tensors trace fine on torch 2.13
    "return x, f'{x.sum():.3f}', '{}'.format(x.mean())",
    "return x, str(x.shape) + str(x.dtype) + '%d' % x.shape[0]",
    # tensor logic, not Python truth
    "return (x > 0) & ~torch.isnan(x) | (x < -1)",
    "assert (x == x).all()\nreturn x",
    # static-shape masking and integer indexing
    "return torch.where(x > 0, x, 0) + x * (x > 0) + x.masked_fill(x > 0, 0)",
    "y = x.clone()\ny[y > 0] = 0\nreturn y",
    "return x.t()[x.argmax(1)].sum() + x[:, -1:] + x[..., 0:2].sum()",
    "return x.gather(1, x.argmax(1, keepdim=True))",
    "return torch.repeat_interleave(x, 2, dim=0)",
    # dict methods and other look-alikes of tensor methods
    "d = {'a': x}\nfor k, v in d.items():\n    x = x + v\nreturn x",
    "return x % 2, 'step_%d' % 3",
    # Python numbers the facts once took for tensors: numpy on sizes, torch's own Python values
    "return x / float(np.sqrt(x.shape[-1])) + int(torch.seed() % 1000) % 2",
    "return x + int(torch.__version__.split('.')[0])",
    # the keys of a dict of tensors are strings
    "losses = {'loss_mask': x.sum(), 'loss_cls': x.mean()}\nfor key, loss in losses.items():\n"
    "    if 'mask' in key:\n        x = x * loss\nreturn x",
]


@pytest.mark.parametrize("body", LOOK_ALIKES)
def test_look_alikes_are_silent(body):
    assert codes_in_forward(body) == []


@pytest.mark.parametrize("body", LOOK_ALIKES)
def test_look_alikes_really_compile(body):
    """The silence above is right: each look-alike compiles with fullgraph=True and no break."""
    pytest.importorskip("torch")
    from compile_lint.verifier.probe import probe_example

    result = probe_example(_module(body), "Model", "[(torch.randn(4, 8),)]")
    assert result.clean, result.describe()


def test_numpy_product_of_a_shape_is_reported_once_where_it_breaks():
    """`int(np.prod(x.shape[1:]))` breaks at the conversion (JIT408 says so and fixes it);
    the int it gives is no tensor where it is used as a size."""
    source = _module("n = int(np.prod(x.shape[1:]))\nreturn x.reshape(-1, n)")
    assert findings(source, "JIT") == [(8, "JIT408")]


def test_untyped_parameters_are_not_assumed_tensors():
    source = """
        import torch
        from torch import nn

        class Upsample(nn.Module):
            def forward(self, x, output_size, steps, flag):
                h, w = output_size
                for _ in range(steps):
                    x = x * 2
                y = flag and x
                return x.view(h, w, -1), int(steps), y
        """
    assert findings(textwrap.dedent(source)) == []


def test_annotated_tensor_parameters_are_tensors():
    source = """
        import torch
        from torch import nn

        class Refine(nn.Module):
            def forward(self, x, steps: torch.Tensor):
                for _ in range(steps):
                    x = x * 2
                return x * int(steps)
        """
    assert findings(textwrap.dedent(source)) == [(7, "JIT204"), (9, "JIT202")]


def test_only_compiled_regions_are_checked():
    source = """
        import torch
        from torch import nn

        def report(loss):
            return f"{loss.item():.3f}", str(loss), loss.tolist()

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = float(torch.ones(()).item())

            def forward(self, x):
                if not torch.compiler.is_compiling():
                    print(x.sum().item())
                return x * self.scale
        """
    assert findings(textwrap.dedent(source)) == []


def test_conditions_are_left_to_the_control_flow_rules():
    body = """
        if x.any() and x.all():
            x = x * 2
        while not x.any():
            x = x + 1
        y = x if not x.all() else -x
        return torch.stack([r for r in x if r.sum() > 0 or r.max() > 1])
        """
    assert codes_in_forward(body, select="JIT206") == []


def test_truth_tested_operands_only():
    # `a or b` tests bool(a) only; b is returned as is.
    assert codes_in_forward("y = (x.shape[0] > 1) or x\nreturn y") == []
    assert findings(_module("y = x.any() and x.all() and x\nreturn y")) == [(8, "JIT206"), (8, "JIT206")]


def test_item_receiver_kinds():
    # `.item()` on an unknown value is almost always a tensor; on a module or list it is not ours.
    assert codes_in_forward("return x * self.temperature.item()") == ["JIT201"]
    assert codes_in_forward("sizes = [4, 4]\nreturn x.split(sizes), len(sizes)") == []


def test_augmented_assignment_through_a_mask_reads_it():
    assert codes_in_forward("y = x.clone()\ny[y > 0] += 1\nreturn y") == ["JIT207"]


# ----- the keep-the-tensor fix --------------------------------------------------------

def test_fix_inline_item_keeps_parentheses():
    assert fixed("return x / (x.abs().max().item())") == "return x / (x.abs().max().detach())"


def test_fix_float_of_expression_parenthesises_receiver():
    assert fixed("return x * float(x.mean() + 1)") == "return x * (x.mean() + 1).detach().float()"


def test_fix_through_a_name_used_only_in_tensor_arithmetic():
    body = """
        scale = x.abs().max().item()
        y = x / scale
        return y * scale - 1
        """
    assert fixed(body) == "scale = x.abs().max().detach()\ny = x / scale\nreturn y * scale - 1"


@pytest.mark.parametrize(
    "body",
    [
        # used as a size, in Python arithmetic, in a condition, in a call, returned
        "n = x.sum().item()\nreturn x * n, torch.zeros(int(n))",
        "s = x.sum().item()\nreturn x * (s * 2.0)",
        "s = x.sum().item()\nif s > 0:\n    x = x * s\nreturn x",
        "s = x.sum().item()\nreturn torch.clamp(x, max=s)",
        "s = x.sum().item()\nreturn s",
        # assigned twice: the name may hold either
        "s = x.sum().item()\ns = x.mean().item()\nreturn x * s",
        # a numpy array's item is not a tensor
        "return x * x.numpy().max().item()",
        # int() truncates: not the same as keeping the tensor
        "return x * int(x.sum())",
    ],
)
def test_no_fix_when_the_number_escapes_tensor_arithmetic(body):
    assert fixed(body) == textwrap.dedent(body).strip("\n")


def test_fix_is_unsafe_only():
    body = "return x / x.abs().max().item()"
    assert fixed(body, unsafe=False) == body
    assert fixed(body, unsafe=True) == "return x / x.abs().max().detach()"


torch = pytest.importorskip("torch")


def _load(code: str):
    from compile_lint.verifier.probe import load_module_from_source

    return load_module_from_source(code).Model


def test_fix_keeps_gradients_cut_like_item():
    """`.item()` stops gradients through the scale; the fixed `.detach()` must too."""
    source = _module("return x / x.abs().max().item()")
    outcome = fix_text(source, "model.py", Config(select=("JIT2",)), unsafe=True)
    grads = []
    for code in (source, outcome.text):
        torch.manual_seed(0)
        x = torch.randn(4, 8, requires_grad=True)
        _load(code)()(x).pow(2).sum().backward()
        grads.append(x.grad)
    torch.testing.assert_close(grads[0], grads[1])


def test_json_fix_is_marked_unsafe():
    diagnostics = lint_text(_module("return x * float(x.mean())"), "model.py", Config(select=("JIT2",)))
    assert [d.fix.applicability for d in diagnostics] == ["unsafe"]


def test_sizes_unpacked_from_tuple_annotated_parameters_are_not_tensors():
    """timm's `forward(self, x, size: Tuple[int, int])` then `H, W = size` (coat, twins, csatv2)."""
    source = """
        from typing import Tuple
        import torch
        from torch import nn
        import torch.nn.functional as F

        Size_ = Tuple[int, int]

        class PosConv(nn.Module):
            def forward(self, x: torch.Tensor, size: Tuple[int, int], other: Size_):
                B, N, C = x.shape
                H, W = size
                h2, w2 = other
                x = F.pad(x.view(B, H, W, C), (0, 0, 0, w2, 0, h2))
                return torch.split(x, [H, W], dim=1)
        """
    assert findings(textwrap.dedent(source)) == []


# ----- what the config notes claim ----------------------------------------------------

SCALARS = {"capture_scalar_outputs": True}
SHAPES = {"capture_dynamic_output_shape_ops": True}
CONFIG_CLAIMS = [
    # (rule, invalid example index, config, compiles cleanly under that config)
    ("JIT201", 0, SCALARS, True),  # .item() feeding arithmetic
    ("JIT201", 6, SCALARS, True),  # .item() as a slice bound (the example the capture fix fixes)
    ("JIT201", 7, SCALARS, True),  # .item() as a torch.arange size (no compile call: the message says where)
    ("JIT201", 8, SCALARS, False),  # .item() of a 0-d input as a reshape size: a recompile per value
    ("JIT202", 0, SCALARS, True),  # int(t) as a new_zeros size
    ("JIT202", 2, SCALARS, True),  # float(t) feeding arithmetic
    ("JIT202", 3, SCALARS, False),  # bool(t) deciding a ternary: still a data-dependent guard
    ("JIT203", 1, SCALARS, True),  # integer .tolist() as split sizes
    ("JIT203", 0, SCALARS, False),  # float .tolist(): never traceable
    ("JIT204", 0, SCALARS, True),  # x.new_zeros(lengths.max(), d) (the example the capture fix fixes)
    ("JIT204", 1, SCALARS, True),  # torch.arange(lengths.max())
    ("JIT204", 3, SCALARS, False),  # x[t.argmax()]: 0-d tensor index
    ("JIT204", 4, SCALARS, False),  # range(t)
    ("JIT207", 0, SHAPES, True),  # loss[mask]
]


@pytest.mark.parametrize("code, index, config, clean", CONFIG_CLAIMS,
                         ids=[f"{c}-{i}-{'clean' if ok else 'fails'}" for c, i, _, ok in CONFIG_CLAIMS])
def test_config_notes_hold(code, index, config, clean):
    """Each rule's config_note is measured: the config removes the break exactly where it says."""
    from compile_lint.rules import RULES_BY_CODE
    from compile_lint.verifier.probe import probe_example

    example = RULES_BY_CODE[code].invalid[index]
    with torch._dynamo.config.patch(**config):
        result = probe_example(example.code, example.entry, example.calls)
    assert result.clean is clean, result.describe()


def test_fix_through_augmented_assignment_on_a_tensor():
    body = """
        y = x.clone()
        scale = x.abs().max().item()
        y /= scale
        return y
        """
    assert fixed(body) == "y = x.clone()\nscale = x.abs().max().detach()\ny /= scale\nreturn y"
    # `n += s` on a Python number is not tensor arithmetic.
    untouched = "n = 0\ns = x.sum().item()\nn += s\nreturn x * n"
    assert fixed(untouched) == untouched


# ----- JIT203: vectorising a row loop over .tolist() ---------------------------------------

ROW_LOOP = """
areas = []
for x1, y1, x2, y2 in x.tolist():
    areas.append((x2 - x1) * (y2 - y1) / 2)
return x.new_tensor(areas)
"""


def test_row_loop_fix_gives_identical_values_on_float_half_and_integer_rows():
    torch = pytest.importorskip("torch")
    from compile_lint.verifier.probe import load_module_from_source

    body = fixed(ROW_LOOP)
    assert body == ("x1, y1, x2, y2 = x.double().unbind(-1)\nareas = (x2 - x1) * (y2 - y1) / 2\n"
                    "return areas.to(x.dtype)")
    original = load_module_from_source(_module(ROW_LOOP)).Model()
    rewritten = load_module_from_source(HEADER + textwrap.indent(body, " " * 8) + "\n").Model()
    torch.manual_seed(0)
    rows = [torch.rand(64, 4) * 1000, torch.rand(64, 4).half(), torch.rand(64, 4).bfloat16() * 7,
            torch.randint(-50, 50, (64, 4)), torch.randn(64, 4, dtype=torch.float64), torch.zeros(0, 4)]
    for boxes in rows:
        expected, got = original(boxes), rewritten(boxes)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert torch.equal(got, expected), boxes.dtype


@pytest.mark.parametrize(
    "body",
    [
        # the list is used as a list too
        "areas = []\nfor a, b in x.tolist():\n    areas.append(a * b)\nn = len(areas)\nreturn x.new_tensor(areas) * n",
        "areas = []\nfor a, b in x.tolist():\n    areas.append(a * b)\nareas.append(0.0)\nreturn x.new_tensor(areas)",
        # not elementwise arithmetic: Python functions, comparisons, indexing
        "areas = []\nfor a, b in x.tolist():\n    areas.append(max(a, b))\nreturn x.new_tensor(areas)",
        "areas = []\nfor a, b in x.tolist():\n    areas.append(a ** 0.5)\nreturn x.new_tensor(areas)",
        "areas = []\nfor a, b in x.tolist():\n    areas.append(a // b)\nreturn x.new_tensor(areas)",
        "areas = []\nfor a, b in x.tolist():\n    areas.append(a > b)\nreturn x.new_tensor(areas)",
        # a single loop variable may be a number or a row: `v * 2` repeats a list
        "areas = []\nfor v in x.tolist():\n    areas.append(v * 2)\nreturn x.new_tensor(areas)",
        # not made back into a tensor of the same rows
        "areas = [a * b for a, b in x.tolist()]\nreturn torch.tensor(areas)",
        "areas = [a * b for a, b in x.tolist()]\nreturn x.sum(0).new_tensor(areas)",
        "areas = [a * b for a, b in x.tolist() if a > 0]\nreturn x.new_tensor(areas)",
        "areas = []\nfor a, b in x.tolist():\n    areas.append(a * b)\nelse:\n    areas.append(0.0)\n"
        "return x.new_tensor(areas)",
        "areas = [1.0 for a, b in x.tolist()]\nreturn x.new_tensor(areas)",
        # split sizes: no tensor form
        "return torch.stack([c.sum(0) for c in x.split(x[:, 0].long().tolist())])",
    ],
)
def test_row_loop_fix_is_withheld_where_the_list_or_the_body_is_not_elementwise(body):
    assert codes_in_forward(body, "JIT203") == ["JIT203"]
    assert fixed(body) == textwrap.dedent(body).strip("\n")


@pytest.mark.parametrize("index", [0, 1])
def test_data_dependent_size_test_is_where_fullgraph_fails(index):
    """JIT212's invalid examples also break at JIT207's op by default: the size test is the fullgraph failure."""
    pytest.importorskip("torch")
    from compile_lint.rules.tensor_to_python.jit212_data_dependent_size_test import DataDependentSizeTest
    from compile_lint.verifier.probe import probe_example

    example = DataDependentSizeTest.invalid[index]
    result = probe_example(example.code, example.entry, example.calls)
    assert result.fullgraph_error and "Could not guard on data-dependent expression" in result.fullgraph_error

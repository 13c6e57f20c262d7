"""JIT207's masked-update fix: `x[m] += v` -> `x.copy_(torch.where(m, x + v, x))`, where it is exact.

The rule's examples prove the fix on the compiler (tests/test_fix_proof.py). Here: the
look-alikes where the where form would broadcast differently, or rest on no evidence, keep
their finding with the reason; and the fixed code keeps what eager code does beyond the
proof's float32 outputs: a half tensor stays half with the same values, a view's base sees
the write, gradients are the same.
"""

from __future__ import annotations

import textwrap

import pytest

from compile_lint.engine.api import fix_text, lint_source
from compile_lint.settings.config import Config

torch = pytest.importorskip("torch")

SELECT = Config(select=("JIT207",))


def _forward(body: str, params: str = "x: torch.Tensor, labels: torch.Tensor, w: torch.Tensor") -> str:
    return ("import torch\nfrom torch import nn\n\nclass Model(nn.Module):\n"
            f"    def forward(self, {params}):\n" + textwrap.indent(textwrap.dedent(body).strip(), " " * 8) + "\n")


def _findings(source: str):
    return [d for d in lint_source(source, "m.py", SELECT).diagnostics if d.code == "JIT207"]


@pytest.mark.parametrize("body, reason", [
    ("y = x.clone()\ny[labels == 1] += w[1]\nreturn y", "`w[1]` may hold one value per selected element"),
    ("y = x.clone()\ny[labels == 1] *= 0.5\nreturn y", "the dims of `labels == 1` against `y`'s are unknown"),
    ("y = x.clone()\ny[y > 0] += w[y > 0]\nreturn y", "`w` is not known to be `y`'s shape"),
    ("y = x.clone()\nz = torch.zeros_like(y)\nz = z.sum(0)\ny[y > 0] = z[y > 0]\nreturn y", "`z` is not known"),
    ("y = x.clone()\ny[y > 0] = y[y > 1]\nreturn y", None),
    ("y = x.clone()\ny[torch.rand_like(y) > 0.5] = y[torch.rand_like(y) > 0.5] * 2\nreturn y",
     "is evaluated more than once and may differ each time"),
    ("y = x.clone()\ny[y > 0] += w\nreturn y", "`w` may hold one value per selected element"),
    ("y = x.clone()\ny[y > 0] //= 2\nreturn y", "only `+= -= *= /=` updates"),
    ("y = x.clone()\ny[y < 0] = y[y < 0].exp()\nreturn y", "is more than `+ - * /`"),
    ("y = x.clone()\nm = y > 0\ny = y.sum(0)\ny[m] += 1\nreturn y", "the dims of `m` against `y`'s are unknown"),
])
def test_look_alikes_keep_the_finding_and_say_why(body, reason):
    findings = _findings(_forward(body))
    assert findings and all(d.fix is None for d in findings)
    if reason is None:  # a read through another mask than the write's: no update of that mask, only the setting
        assert all("no `torch.compile` call to set `capture_dynamic_output_shape_ops`"
                   in d.message for d in findings)
    else:
        assert any(reason in d.message for d in findings), [d.message for d in findings]


def test_untyped_parameter_is_no_evidence_for_a_torch_rewrite():
    # `x[x > 0] += 1` works on numpy arrays too; `x.copy_(torch.where(...))` would not.
    findings = _findings(_forward("x[x > 0] += 1\nreturn x", params="x"))
    assert [d.fix for d in findings] == [None]
    assert "`x` is a tensor by default" in findings[0].message


def test_a_plain_masked_read_gets_no_update_reason():
    findings = _findings(_forward("return x[x > 0].sum()"))
    assert [d.fix for d in findings] == [None]
    assert "update" not in findings[0].message  # only the setting's step: the file has no compile call
    assert "call to set `capture_dynamic_output_shape_ops` before" in findings[0].message


def test_fix_is_unsafe_and_names_what_it_rests_on():
    fix = _findings(_forward("y = x.clone()\ny[y > 0] += 1\nreturn y"))[0].fix
    assert fix.applicability == "unsafe"
    assert ("y > 0", "tensor") in fix.rests_on
    assert fix_text(_forward("y = x.clone()\ny[y > 0] += 1\nreturn y"), "m.py", SELECT, unsafe=False).text == \
        _forward("y = x.clone()\ny[y > 0] += 1\nreturn y")


def _original_and_fixed(body: str):
    source = _forward(body)
    fixed = fix_text(source, "m.py", SELECT, unsafe=True).text
    assert fixed != source and "[" not in fixed.split("def forward", 1)[1].split("\n", 1)[1]
    models = []
    for text in (source, fixed):
        namespace: dict = {}
        exec(compile(text, "m.py", "exec"), namespace)
        models.append(namespace["Model"]())
    return models


def test_half_precision_keeps_dtype_and_values():
    original, fixed = _original_and_fixed(
        "y = x.clone()\nm = y < 0\ny[m] = y[m] * 0.3 + 0.1\ny[y > 1] += 0.7\nreturn y")
    x = torch.randn(64, 8).half()
    labels, w = torch.zeros(64), torch.zeros(8)
    expected, got = original(x, labels, w), fixed(x, labels, w)
    assert got.dtype == expected.dtype == torch.half
    assert torch.equal(got, expected)


def test_a_view_of_the_callers_tensor_is_written_through_as_before():
    original, fixed = _original_and_fixed("x[x > 0] *= 2\nreturn x.sum()")
    untouched = torch.randn(4, 6)
    bases = [untouched.clone(), untouched.clone()]
    for model, base in zip((original, fixed), bases):
        model(base[:, 1:3], torch.zeros(4), torch.zeros(2))
    assert torch.equal(bases[0], bases[1])
    assert not torch.equal(bases[1], untouched)  # the fixed code wrote into the caller's tensor


def test_gradients_are_the_same():
    original, fixed = _original_and_fixed(
        "y = x * 1\nz = x.exp()\ny[y > 0] = y[y > 0] * 3 - z[y > 0]\ny[y < 0] -= 2\nreturn (y * y).sum()")
    grads = []
    for model in (original, fixed):
        x = torch.linspace(-2, 2, 24).reshape(4, 6).requires_grad_()
        model(x, torch.zeros(4), torch.zeros(6)).backward()
        grads.append(x.grad)
    torch.testing.assert_close(grads[0], grads[1], rtol=0, atol=0)


def test_a_random_mask_evaluated_once_keeps_its_one_draw():
    # `y[m] += 1` evaluates the mask once, and so does the rewrite: same draw, same order.
    source = _forward("y = x.clone()\ny[torch.rand_like(y) > 0.5] += 1\nreturn y")
    assert "torch.where(torch.rand_like(y) > 0.5, y + 1, y)" in fix_text(source, "m.py", SELECT, unsafe=True).text


@pytest.mark.parametrize("values", [[2**40 + 1, -3], [2**40 + 1, 7, -3]])
def test_an_integer_target_refuses_a_float_augmented_update_in_the_original(values):
    # Why `x + v` needs no cast: a float result for an integer `x` (which would
    # round-trip inexactly through float) is an error there, however many are selected.
    y = torch.tensor(values)
    with pytest.raises(RuntimeError):
        y[y > 0] += 0.5


def test_a_masked_write_of_one_float_into_an_integer_target_is_cast_and_so_is_the_fix():
    # One selected element: the original casts the float; without `.to(x.dtype)` the where
    # form would round the other int64 values through float32.
    original, fixed = _original_and_fixed("y = x.clone()\ny[y > 0] = y[y > 0] * 0.5\nreturn y")
    x = torch.tensor([[2**40 + 1, -(2**40) - 3]])
    expected = original(x, torch.zeros(1), torch.zeros(1))
    assert torch.equal(expected, torch.tensor([[2**39, -(2**40) - 3]]))
    assert torch.equal(fixed(x, torch.zeros(1), torch.zeros(1)), expected)

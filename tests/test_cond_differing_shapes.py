"""torch.cond for tensor branches whose arms differ in shape (fixes/branches/differing_shapes.py).

The rules' `fixed=` examples prove the rewrite (tests/test_fix_proof.py); here are the
look-alikes where torch 2.13 measured it wrong (benchmarks/results/cond_arms_calibration.txt):
a cond whose arms differ in shape cannot be differentiated, its outputs must share rank and
dtype, and its result, of a size known only at run time, must not be broadcast afterwards.
"""

from __future__ import annotations

import pytest

from compile_lint.engine.api import fix_text
from compile_lint.engine.lint import lint_text
from compile_lint.settings.config import Config

SELECT = Config(select=("JIT101", "JIT103"))
HEADER = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"


def _module(body: str, decorator: str = "    @torch.no_grad()\n") -> str:
    return HEADER + decorator + "".join("    " + line + "\n" for line in body.splitlines())


POOL = "def forward(self, x):\n    y = x.sum(0, keepdim=True) if x.mean() > 0 else x\n    return {use}\n"

LOOK_ALIKES = {
    "gradients may flow (no torch.no_grad)": (_module(POOL.format(use="y * 2"), decorator=""),
                                             "cannot differentiate"),
    "the result is broadcast against the input": (_module(POOL.format(use="y + x")), "may broadcast the result"),
    "the result meets another tensor in a matmul": (_module(POOL.format(use="y @ x.t()")), "may broadcast the result"),
    "the arms differ in rank": (
        _module("def forward(self, x):\n    y = x.sum(0) if x.mean() > 0 else x\n    return y * 2\n"),
        "differ in rank"),
    "the arms differ beyond their first dimension": (
        _module("def forward(self, x):\n    y = x[:, :2] * 2 if x.mean() > 0 else x\n    return y * 2\n"),
        "beyond their first dimension"),
    "the arms differ in dtype": (
        _module("def forward(self, x):\n    y = x.sum(0, keepdim=True) if x.mean() > 0 else x.half()\n"
                "    return y * 2\n"), "differ in dtype"),
    "one arm is a bool mask": (
        _module("def forward(self, x):\n    y = (x > 0)[:2] if x.mean() > 0 else x\n    return y * 2\n"),
        "differ in dtype"),
    "the branch is in a loop": (
        _module("def forward(self, x):\n    for _ in range(2):\n"
                "        y = x.sum(0, keepdim=True) if x.mean() > 0 else x\n        x = y * 2\n    return x\n"),
        "in a loop"),
    "the result goes to a helper's caller": (
        "import torch\nfrom torch import nn\n\n\n@torch.no_grad()\ndef pool(x: torch.Tensor):\n"
        "    return x.sum(0, keepdim=True) if x.mean() > 0 else x\n\n\nclass M(nn.Module):\n"
        "    def forward(self, x):\n        return pool(x) + x\n", "caller that may broadcast"),
    "the module is a submodule of another": (
        _module(POOL.format(use="y")) + "\n\nclass Outer(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.inner = M()\n\n    def forward(self, x):\n"
        "        return self.inner(x) + x\n", "submodule of another module"),
}


@pytest.mark.parametrize("name", sorted(LOOK_ALIKES))
def test_look_alikes_keep_the_finding_and_say_why_there_is_no_cond(name):
    source, reason = LOOK_ALIKES[name]
    findings = lint_text(source, "m.py", SELECT)
    assert len(findings) == 1, [d.message for d in findings]
    assert findings[0].fix is None
    assert reason in findings[0].message, findings[0].message
    assert "may differ in shape" in findings[0].message  # the torch.where reason stays


@pytest.mark.parametrize("guard", ["    @torch.no_grad()\n", "    @torch.inference_mode()\n"])
def test_a_gradient_free_forward_gets_torch_cond_with_a_note(guard):
    source = _module(POOL.format(use="y.softmax(-1).sum()"), decorator=guard)
    findings = lint_text(source, "m.py", SELECT)
    assert len(findings) == 1 and findings[0].fix is not None
    assert findings[0].fix.applicability == "unsafe"
    assert "size is known only at run time" in findings[0].fix.message
    fixed = fix_text(source, "m.py", SELECT, unsafe=True).text
    assert ("y = torch.cond(x.mean() > 0, lambda x: x.sum(0, keepdim=True).contiguous(), "
            "lambda x: x.clone(memory_format=torch.contiguous_format), (x,))") in fixed


def test_a_with_no_grad_block_counts_and_a_full_reduction_ends_the_run_time_size():
    body = ("def forward(self, x):\n    with torch.no_grad():\n"
            "        if x.mean() > 0:\n            y = x[:2] * 3\n        else:\n            y = x - 1\n"
            "        total = y.sum()\n    return total + x\n")
    findings = lint_text(_module(body, decorator=""), "m.py", SELECT)
    assert len(findings) == 1 and findings[0].fix is not None, findings[0].message


def test_an_untyped_helper_argument_is_no_evidence_for_torch_cond():
    source = ("import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    @torch.no_grad()\n"
              "    def forward(self, img):\n        if torch.rand(1) < 0.5:\n            return img[:2] * 2\n"
              "        return img - 1\n")
    findings = lint_text(source, "m.py", SELECT)
    assert len(findings) == 1 and findings[0].fix is None
    assert "no evidence" in findings[0].message


def test_tuple_arms_keep_their_parentheses_in_the_lambdas():
    # `lambda x: a, b` would pass `b` to torch.cond as its next argument (a bug with
    # `tensor-branch-fix = "cond"` before; the differing-shapes rewrite meets it too).
    same = ("def forward(self, x: torch.Tensor):\n    if x.mean() > 0:\n        return x * 2, x + 1\n"
            "    return x - 1, x * 3\n")
    fixed = fix_text(_module(same, decorator=""), "m.py", Config(select=("JIT101",), tensor_branch_fix="cond"),
                     unsafe=True).text
    assert "torch.cond(x.mean() > 0, lambda x: (x * 2, x + 1), lambda x: (x - 1, x * 3), (x,))" in fixed
    differing = ("def forward(self, x: torch.Tensor):\n    if x.mean() > 0:\n        return x[:2] * 2, x + 1\n"
                 "    return x - 1, x * 3\n")
    fixed = fix_text(_module(differing), "m.py", SELECT, unsafe=True).text
    assert "lambda x: (x[:2] * 2, x + 1), lambda x: (x - 1, x * 3), (x,))" in fixed

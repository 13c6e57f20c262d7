"""Compiler-setting fixes (fixes/settings.py, fixes/setting_hazards.py), judged by the installed torch.

Both sides: where a setting is offered, the fixed file compiles as one graph (the default
compile and `fullgraph=True`) with eager's outputs; where it is refused because the captured
value would break or crash later, the compiler agrees: with the setting added by hand the
code still breaks, runs eagerly or fails. The measurements behind the tables are in
benchmarks/results/config_fix_calibration.txt.
"""

from __future__ import annotations

import textwrap

import pytest

from compile_lint.engine.api import fix_text, lint_source
from compile_lint.rules import RULES_BY_CODE
from compile_lint.testing import only

torch = pytest.importorskip("torch")
from compile_lint.verifier.probe import compare_compiled_outputs, probe_example  # noqa: E402

SHAPES_LINE = "torch._dynamo.config.capture_dynamic_output_shape_ops = True"
SCALARS_LINE = "torch._dynamo.config.capture_scalar_outputs = True"


def _module(body: str, params: str, compiled: bool = True) -> str:
    source = ("import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
              f"    def forward(self, {params}):\n" + textwrap.indent(textwrap.dedent(body).strip(), " " * 8) + "\n")
    return source + ("\n\nmodel = torch.compile(Net())\n" if compiled else "")


def _finding(source: str, code: str):
    found = [d for d in lint_source(source, "m.py", only(RULES_BY_CODE[code])).diagnostics if d.code == code]
    assert len(found) == 1, [d.message for d in found]
    return found[0]


def _clean_once_fixed(source: str, code: str, calls: str) -> None:
    fixed = fix_text(source, "m.py", only(RULES_BY_CODE[code]), unsafe=True).text
    assert fixed != source
    result = probe_example(fixed, "Net", calls)
    assert result.clean, result.describe()
    check = compare_compiled_outputs(fixed, "Net", calls)
    assert check.equal, (check.error, check.mismatch)


def _not_clean_with(source: str, line: str, calls: str) -> None:
    """The compiler's side of a refusal: the setting, added by hand, does not make the code one clean graph."""
    result = probe_example(f"{source}\n{line}\n", "Net", calls)
    assert not result.clean or result.frames_first_call == 0, result.describe()


MASKS = "[(torch.randn(8, 6), torch.randn(8, 6)), (torch.randn(8, 6), torch.randn(8, 6))]"
BOXES = "[(torch.randn(2, 3, 8, 8), torch.tensor([1, 2, 3, 2])), (torch.randn(2, 3, 8, 8), torch.tensor([2, 1, 4, 3]))]"
# (code, setting, parameters, calls): a selection (JIT207) or integers read with `.tolist()` (JIT203)
SELECTION = ("JIT207", SHAPES_LINE, "x: torch.Tensor, m: torch.Tensor", MASKS)
LIST = ("JIT203", SCALARS_LINE, "x: torch.Tensor, t: torch.Tensor", BOXES)
ITEM = ("JIT201", SCALARS_LINE, "x: torch.Tensor, t: torch.Tensor", BOXES)

OFFERED = [(SELECTION, body) for body in (
    "y = x[m > 0]\nreturn y.sum(0) * 2",
    "y = x[m > 0]\nreturn torch.cat([y, x.view(-1)]) * 2",
    "y = x[m > 0]\nreturn x / (len(y) + 1)",
    "idx = (m > 0).nonzero()\nreturn x[idx[:, 0]].mean(0)",
    "y = x[m > 0]\nz = torch.zeros(y.shape[0], 2) + 1\nreturn z.sum() + y.sum()",
    "counts = torch.bincount((m > 0).long().view(-1), minlength=2)\nreturn counts.float() * 2",
)] + [(LIST, body) for body in (
    "return F.pad(x, t.long().tolist()) * 2",
    "s = t.long().tolist()\nreturn x[..., : s[1]] * 2",
    "out = x\nfor v in t.long().tolist():\n    out = out * v\nreturn out",
    "a, b, c, d = t.long().tolist()\nreturn torch.zeros(a, c) + x.sum()",
)] + [(ITEM, body) for body in (
    # no tensor can replace a slice bound, so the number is kept and captured
    "n = t.max().item()\nreturn x[..., :n].sum(-1) / n",
    "n = t.max().item()\nreturn x[..., : n - 1] * 2",
    "n = t.max().item()\nreturn x[..., :n] * 2, n",  # returned by the compiled forward: leaves the graph
)]


@pytest.mark.parametrize("case,body", OFFERED)
def test_a_value_only_compiling_code_reads_gets_the_setting_and_compiles(case, body):
    code, line, params, calls = case
    source = _module(body, params)
    finding = _finding(source, code)
    assert finding.fix is not None and line in finding.fix.message
    _clean_once_fixed(source, code, calls)


REFUSED = [(SELECTION, body, reason) for body, reason in (
    ("y = x[m > 0]\nif y.numel() > 0:\n    return y * 2\nreturn x", "decides a Python test"),
    # a `for` over nonzero()'s rows gets JIT207's loop finding (fixes/index_loops.py), which says why
    # the setting alone does not help and why this loop has no fix
    ("idx = (m > 0).nonzero()\nfor i in idx:\n    x = x + i[0]\nreturn x", "the `for` loop iterates the indices"),
    ("idx = (m > 0).nonzero()\nreturn x * len(idx.tolist())", "`.tolist()` reads it"),
    ("y = x[m > 0]\nreturn x * 2 if y.shape[0] > 3 else x", "decides a Python test"),
    # longformer: `assert list(t.size()) == [..., n, ...]` with a tensor `n` crashes Dynamo under every setting
    ("n = (m > 0).long().sum()\ny = x[m > 0]\nassert list(y.size()) == [n, 6]\nreturn y * 2", "`list()` reads it"),
)] + [(LIST, body, "would not help `.tolist()`") for body in (
    # kornia's random erasing: starts in two dims of one read
    "a, b, w, h = t.long().tolist()\nreturn x[:, :, b : b + h, a : a + w] * 2",
    # kornia's motion blur: a list indexed by a tensor
    "s = t.long().tolist()\ni = t[0]\nreturn x * s[i]",
    "s = t.long().tolist()\nif s[0] > 1:\n    return x * 2\nreturn x",
    "s = t.long().tolist()\nfor i in range(s[0]):\n    x = x + 1\nreturn x",
)] + [(ITEM, body, "no automatic fix: ") for body in (
    "n = t.max().item()\nreturn [x] * n",  # a Python list's length
    "n = t.max().item()\nreturn x[..., :n] * 2 if n > 2 else x",
)]


@pytest.mark.parametrize("case,body,reason", REFUSED)
def test_a_value_read_in_python_later_gets_no_setting_and_the_compiler_agrees(case, body, reason):
    code, line, params, calls = case
    source = _module(body, params)
    finding = _finding(source, code)
    assert finding.fix is None and reason in finding.message and line not in finding.message
    _not_clean_with(source, line, calls)


def test_a_selection_passed_to_an_unknown_helper_is_not_followed():
    source = _module("y = x[m > 0]\nreturn helper(y)", "x: torch.Tensor, m: torch.Tensor")
    finding = _finding(source, "JIT207")
    assert finding.fix is None and "passed to `helper()`, which the check does not follow" in finding.message


def test_a_file_that_sets_the_setting_has_no_finding_where_it_helps_and_keeps_those_where_it_does_not():
    compile_call = "model = torch.compile"
    clean = _module(OFFERED[0][1], SELECTION[2]).replace(compile_call, f"{SHAPES_LINE}\n{compile_call}")
    assert not [d for d in lint_source(clean, "m.py", only(RULES_BY_CODE["JIT207"])).diagnostics]
    hazard = _module(REFUSED[0][1], SELECTION[2]).replace(compile_call, f"{SHAPES_LINE}\n{compile_call}")
    assert _finding(hazard, "JIT207").fix is None


def test_without_a_compile_call_the_message_names_the_line_to_add():
    finding = _finding(_module(OFFERED[0][1], SELECTION[2], compiled=False), "JIT207")
    assert finding.fix is None
    assert f"by hand: put `{SHAPES_LINE}` right before the `torch.compile(...)`" in finding.message


def test_an_item_read_as_slice_starts_in_two_dims_gets_no_capture_fix():
    body = "a = t[0].item()\nb = t[1].item()\nreturn x[:, :, a:, b:] * 2"
    source = _module(body, "x: torch.Tensor, t: torch.Tensor")
    found = [d for d in lint_source(source, "m.py", only(RULES_BY_CODE["JIT201"])).diagnostics]
    assert found and all(d.fix is None for d in found)
    _not_clean_with(source, SCALARS_LINE, BOXES)
    written = _module("a = t[0].item()\ny = x.clone()\ny[:, :, a:, 1:] = 0\nreturn y",
                      "x: torch.Tensor, t: torch.Tensor")
    assert _finding(written, "JIT201").fix is not None  # written into, the same slices compile
    _clean_once_fixed(written, "JIT201", BOXES)


def test_allow_rnn_is_refused_where_sequences_are_packed_and_the_compiler_agrees():
    rnn = RULES_BY_CODE["JIT409"]
    packed = rnn.invalid[2]
    assert "pack_padded_sequence" in packed.code
    finding = [d for d in lint_source(packed.code, "m.py", only(rnn)).diagnostics][0]
    assert finding.fix is None and "`allow_rnn` would not help" in finding.message
    result = probe_example(f"{packed.code}\ntorch._dynamo.config.allow_rnn = True\n", packed.entry, packed.calls)
    assert result.breaks, result.describe()


def test_the_setting_goes_before_a_decorated_compiled_function():
    source = textwrap.dedent("""\
        import torch


        @torch.compile
        def select(x: torch.Tensor):
            return x[x > 0].sum()
        """)
    fixed = fix_text(source, "m.py", only(RULES_BY_CODE["JIT207"]), unsafe=True).text
    assert fixed == source.replace("@torch.compile", f"{SHAPES_LINE}\n@torch.compile", 1)

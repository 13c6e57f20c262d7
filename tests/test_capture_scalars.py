"""The capture fix of a number used only as a size (JIT201/JIT202): where it applies, where it must not.

Which uses qualify was measured on torch 2.13 (benchmarks/results/scalar_size_capture.txt);
the rules' own examples prove the fixed code compiles (tests/test_fix_proof.py).
"""

from __future__ import annotations

import textwrap

import pytest

from compile_lint.engine.api import fix_text, lint_source
from compile_lint.fixes.capture_scalars import CAPTURED_NOTE
from compile_lint.rules import RULES_BY_CODE
from compile_lint.settings.config import Config
from compile_lint.testing import only

ITEM = RULES_BY_CODE["JIT201"]
SETTING = "torch._dynamo.config.capture_scalar_outputs = True"


def _module(use: str, tail: str = "model = torch.compile(Net())") -> str:
    template = textwrap.dedent("""\
        import torch
        import torch.nn.functional as F
        from torch import nn

        class Net(nn.Module):
            def forward(self, x, lengths):
                n = lengths.max().item()
                return USE

        TAIL
        """)
    return template.replace("USE", use).replace("TAIL", tail)


def _finding(source: str):
    found = [d for d in lint_source(source, "m.py", only(ITEM)).diagnostics if d.code == "JIT201"]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("use", [
    "x[:n] * 2", "x[n:]", "x[:, :n]", "x[n]", "torch.zeros(n) + x.sum()", "torch.arange(n)",
    "x.new_zeros(n, 4)", "x[:1].expand(n, 4)", "x[:1].repeat(n, 1)", "x.narrow(0, 0, n)", "x.topk(n).values",
    "x.roll(n, 0)", "F.pad(x, (0, n))", "torch.full((n, 2), 1.0)",
])
def test_a_number_used_only_as_a_measured_size_gets_the_setting_before_the_compile_call(use):
    source = _module(use)
    assert _finding(source).fix is not None
    fixed = fix_text(source, "m.py", only(ITEM), unsafe=True).text
    assert fixed == source.replace("model = torch.compile", f"{SETTING}\nmodel = torch.compile")


@pytest.mark.parametrize("use", [
    "x[:, n]",  # an index after the first: IndexError once captured
    "x.view(n, -1)", "x.reshape(n, -1)",  # guarded on divisibility: recompiles
    "torch.split(x, n)", "x.split(n)",  # fails once captured
    "torch.arange(0, n)",  # arange with a start: not measured
    "[x] * n",  # a Python list's size
])
def test_other_uses_get_no_capture_fix(use):
    finding = _finding(_module(use))
    assert finding.fix is None
    assert CAPTURED_NOTE not in finding.message and "no automatic fix" in finding.message


def test_without_a_compile_call_the_message_says_where_the_setting_goes():
    finding = _finding(_module("x[:n]", tail=""))
    assert finding.fix is None
    assert "no `torch.compile` call" in finding.message
    assert "no `torch.compile` call to set `capture_scalar_outputs` before; by hand: " \
        f"put `{SETTING}` right before the `torch.compile(...)`" in finding.message


def test_two_compile_calls_get_no_fix():
    finding = _finding(_module("x[:n]", tail="model = torch.compile(Net())\nother = torch.compile(Net())"))
    assert finding.fix is None and "more than one `torch.compile` call" in finding.message


def test_a_file_that_sets_it_is_not_reported():
    source = _module("x[:n]", tail=f"{SETTING}\nmodel = torch.compile(Net())")
    assert not [d for d in lint_source(source, "m.py", only(ITEM)).diagnostics if d.code == "JIT201"]


def test_the_setting_goes_before_a_compile_decorator_and_uses_the_file_torch_name():
    source = textwrap.dedent("""\
        import torch as th

        # compiled helper
        @th.compile(fullgraph=True)
        def head(x, lengths):
            return x[:lengths.max().item()]
        """)
    fixed = fix_text(source, "m.py", only(ITEM), unsafe=True).text
    assert fixed == source.replace("# compiled helper",
                                   "th._dynamo.config.capture_scalar_outputs = True\n# compiled helper")


AS_SIZE = RULES_BY_CODE["JIT204"]


def _as_size_findings(use: str):
    source = _module(use).replace("n = lengths.max().item()", "n = lengths.max()")
    return source, [d for d in lint_source(source, "m.py", only(AS_SIZE)).diagnostics if d.code == "JIT204"]


@pytest.mark.parametrize("use", [
    "torch.zeros(n)", "torch.arange(n)", "x.new_zeros(n, 4)", "x[:1].expand(n, 4)", "x.narrow(0, 0, n)",
    "x.topk(n).values", "torch.full((n,), 1.0)",
])
def test_a_tensor_passed_as_a_measured_size_gets_the_setting(use):
    source, found = _as_size_findings(use)
    assert len(found) == 1 and found[0].fix is not None
    fixed = fix_text(source, "m.py", only(AS_SIZE), unsafe=True).text
    assert fixed == source.replace("model = torch.compile", f"{SETTING}\nmodel = torch.compile")


@pytest.mark.parametrize("use", [
    "x.narrow(0, n, 2)", "F.pad(x, (0, n))",  # fail once captured when torch reads the tensor itself
    "x.view(n, -1)", "torch.split(x, n)",
])
def test_a_tensor_passed_where_capture_does_not_help_gets_no_fix(use):
    _, found = _as_size_findings(use)
    assert len(found) == 1 and found[0].fix is None


def test_two_reads_in_one_file_get_one_setting():
    source = _module("x[:n] * x.new_zeros(int(lengths.min()), 1).sum()")
    config = Config(select=("JIT201", "JIT202"))
    assert sum(d.fix is not None for d in lint_source(source, "m.py", config).diagnostics) == 2
    fixed = fix_text(source, "m.py", config, unsafe=True).text
    assert fixed == source.replace("model = torch.compile", f"{SETTING}\nmodel = torch.compile")
    assert not lint_source(fixed, "m.py", config).diagnostics


def test_a_compiled_method_gets_the_setting_before_its_class():
    source = textwrap.dedent("""\
        import torch


        class Head(torch.nn.Module):
            @torch.compile
            def forward(self, x, lengths):
                return x[:lengths.max().item()]
        """)
    fixed = fix_text(source, "m.py", only(ITEM), unsafe=True).text
    assert fixed == source.replace("\n\nclass Head", f"\n\n{SETTING}\nclass Head")

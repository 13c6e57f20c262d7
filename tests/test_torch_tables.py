"""The generated tables (compile_lint/rules/support/torch_tables.py) are what the installed
torch says, and the rules flag what the tables hold that their hand lists never did."""

from __future__ import annotations

import textwrap

import pytest

from compile_lint.engine.lint import lint_text
from compile_lint.rules.support import torch_tables
from compile_lint.settings.config import Config

torch = pytest.importorskip("torch")
from compile_lint.rules.support import generate_tables  # noqa: E402


def test_generated_tables_match_the_installed_torch():
    with open(generate_tables.TABLES_PATH, encoding="utf-8") as handle:
        current = handle.read()
    assert current == generate_tables.render(), f"torch_tables.py is out of date: run `{generate_tables.COMMAND}`"


def test_tables_hold_the_ops_the_compiler_names():
    assert torch_tables.TORCH_VERSION == torch.__version__.split("+")[0]
    assert "aten::nonzero.default" in torch_tables.DYNAMIC_OUTPUT_SHAPE_OPS
    assert torch_tables.DYNAMIC_OUTPUT_SHAPE_FUNCTIONS["torch.nn.functional.one_hot"] == ("aten::one_hot.default",)
    assert "torch.linalg.lstsq" in torch_tables.DYNAMIC_OUTPUT_SHAPE_FUNCTIONS
    assert torch_tables.DATA_DEPENDENT_OUTPUT_FUNCTIONS["torch.equal"] == ("aten::equal.default",)
    assert "torch.manual_seed" in torch_tables.SKIPPED_TORCH_FUNCTIONS
    assert "tqdm" in torch_tables.SKIPPED_THIRD_PARTY_MODULES


def _flags(code: str, select: str) -> list[int]:
    findings = lint_text(textwrap.dedent(code).lstrip("\n"), "m.py", Config(select=(select,)))
    return [d.line for d in findings if d.code == select]


@pytest.mark.parametrize(
    "call",
    ["F.one_hot(t).float()", "torch.linalg.lstsq(x, x).solution",
     "F.ctc_loss(x.log_softmax(-1).unsqueeze(1), t.unsqueeze(0) + 1, [4], [2])"],
)
def test_table_entries_the_hand_list_lacked_are_flagged(call):
    """Each is calibrated as a JIT207 invalid example (one_hot, lstsq, ctc_loss)."""
    code = f"""
    import torch
    import torch.nn.functional as F

    @torch.compile
    def f(x, t):
        return {call}
    """
    assert _flags(code, "JIT207") == [6]


@pytest.mark.parametrize("call", ["torch.equal(x, t)", "x.allclose(t)"])
def test_data_dependent_output_ops_from_the_table_are_flagged(call):
    """Calibrated as JIT210's invalid examples: "Data dependent operator", fullgraph fails."""
    code = f"""
    import torch

    @torch.compile
    def f(x, t):
        return {call}
    """
    assert _flags(code, "JIT210") == [5]


def test_facts_know_the_data_dependent_outputs_the_table_holds():
    """analysis/ sits below rules/ and cannot read the table: its copy is checked here."""
    from compile_lint.analysis.kinds import calls, facts

    assert {name for name, kind in calls.TORCH_NON_TENSOR.items() if kind is facts.Kind.DATA} == set(
        torch_tables.DATA_DEPENDENT_OUTPUT_FUNCTIONS)
    assert set(torch_tables.DATA_DEPENDENT_OUTPUT_METHODS) <= calls.TENSOR_DATA_METHODS

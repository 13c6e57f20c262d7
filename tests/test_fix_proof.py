"""Every fix example is proven: the fix gives the expected source, keeps outputs equal on
random inputs (several seeds), and the fixed code compiles with fullgraph=True and no recompile.

An invalid example whose rule produces a fix must state the fixed source, so every fix a
rule offers on its own examples is proven here."""

from __future__ import annotations

import pytest

from compile_lint.testing import case_id, example_cases, fix_problems, run_example

torch = pytest.importorskip("torch")
from compile_lint.verifier.probe import probe_example  # noqa: E402

FIXED = example_cases("invalid", lambda rule, example: example.fixed is not None)
UNFIXED = example_cases("invalid", lambda rule, example: example.fixed is None)
SEEDS = (0, 1, 2)


@pytest.mark.parametrize("case", FIXED, ids=[case_id(c) for c in FIXED])
def test_fix_gives_expected_source_and_is_idempotent(case):
    rule, _, example = case
    assert not fix_problems(rule, example)


@pytest.mark.parametrize("case", UNFIXED, ids=[case_id(c) for c in UNFIXED])
def test_an_example_the_rule_fixes_states_its_fixed_source(case):
    rule, _, example = case
    assert not fix_problems(rule, example)


@pytest.mark.parametrize("case", FIXED, ids=[case_id(c) for c in FIXED])
def test_fixed_code_keeps_outputs_and_compiles_cleanly(case):
    rule, _, example = case
    fixed_calls = example.fixed_calls or example.calls
    # Code that fails at import has no outputs to keep: the fixed code must import and compile.
    for seed in SEEDS if rule.fails_at == "compile" else ():
        torch.testing.assert_close(run_example(example.fixed, example.entry, fixed_calls, seed),
                                   run_example(example.code, example.entry, example.calls, seed))
    result = probe_example(example.fixed, example.entry, fixed_calls)
    if rule.kind == "perf":
        # A perf hint's fix changes how the code is compiled or run (dynamic=, inference_mode),
        # which the probe, compiling the entry itself, does not see: it must still be one graph.
        assert result.eager_error is None and not result.breaks, result.describe()
    else:
        assert result.clean, result.describe()

"""Every fix example is proven: the fix gives the expected source, keeps outputs equal on
random inputs (several seeds), and the fixed code compiles with fullgraph=True and no recompile.

An invalid example whose rule produces a fix must state the fixed source, so every fix a
rule offers on its own examples is proven here."""

from __future__ import annotations

import pytest
from conftest import case_id, example_cases, only

from compile_lint.autofix.apply import fix_text

torch = pytest.importorskip("torch")
from compile_lint.verifier.probe import load_module_from_source, probe_example, resolve_entry  # noqa: E402

FIXED = example_cases("invalid", lambda rule, example: example.fixed is not None)
UNFIXED = example_cases("invalid", lambda rule, example: example.fixed is None)
SEEDS = (0, 1, 2)


@pytest.mark.parametrize("case", FIXED, ids=[case_id(c) for c in FIXED])
def test_fix_gives_expected_source_and_is_idempotent(case):
    rule, _, example = case
    outcome = fix_text(example.code, "example.py", only(rule), unsafe=True)
    assert outcome.error is None
    assert outcome.text == example.fixed
    again = fix_text(outcome.text, "example.py", only(rule), unsafe=True)
    assert again.text == outcome.text and not again.applied
    safe_only = fix_text(example.code, "example.py", only(rule), unsafe=False)
    assert all(d.fix.applicability == "safe" for d in safe_only.applied), "an unsafe fix was applied without --unsafe-fixes"


@pytest.mark.parametrize("case", UNFIXED, ids=[case_id(c) for c in UNFIXED])
def test_an_example_the_rule_fixes_states_its_fixed_source(case):
    rule, _, example = case
    outcome = fix_text(example.code, "example.py", only(rule), unsafe=True)
    assert not outcome.applied, f"{rule.code} fixes this example: state `fixed=` so the fix is proven"


def _calls(calls_expr, seed):
    torch.manual_seed(seed)
    calls = eval(calls_expr, {"torch": torch})  # noqa: S307 - our own examples
    return [tuple(c) if not isinstance(c, dict) else c for c in calls]


def _run(code, entry, calls_expr, seed):
    module = load_module_from_source(code)
    fn = resolve_entry(module, entry)  # seeds parameters with 0: same weights both sides
    outputs = []
    with torch.no_grad():
        for call in _calls(calls_expr, seed):
            if isinstance(call, dict):
                outputs.append(fn(*call.get("args", ()), **call.get("kwargs", {})))
            else:
                outputs.append(fn(*call))
    return outputs


@pytest.mark.parametrize("case", FIXED, ids=[case_id(c) for c in FIXED])
def test_fixed_code_keeps_outputs_and_compiles_cleanly(case):
    rule, _, example = case
    fixed_calls = example.fixed_calls or example.calls
    # Code that fails at import has no outputs to keep: the fixed code must import and compile.
    for seed in SEEDS if rule.fails_at == "compile" else ():
        torch.testing.assert_close(_run(example.fixed, example.entry, fixed_calls, seed),
                                   _run(example.code, example.entry, example.calls, seed))
    result = probe_example(example.fixed, example.entry, fixed_calls)
    if rule.kind == "perf":
        # A perf hint's fix changes how the code is compiled or run (dynamic=, inference_mode),
        # which the probe, compiling the entry itself, does not see: it must still be one graph.
        assert result.eager_error is None and not result.breaks, result.describe()
    else:
        assert result.clean, result.describe()

"""Every fix example is proven: the fix gives the expected source, keeps outputs equal on
random inputs (several seeds), and the fixed code compiles with fullgraph=True and no recompile."""

from __future__ import annotations

import pytest

from compile_lint.autofix.apply import fix_text
from compile_lint.linter.config import Config
from compile_lint.rules import ALL_RULES

torch = pytest.importorskip("torch")
from compile_lint.verifier.probe import load_module_from_source, probe_example, resolve_entry  # noqa: E402

FIXED = [(rule, i, ex) for rule in ALL_RULES for i, ex in enumerate(rule.invalid) if ex.fixed is not None]
SEEDS = (0, 1, 2)


def _config(rule) -> Config:
    return Config(select=(rule.code,))


@pytest.mark.parametrize("case", FIXED, ids=[f"{r.code}-{i}" for r, i, _ in FIXED])
def test_fix_gives_expected_source_and_is_idempotent(case):
    rule, _, example = case
    unsafe = rule.fix_applicability == "unsafe"
    outcome = fix_text(example.code, "example.py", _config(rule), unsafe=unsafe)
    assert outcome.error is None
    assert outcome.text == example.fixed
    again = fix_text(outcome.text, "example.py", _config(rule), unsafe=unsafe)
    assert again.text == outcome.text and not again.applied
    if unsafe:
        safe_only = fix_text(example.code, "example.py", _config(rule), unsafe=False)
        assert safe_only.text == example.code, "an unsafe fix was applied without --unsafe-fixes"


def _calls(example, seed):
    torch.manual_seed(seed)
    calls = eval(example.calls, {"torch": torch})  # noqa: S307 - our own examples
    return [tuple(c) if not isinstance(c, dict) else c for c in calls]


def _run(code, example, seed):
    module = load_module_from_source(code)
    fn = resolve_entry(module, example.entry)  # seeds parameters with 0: same weights both sides
    outputs = []
    with torch.no_grad():
        for call in _calls(example, seed):
            if isinstance(call, dict):
                outputs.append(fn(*call.get("args", ()), **call.get("kwargs", {})))
            else:
                outputs.append(fn(*call))
    return outputs


@pytest.mark.parametrize("case", FIXED, ids=[f"{r.code}-{i}" for r, i, _ in FIXED])
def test_fixed_code_keeps_outputs_and_compiles_cleanly(case):
    rule, _, example = case
    for seed in SEEDS:
        torch.testing.assert_close(_run(example.fixed, example, seed), _run(example.code, example, seed))
    result = probe_example(example.fixed, example.entry, example.calls)
    assert result.clean, result.describe()

"""Every rule example is judged by the installed torch: invalid ones break or recompile,
valid ones compile with fullgraph=True, no graph break and no recompile.

Perf hints (kind "perf") report code that is slow or about to stop working, not code that
breaks: their invalid examples must run under torch.compile and give the same outputs as
eager (a hint never claims a correctness problem); what makes them slow is measured
per rule in their own tests and docstrings. Their valid examples are held to the same bar
as every other rule's."""

from __future__ import annotations

import pytest

from compile_lint.engine.lint import lint_text
from compile_lint.rules import ALL_RULES
from compile_lint.testing import case_id, example_cases, flagged_lines, only
from tests.helpers import reported_gb_types

torch = pytest.importorskip("torch")
from compile_lint.verifier.probe import compare_compiled_outputs, probe_example  # noqa: E402

INVALID = example_cases("invalid", lambda rule, example: rule.kind != "perf" and rule.fails_at == "compile")
INVALID_AT_IMPORT = example_cases("invalid", lambda rule, example: rule.fails_at == "import")
INVALID_PERF = example_cases("invalid", lambda rule, example: rule.kind == "perf")
VALID = example_cases("valid")


def _assert_flagged(rule, example) -> None:
    lines = flagged_lines(rule, example.code)
    assert lines, f"{rule.code} did not flag its invalid example"
    if example.lines:
        assert lines == sorted(example.lines), f"{rule.code} flags lines {lines}, the example says {example.lines}"


def _training_only(rule, example) -> bool:
    """True when every finding of `rule` in the example happens only in training mode."""
    findings = lint_text(example.code, "example.py", only(rule))
    return bool(findings) and all(d.mode == "training" for d in findings)


@pytest.mark.parametrize("case", INVALID, ids=[case_id(c) for c in INVALID])
def test_invalid_example_is_flagged_and_really_breaks(case):
    rule, _, example = case
    _assert_flagged(rule, example)
    # A finding that needs `self.training` must break in a training-mode compile.
    result = probe_example(example.code, example.entry, example.calls, training=_training_only(rule, example))
    assert result.eager_error is None, result.describe()
    assert result.breaks or result.recompiles, f"compiler copes with it: {result.describe()}"
    seen = reported_gb_types(result)
    if rule.gb_type and seen:
        expected = {rule.gb_type, *rule.gb_types}
        assert seen & expected, f"{rule.code} predicts {sorted(expected)}, Dynamo reported {sorted(seen)}"


@pytest.mark.parametrize("case", INVALID_AT_IMPORT, ids=[case_id(c) for c in INVALID_AT_IMPORT])
def test_invalid_example_that_fails_at_import_is_flagged_and_really_fails(case):
    """Python is the judge here: importing the example's module raises, before any compile."""
    rule, _, example = case
    _assert_flagged(rule, example)
    with pytest.raises(Exception) as raised:
        probe_example(example.code, example.entry, example.calls)
    assert not isinstance(raised.value, AssertionError), raised.value
    assert "torch._dynamo" not in str(type(raised.value).__module__), f"raised by the compiler: {raised.value!r}"


@pytest.mark.parametrize("case", INVALID_PERF, ids=[case_id(c) for c in INVALID_PERF])
def test_perf_hint_example_is_flagged_and_compiles_to_eager_outputs(case):
    rule, _, example = case
    _assert_flagged(rule, example)
    check = compare_compiled_outputs(example.code, example.entry, example.calls)
    assert check.equal, f"error={check.error!r} mismatch={check.mismatch!r}"


@pytest.mark.parametrize("case", VALID, ids=[case_id(c) for c in VALID])
def test_valid_example_is_silent_and_really_compiles(case):
    rule, _, example = case
    findings = lint_text(example.code, "example.py", only(rule))
    assert not findings, f"false positive: {[(d.code, d.line) for d in findings]}"
    # Code under `self.training` is traced only in a training-mode compile: check both modes.
    for training in (False, True) if "self.training" in example.code else (False,):
        result = probe_example(example.code, example.entry, example.calls, training=training)
        assert result.clean, f"training={training}: {result.describe()}"


def test_every_rule_has_three_valid_lookalikes_and_an_invalid_example():
    for rule in ALL_RULES:
        assert len(rule.valid) >= 3, rule.code
        assert len(rule.invalid) >= 1, rule.code

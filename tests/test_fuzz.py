"""Bounded fuzzing in CI: generated programs never crash the linter or garble a fix.

`benchmarks/fuzz.py --minutes N` runs the same properties for longer.
"""

import pytest
from hypothesis import HealthCheck, given, settings

from fuzz_programs import check_program, example_programs, grammar_programs

FUZZ_SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


@pytest.mark.slow
@FUZZ_SETTINGS
@given(example_programs())
def test_programs_built_from_rule_examples(code):
    assert check_program(code) == []


@pytest.mark.slow
@FUZZ_SETTINGS
@given(grammar_programs())
def test_programs_from_the_python_grammar(code):
    assert check_program(code) == []


# A module that defines the same class and function twice (what the fuzzer's combined
# examples make): JIT804's fix once took the compile call of the file's last binding of
# `model`, so the finding in the first copy was fixed in the second (issue item 20).
from compile_lint.engine.lint import lint_text  # noqa: E402
from compile_lint.fixes.edits import apply_fixes  # noqa: E402
from compile_lint.rules.perf_hints.jit804_varying_shapes_without_dynamic import (  # noqa: E402
    VaryingShapesWithoutDynamic,
)
from fuzz_programs import ALL_CONFIG, _top_level_spans  # noqa: E402

_EXAMPLE = VaryingShapesWithoutDynamic.invalid[0]


def _copy_offset(code: str) -> int:
    return code.count("\n") + 2  # lines of the first copy and the blank lines joining them


def test_jit804_fixes_each_copy_of_a_twice_defined_function_in_place():
    code = _EXAMPLE.code + "\n\n" + _EXAMPLE.code
    assert check_program(code) == []
    findings = [d for d in lint_text(code, "twice.py", ALL_CONFIG) if d.code == "JIT804"]
    offset = _copy_offset(_EXAMPLE.code)
    assert [d.line for d in findings] == [_EXAMPLE.lines[0], _EXAMPLE.lines[0] + offset]
    expected = [_EXAMPLE.fixed + "\n\n" + _EXAMPLE.code, _EXAMPLE.code + "\n\n" + _EXAMPLE.fixed]
    spans = _top_level_spans(code)
    for finding, fixed in zip(findings, expected):
        start, end = next((s, e) for s, e in spans if s <= finding.line <= e)
        assert all(start <= edit.line and edit.end_line <= end for edit in finding.fix.edits)
        assert apply_fixes(code, [finding.fix])[0] == fixed


def test_varying_shape_rules_read_the_compile_call_of_their_own_copy():
    # The first copy is compiled for CUDA graphs (JIT802's), the second without dynamic=
    # (JIT804's): each rule reports the copy whose compile call is its own.
    first = _EXAMPLE.code.replace("torch.compile(Encoder().eval())",
                                  'torch.compile(Encoder().eval(), mode="reduce-overhead")')
    assert first != _EXAMPLE.code
    code = first + "\n\n" + _EXAMPLE.code
    findings = [(d.code, d.line) for d in lint_text(code, "twice.py", ALL_CONFIG) if d.code in ("JIT802", "JIT804")]
    line = _EXAMPLE.lines[0]
    assert sorted(findings) == [("JIT802", line), ("JIT804", line + _copy_offset(first))]

"""Bounded fuzzing in CI: generated programs never crash the linter or garble a fix.

`benchmarks/fuzz.py --minutes N` runs the same properties for longer.
"""

from hypothesis import HealthCheck, given, settings

from fuzz_programs import check_program, example_programs, grammar_programs

FUZZ_SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


@FUZZ_SETTINGS
@given(example_programs())
def test_programs_built_from_rule_examples(code):
    assert check_program(code) == []


@FUZZ_SETTINGS
@given(grammar_programs())
def test_programs_from_the_python_grammar(code):
    assert check_program(code) == []

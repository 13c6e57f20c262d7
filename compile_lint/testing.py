"""What a rule author tests with: a rule's example cases, the lines a rule flags, a fix's proof.

The project's own tests use these (tests/test_calibration.py and the tests of each fix shape),
and a new rule's tests can too:

    from compile_lint.testing import example_cases, flagged_lines, fix_problems

    for rule, index, example in example_cases("invalid"):
        assert flagged_lines(rule, example.code)
        assert not fix_problems(rule, example)
"""

from __future__ import annotations

import textwrap
from typing import Any, Callable

import libcst as cst

from compile_lint.analysis.file.context import FileContext
from compile_lint.engine.api import fix_text, lint_source
from compile_lint.rules import ALL_RULES
from compile_lint.rules.base import Example, Rule
from compile_lint.settings.config import Config

Case = tuple[type[Rule], int, Example]

__all__ = ["Case", "case_id", "example_cases", "fix_problems", "flagged_lines", "make_context", "only",
           "run_example"]


def example_cases(kind: str,
                  predicate: Callable[[type[Rule], Example], bool] = lambda rule, example: True) -> list[Case]:
    """(rule, index, example) for every rule's `kind` ("invalid"/"valid") examples that pass `predicate`."""
    return [(rule, index, example) for rule in ALL_RULES for index, example in enumerate(getattr(rule, kind))
            if predicate(rule, example)]


def case_id(case: Case) -> str:
    """`JIT101-0`: the rule's code and the example's index, for test ids."""
    rule, index, _ = case
    return f"{rule.code}-{index}"


def only(rule: type[Rule]) -> Config:
    """A configuration that runs `rule` alone."""
    return Config(select=(rule.code,))


def flagged_lines(rule: type[Rule], code: str) -> list[int]:
    """The lines `rule` alone flags in `code`."""
    return sorted({d.line for d in lint_source(code, "example.py", only(rule)).diagnostics if d.code == rule.code})


def make_context(code: str, path: str = "m.py") -> FileContext:
    """A FileContext over dedented `code`, as a rule sees it (no other files)."""
    return FileContext(path, cst.parse_module(textwrap.dedent(code)))


def fix_problems(rule: type[Rule], example: Example) -> list[str]:
    """What keeps `rule`'s fix of an invalid `example` from being proven by its source; empty when none.

    The fix (`--fix --unsafe-fixes`, the rule alone) must give exactly `example.fixed`,
    change nothing when run again, and apply no unsafe fix without `--unsafe-fixes`. An
    example without `fixed=` must get no fix at all. That the fixed code keeps outputs and
    compiles is proven on the real compiler (`run_example`, `verifier.probe.probe_example`).
    """
    outcome = fix_text(example.code, "example.py", only(rule), unsafe=True)
    if example.fixed is None:
        return [f"{rule.code} fixes this example: state `fixed=` so the fix is proven"] if outcome.applied else []
    problems = []
    if outcome.error is not None:
        problems.append(outcome.error)
    if outcome.text != example.fixed:
        problems.append(f"the fix gives\n{outcome.text}\nnot the stated `fixed=`\n{example.fixed}")
    again = fix_text(outcome.text, "example.py", only(rule), unsafe=True)
    if again.text != outcome.text or again.applied:
        problems.append("fixing the fixed code changes it again")
    safe_only = fix_text(example.code, "example.py", only(rule), unsafe=False)
    if any(d.fix is None or d.fix.applicability != "safe" for d in safe_only.applied):
        problems.append("an unsafe fix was applied without --unsafe-fixes")
    return problems


def run_example(code: str, entry: str, calls: str, seed: int) -> list[Any]:
    """The outputs of `entry` in `code`, eagerly, for each call of `calls` drawn with `seed` (needs torch).

    Parameters are seeded with 0, so the original and the fixed code run with the same
    weights; comparing the two with `torch.testing.assert_close` proves a fix keeps outputs.
    """
    import torch

    from compile_lint.verifier.probe import load_module_from_source, resolve_entry

    function = resolve_entry(load_module_from_source(code), entry)
    outputs: list[Any] = []
    with torch.no_grad():
        torch.manual_seed(seed)
        drawn = eval(calls, {"torch": torch})  # noqa: S307 - the examples' own call lists
        for call in drawn:
            if isinstance(call, dict):
                outputs.append(function(*call.get("args", ()), **call.get("kwargs", {})))
            else:
                outputs.append(function(*tuple(call)))
    return outputs

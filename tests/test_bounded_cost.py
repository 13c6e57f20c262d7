"""Bounded cost on any input (issue 41, item 2): a lint's work grows with the file, not with its square.

The inputs are benchmarks/bounded_cost.py's generators at sizes that show the growth in a
few seconds; the full sizes are measured there (benchmarks/results/bounded_cost.md). Work is
counted (calls, characters searched, bytes allocated), never timed.
"""

from __future__ import annotations

import sys
import tracemalloc

import libcst as cst
import pytest

import compile_lint.analysis.kinds.certainty as certainty
import compile_lint.engine.lint as engine
from bounded_cost import SIBLING, long_forward, small_modules
from compile_lint.analysis.file.reaching import READ_BINDINGS_BUDGET, ReachingBindings
from compile_lint.analysis.project.summariser import summarise_source
from compile_lint.analysis.project.summary import LOCAL_BINDINGS_BUDGET
from compile_lint.engine.api import ProjectIndex, lint_source
from compile_lint.settings.config import Config


def _codes(text: str, path: str = "model.py", project=None) -> list[str]:
    return [d.code for d in lint_source(text, path, Config(), project=project).diagnostics]


def test_a_long_forward_is_analysed_without_the_deep_stack(monkeypatch):
    """Asked about its end first, `x = x + i` written N times made the kinds recurse N reads deep:
    past 20,000 statements not even the deep stack held, and the two breaks went unreported."""
    def deep_stack(function):
        raise AssertionError("the analysis recursed once per statement")

    monkeypatch.setattr(engine, "run_with_deep_stack", deep_stack)
    assert _codes(long_forward(3_000)) == ["JIT101", "JIT601"]


@pytest.mark.slow
def test_the_two_breaks_of_a_20000_statement_forward_are_reported(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(long_forward(20_000))
    findings = lint_source(path.read_text(), str(path), Config(), project=ProjectIndex(keep=False)).diagnostics
    assert [(d.code, d.line) for d in findings] == [("JIT101", 20_007), ("JIT601", 20_009)]


def test_evidence_for_a_fix_is_looked_for_once_per_name(monkeypatch):
    """An untyped `x` rebound N times: the search for evidence that it is a tensor followed every
    binding of `x` from every read of it, N ** 8 steps (25 statements: 7 s; 1,000: hours)."""
    calls = [0]

    def counted(function):
        def count(*args):
            calls[0] += 1
            if calls[0] > 1_000_000:
                raise AssertionError("the search for evidence does not end")
            return function(*args)
        return count

    monkeypatch.setattr(certainty, "_eager_certain", counted(certainty._eager_certain))
    monkeypatch.setattr(certainty, "_from_random_draw", counted(certainty._from_random_draw))
    work = {}
    for statements in (100, 400):
        calls[0] = 0
        assert _codes(long_forward(statements, annotated=False)) == ["JIT101", "JIT601"]
        work[statements] = calls[0]
    assert work[400] < 5 * work[100], work


def test_a_name_bound_many_times_keeps_a_bounded_summary():
    """The project index's summary kept one tuple per binding of a local, each one longer: N * N / 2
    references for N bindings (3 GB for 20,000 in one forward)."""
    peaks = {}
    for statements in (1_000, 4_000):
        tracemalloc.start()
        try:
            summary = summarise_source("model.py", long_forward(statements).encode())
            peaks[statements] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert len(summary.functions["Net.forward"].aliases["x"]) == LOCAL_BINDINGS_BUDGET
    assert peaks[4_000] < 6 * peaks[1_000], peaks


def test_a_small_file_beside_a_long_one_costs_what_it_costs_alone(tmp_path):
    """The project index reads every file of the directory: a 12-line file beside a long forward took
    as long and as much memory to lint as the long one (42 s and 3.2 GB beside 20,000 statements)."""
    lint_source(SIBLING, str(tmp_path / "warm.py"), Config())  # rules and tables loaded once, not measured
    peaks = {}
    for statements in (1_000, 4_000):
        directory = tmp_path / str(statements)
        directory.mkdir()
        (directory / "model.py").write_text(long_forward(statements))
        (directory / "small.py").write_text(SIBLING)
        tracemalloc.start()
        try:
            assert _codes(SIBLING, str(directory / "small.py"), ProjectIndex(keep=False)) == []
            peaks[statements] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peaks[4_000] < 6 * peaks[1_000], peaks


class _CountedSource(str):
    """A source text that counts the characters searched for a statement's text (`count`, `find`)."""

    searched = 0

    def count(self, sub, *args):  # type: ignore[override]
        if len(sub) > 1:
            _CountedSource.searched += len(self)
        return str.count(self, sub, *args)

    def find(self, sub, *args):  # type: ignore[override]
        if len(sub) > 1:
            _CountedSource.searched += len(self)
        return str.find(self, sub, *args)


def test_many_findings_in_one_file_cost_the_same_each():
    """Each finding of a file searched the whole source for its statements' text and compared its
    top-level statement with every other: 10,000 findings in 50,003 lines took 80 s of CPU."""
    lint_source(small_modules(2), "warm.py", Config())
    work = {}
    for modules in (100, 400):
        source = _CountedSource(small_modules(modules))
        _CountedSource.searched = 0
        events = [0]

        def count(frame, event, arg):
            events[0] += 1

        sys.setprofile(count)
        try:
            findings = lint_source(source, "model.py", Config()).diagnostics
        finally:
            sys.setprofile(None)
        assert [d.code for d in findings] == ["JIT601"] * modules
        assert _CountedSource.searched <= 2 * len(source)  # the source is searched once, not per finding
        work[modules] = events[0]
    assert work[400] < 4.5 * work[100], work


def test_a_name_rebound_in_many_branches_gives_its_reads_up():
    """`if c: x = a_i` N times: the read after the K-th sees K bindings, N * N / 2 in all. Past the
    budget a read is not recorded (its kind is then the flow-insensitive one); a new binding of
    the name is exact again."""
    branches = 2 * READ_BINDINGS_BUDGET
    source = "def f(x, c):\n" + "".join(f"    if c:\n        x = {i}\n    c = x\n" for i in range(branches))
    source += "    x = 0\n    return x\n"
    function = cst.parse_module(source).body[0]
    assert isinstance(function, cst.FunctionDef)
    reads = ReachingBindings(function).reads
    sizes = [len(bindings) for read, bindings in reads.items() if read.value == "x"]
    # The parameter and the first K branches' bindings, up to the budget; the reads past it given up ...
    assert sizes[:-1] == list(range(2, READ_BINDINGS_BUDGET + 1))
    assert sizes[-1] == 1  # ... until `x = 0` binds it afresh

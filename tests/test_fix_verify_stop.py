"""`--fix --verify` stopped before the end (SIGTERM, Ctrl-C, `--verify-timeout`) keeps what it verified.

Through the real CLI and compiler (CPU): the first target proves gated.py's fix, the second
hangs in its factory; stopping the run then writes gated.py and leaves hang.py as it was.
"""

from __future__ import annotations

import signal

import pytest

from tests import test_verifier
from tests.test_verifier import (
    FIX_PROJECT,
    HANGING_FACTORY,
    _assert_stopped_and_clean,
    _workers_running_user_code,
    leftovers,
    run_cli,
    running_cli,
    write_project,
)

private_tmp = test_verifier.private_tmp  # the fixture: a temp dir of the test's own

PROVEN_THEN_HANGING = {
    "pyproject.toml": """
        [tool.compile-lint]
        tensor-branch-fix = "where"

        [tool.compile-lint.verify]
        targets = ["gated.py:make", "hang.py:make"]
    """,
    "gated.py": FIX_PROJECT["gated.py"],
    "hang.py": HANGING_FACTORY,
}
FIXED_GATED = "torch.where(h.mean() > 0, x + h, x - h)"


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_fix_verify_writes_the_files_it_verified_and_leaves_the_rest(tmp_path, private_tmp, signum):
    write_project(tmp_path, PROVEN_THEN_HANGING)
    hang_before = (tmp_path / "hang.py").read_bytes()
    with running_cli("--fix", "--unsafe-fixes", "--verify", "gated.py", "hang.py", cwd=tmp_path) as (
            process, cli, seen):
        # gated.py:make has run (one target at a time, in order) once hang.py:make's workers start.
        workers = _workers_running_user_code(cli, seen, tmp_path, 2)
        process.send_signal(signum)
        _assert_stopped_and_clean(process, workers, signum, private_tmp)
    assert FIXED_GATED in (tmp_path / "gated.py").read_text()
    assert (tmp_path / "hang.py").read_bytes() == hang_before


@pytest.mark.slow
def test_a_verify_timeout_keeps_the_verified_fixes_and_says_what_it_stopped(tmp_path, private_tmp):
    write_project(tmp_path, PROVEN_THEN_HANGING)
    hang_before = (tmp_path / "hang.py").read_bytes()

    done = run_cli("--fix", "--unsafe-fixes", "--verify", "--verify-timeout", "120", "gated.py", "hang.py",
                   cwd=tmp_path)

    assert FIXED_GATED in (tmp_path / "gated.py").read_text()
    assert (tmp_path / "hang.py").read_bytes() == hang_before
    assert ("verification stopped after --verify-timeout 120 s: keeping the fixes of 1 of 2 fixed file(s) verified "
            "so far (gated.py)") in done.stderr, done.stderr
    assert "hang.py: fix rolled back, file left unchanged: not verified: stopped after --verify-timeout 120 s" \
        in done.stderr
    assert done.returncode == 1, done.stderr  # hang.py's finding stays a finding: no error, no signal
    assert leftovers(private_tmp) == []


def test_verify_timeout_needs_verify(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    done = run_cli("--fix", "--verify-timeout", "10", "m.py", cwd=tmp_path)
    assert done.returncode == 2 and "--verify-timeout limits --fix --verify: add --verify" in done.stderr


# A fix that compiles to one graph and loses: torch.where computes an arm the input never takes,
# eight transcendental functions per element of a 1024 x 1024 input (fused by Inductor, still
# about 10-40 ms on a CPU against the original's 0.2 ms: the test of the decision, on CPU).
RARE_BRANCH_PROJECT = {
    "pyproject.toml": """
        [tool.compile-lint.verify]
        targets = ["rare.py:make"]
    """,
    "rare.py": """
        import torch
        from torch import nn


        class RareCorrection(nn.Module):
            def forward(self, x: torch.Tensor):
                if x.abs().max() > 1e6:
                    y = torch.sin(torch.cos(torch.sin(torch.cos(torch.sin(torch.cos(torch.sin(torch.cos(x))))))))
                else:
                    y = x
                return y * 2


        def make():
            return RareCorrection(), [(torch.randn(1024, 1024),)]
    """,
}


@pytest.mark.slow
def test_bench_rolls_back_a_fix_that_compiles_but_runs_slower(tmp_path, private_tmp):
    # Timings on a machine another test worker loads can overlap, and noise keeps a fix by design (the
    # check rolls back only a fix proven slower): up to three runs, each of a fresh copy, must roll it back.
    for attempt in range(3):
        project = tmp_path / f"run{attempt}"
        project.mkdir()
        write_project(project, RARE_BRANCH_PROJECT)
        before = (project / "rare.py").read_bytes()
        done = run_cli("--fix", "--unsafe-fixes", "--verify", "--bench", "rare.py", cwd=project)
        if (project / "rare.py").read_bytes() == before:
            break
    assert (project / "rare.py").read_bytes() == before, done.stderr
    (rollback,) = [line for line in done.stderr.splitlines() if "fix rolled back" in line]
    assert "check failed: compiled fixed code no slower than the compiled original: " in rollback, rollback
    assert "inductor): kept the original" in rollback and "graph breaks 1 -> 0" in rollback, rollback
    assert done.returncode == 1, done.stderr
    assert leftovers(private_tmp) == []


def test_bench_needs_verify(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    done = run_cli("--fix", "--bench", "m.py", cwd=tmp_path)
    assert done.returncode == 2 and "--bench times the fixes --fix --verify proves: add --fix --verify" in done.stderr


def test_the_payoff_decision_needs_the_fixed_codes_fast_quartile_above_the_originals_slow_one():
    from compile_lint.verifier.fixcheck import slower_when_compiled

    original = {"ms": 1.0, "low": 0.9, "high": 1.2, "backend": "inductor"}
    assert slower_when_compiled(original, {"ms": 2.0, "low": 1.3, "high": 3.0, "backend": "inductor"})
    # Slower on the median, but the noise overlaps: not proven slower, the fix stays.
    assert slower_when_compiled(original, {"ms": 1.5, "low": 1.2, "high": 2.5, "backend": "inductor"}) is None
    assert slower_when_compiled(original, None) is None

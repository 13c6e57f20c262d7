"""`--fix --verify` judges the fixes against the original's own verdict (issue 32 item 2).

A target whose original fails too (a custom op without a fake kernel: it never compiles)
is neutral: the same failure before and after holds nothing against the fixes, starts no
bisect, and proves nothing for them. A rolled-back fix is not an error: the file is left
as it was, its findings are still findings (exit 1, 0 with --exit-zero), and the summary
says "rolled back", not "could not be checked".
"""

from __future__ import annotations

import pytest

from compile_lint.verifier.fixcheck import judge, same_failure
from tests.helpers import run_cli
from tests.test_verifier import PACKAGE_PROJECT, _write_package


def _analysis(breaks: int = 0, compile_error=None, eager_error=None, equal: bool = True) -> dict:
    return {"eager_error": eager_error, "compile_error": compile_error,
            "fullgraph_error": compile_error or ("Unsupported" if breaks else None),
            "graph_breaks": [{"line": n} for n in range(breaks)], "recompiles": [],
            "comparison": None if compile_error else {"equal": equal, "max_abs_diff": 0.0, "detail": ""}}


EQUAL = {"equal": True, "max_abs_diff": 0.0, "detail": ""}
FAKE_TENSOR_ERROR = "TorchRuntimeError: RuntimeError when making fake tensor call"


def test_the_same_error_in_other_files_and_lines_is_the_same_failure():
    assert same_failure("TargetError: /home/me/zoo/ops.py:12: cannot import",
                        "TargetError: /tmp/compile-lint-fixcheck-ab12/fixed-3/ops.py:13: cannot import")
    assert same_failure("RuntimeError: tensor at 0x7f3a2b1c freed", "RuntimeError: tensor at 0x55d0aa10 freed")
    assert not same_failure(FAKE_TENSOR_ERROR, "Unsupported: Data-dependent branching")


def test_a_compile_failure_the_original_shares_is_neutral():
    verdict = judge({"target": "t.py:make", "before": _analysis(compile_error=FAKE_TENSOR_ERROR),
                     "after": _analysis(compile_error=FAKE_TENSOR_ERROR), "outputs": EQUAL})
    assert verdict.accepted and verdict.neutral and not verdict.improved
    assert verdict.reason == ("t.py:make: the original fails the same way, not held against the fixes, nothing "
                              f"proven here: does not compile: {FAKE_TENSOR_ERROR}")


def test_a_compile_failure_the_fixes_bring_is_theirs():
    verdict = judge({"target": "t.py:make", "before": _analysis(breaks=1),
                     "after": _analysis(compile_error=FAKE_TENSOR_ERROR), "outputs": EQUAL})
    assert not verdict.accepted and "check failed: fixed code compiles" in verdict.reason
    other = judge({"target": "t.py:make", "before": _analysis(compile_error="Unsupported: something else"),
                   "after": _analysis(compile_error=FAKE_TENSOR_ERROR), "outputs": EQUAL})
    assert not other.accepted and not other.neutral


def test_changed_outputs_are_the_fixes_fault_even_where_the_original_never_compiles():
    verdict = judge({"target": "t.py:make", "before": _analysis(compile_error=FAKE_TENSOR_ERROR),
                     "after": _analysis(compile_error=FAKE_TENSOR_ERROR),
                     "outputs": {"equal": False, "max_abs_diff": 1.0, "detail": "output[0] differs"}})
    assert not verdict.accepted and "check failed: eager outputs equal" in verdict.reason


def test_fixes_that_make_the_original_compile_improve_it():
    verdict = judge({"target": "t.py:make", "before": _analysis(compile_error=FAKE_TENSOR_ERROR),
                     "after": _analysis(breaks=1), "outputs": EQUAL})
    assert verdict.accepted and verdict.improved and not verdict.neutral


def test_a_target_that_raises_the_same_way_on_both_sides_is_neutral():
    error = {"kind": "target", "message": "TargetError: /src/zoo.py: cannot import"}
    fixed_error = {"kind": "target", "message": "TargetError: /tmp/x/fixed-0/zoo.py: cannot import"}
    verdict = judge({"target": "t.py:make", "before": None, "after": None,
                     "before_error": error, "after_error": fixed_error})
    assert verdict.accepted and verdict.neutral
    fixed_raises = judge({"target": "t.py:make", "before": _analysis(), "after": None,
                          "before_error": None, "after_error": {"kind": "error", "message": "NameError: x"}})
    assert not fixed_raises.accepted
    assert fixed_raises.reason == "t.py:make: check failed: fixed code runs: error: NameError: x"


# test_verifier's package (targets.py imports every module; gated.py has a fix that removes
# a break) with pool_layers.py swapped for ops.py: its model calls a custom op that has no
# fake kernel and a shape the fix cannot infer (it never compiles, before or after), and
# prints (a fix).
OPS_MODULE = """
    import torch
    from torch import nn


    @torch.library.custom_op("fix_verify_original::row_norms", mutates_args=())
    def row_norms(x: torch.Tensor) -> torch.Tensor:
        return x.norm(dim=-1, keepdim=True)


    class Normed(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            h = self.fc(x)
            print("normed", h.shape)
            return h / row_norms(h)
"""
NEVER_COMPILES_PROJECT = {
    "pyproject.toml": PACKAGE_PROJECT["pyproject.toml"].replace("make_pool", "make_normed"),
    "models/__init__.py": "from models import gated, ops\n",
    "models/gated.py": PACKAGE_PROJECT["models/gated.py"],
    "models/ops.py": OPS_MODULE,
    "targets.py": PACKAGE_PROJECT["targets.py"].replace("make_pool", "make_normed").replace(
        "models.pool_layers.MaybePool(), [(torch.ones(4, 8),)]", "models.ops.Normed(), [(torch.randn(4, 8),)]"),
}


@pytest.mark.slow
def test_a_target_that_never_compiles_keeps_the_fixes_other_targets_prove(tmp_path):
    _write_package(tmp_path, NEVER_COMPILES_PROJECT)

    done = run_cli("--fix", "--unsafe-fixes", "--verify", "models", cwd=tmp_path)

    # gated.py's fix is proven by make_gated; make_normed fails to compile the same way with
    # and without the fixes, so it holds nothing against them and starts no bisect.
    assert "torch.where(h.mean() > 0, x + h, x - h)" in (tmp_path / "models" / "gated.py").read_text()
    assert "bisect" not in done.stderr, done.stderr
    assert "targets.py:make_normed: neutral with 2 of 2 fixed file(s)" in done.stderr, done.stderr
    # make_gated runs clean with both files' fixes (none at all: it credits every file it
    # imports, as before), so ops.py's print guard is kept too.
    assert "is_compiling()" in (tmp_path / "models" / "ops.py").read_text()
    assert "rolled back" not in done.stderr and "verified 2 fixed file(s) on 2 target(s) in 2 target run(s): 2 kept" \
        in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr  # JIT701's finding (no fix) remains
    assert "could not be checked" not in done.stdout and "compile-lint: error:" not in done.stderr


@pytest.mark.slow
def test_a_fix_only_a_never_compiling_target_runs_is_rolled_back_unproven_and_exit_zero_holds(tmp_path):
    project = dict(NEVER_COMPILES_PROJECT)
    project["pyproject.toml"] = project["pyproject.toml"].replace(
        '"targets.py:make_gated", "targets.py:make_normed"', '"targets.py:make_normed"')
    project["models/__init__.py"] = "from models import ops\n"  # make_gated is never called
    del project["models/gated.py"]
    _write_package(tmp_path, project)
    ops_before = (tmp_path / "models" / "ops.py").read_bytes()

    done = run_cli("--fix", "--unsafe-fixes", "--verify", "--exit-zero", "models", cwd=tmp_path)

    assert (tmp_path / "models" / "ops.py").read_bytes() == ops_before
    (rollback,) = [line for line in done.stderr.splitlines() if "fix rolled back" in line]
    assert rollback.startswith("compile-lint: warning: models/ops.py: fix rolled back, file left unchanged: "
                               "not proven: every target that imports it fails the same way with and without "
                               "the fixes: targets.py:make_normed: the original fails the same way"), rollback
    assert "bisect" not in done.stderr
    # Its findings remain: findings (exit 1, as test_verifier's package test shows), not an
    # error, so --exit-zero makes it 0, as ruff's does.
    assert done.returncode == 0, done.stderr
    assert "Rolled back the fixes of 1 file that --verify did not prove (see the warnings above)." in done.stdout
    assert "could not be checked" not in done.stdout


def test_a_malformed_verify_target_is_a_usage_error_before_anything_is_fixed(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.compile-lint.verify]\ntargets = ["nofile.py:make"]\n')
    (tmp_path / "m.py").write_text("print('x')\n")
    done = run_cli("--fix", "--verify", "m.py", cwd=tmp_path)
    assert done.returncode == 2
    assert "--verify: nofile.py:make: no such file 'nofile.py'" in done.stderr
    assert (tmp_path / "m.py").read_text() == "print('x')\n"


@pytest.mark.slow
def test_jobs_run_targets_at_once_with_the_same_verdicts(tmp_path):
    # -j 4: two targets at once (two processes each). make_pool's bisect and make_gated's run
    # again without the rolled-back file give what one at a time gives.
    _write_package(tmp_path, PACKAGE_PROJECT)
    pool_before = (tmp_path / "models" / "pool_layers.py").read_bytes()

    done = run_cli("--fix", "--unsafe-fixes", "--verify", "-j", "4", "models", cwd=tmp_path)

    assert done.returncode == 1, done.stderr
    assert "torch.where(h.mean() > 0, x + h, x - h)" in (tmp_path / "models" / "gated.py").read_text()
    assert (tmp_path / "models" / "pool_layers.py").read_bytes() == pool_before
    assert "targets.py:make_pool: passes with 1 of 2 fixed file(s); rolled back: pool_layers.py" in done.stderr
    assert "verified 2 fixed file(s) on 2 target(s) in 4 target run(s) (2 of them ran the fixed code alone): " \
           "1 kept, 1 rolled back" in done.stderr, done.stderr

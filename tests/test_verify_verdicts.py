"""What `compile-lint verify` says about a break (issue 41.4, 41.5), on the real compiler (CPU, eager backend):
each break once, the static finding confirmed, a JIT900 line only for a break no static finding covers;
and verdicts that say which compile is which: on torch 2.13, `.item()`, mask indexing, `nonzero` and
`bincount` compile under fullgraph=True and break the default compile."""

import json
import os
import textwrap

import pytest

from tests.helpers import REPO, run_cli

pytestmark = pytest.mark.slow

CAPTURED = """
    import torch
    from torch import nn


    class Captured(nn.Module):
        def forward(self, x):
            n = x.sum().item()
            kept = x[x > 0]
            counts = torch.bincount((x.abs() * 3).long().flatten())
            where = torch.nonzero(x)
            return x * n + kept.sum() + counts.sum() + where.sum()


    class Unflagged(nn.Module):
        def forward(self, x):
            n = x.sum().item()  # noqa: JIT201
            return x * n


    def make():
        torch.manual_seed(0)
        return Captured(), [(torch.randn(4, 8),)]


    def make_unflagged():
        return Unflagged(), [(torch.randn(4, 8),)]
"""
CAPTURED_LINES = [7, 8, 9, 10]  # .item(), mask indexing, bincount, nonzero
FAKESOLVER_SITE = os.path.join(REPO, "tests", "fixtures", "library_reach", "site")
LIBRARY_CALL = """
    import torch
    from fakesolver import solve


    def field(y):
        return torch.tanh(y)


    class Net(torch.nn.Module):
        def forward(self, y):
            return solve(field, y)


    def make():
        return Net(), [(torch.randn(4),)]
"""


def _verify(tmp_path, *targets, env=None):
    report = tmp_path / "report.json"
    done = run_cli("verify", *targets, "--backend", "eager", "--report", str(report), cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    data = json.loads(report.read_text())
    return done.stdout, data["results"], data["diagnostics"]


def test_captured_values_pass_fullgraph_break_the_default_compile_and_each_break_is_listed_once(tmp_path):
    (tmp_path / "captured.py").write_text(textwrap.dedent(CAPTURED).lstrip("\n"))
    stdout, results, findings = _verify(tmp_path, "captured.py:make", "captured.py:make_unflagged")
    captured = next(result for result in results if result["target"] == "captured.py:make")["analysis"]
    # The compiler's verdicts, which the text must tell apart.
    assert captured["fullgraph_error"] is None
    assert sorted(brk["line"] for brk in captured["graph_breaks"]) == CAPTURED_LINES
    verdict = next(line for line in stdout.splitlines() if line.startswith("captured.py:make ["))
    assert verdict.startswith("captured.py:make [cpu, eager, train mode]: default compile: 4 graph breaks, "
                              "no recompiles; fullgraph=True: compiles (captures data-dependent values); "
                              "outputs equal to eager"), verdict
    assert "fullgraph=True fails" not in stdout and "fullgraph fails" not in stdout
    assert "fullgraph=True OK" not in stdout
    # One line per break: the static finding, confirmed; no JIT900 for a break a finding covers.
    in_captured = [f for f in findings if f["line"] in CAPTURED_LINES]
    assert sorted(f["line"] for f in in_captured) == CAPTURED_LINES
    assert all(f["code"] != "JIT900" and f["confirmed"] is True for f in in_captured), in_captured
    # A break that no static finding covers (its finding silenced) keeps its JIT900 line.
    assert [(f["line"], f["code"]) for f in findings if f["line"] == 16] == [(16, "JIT900")]
    assert "(default compile)" in next(f["message"] for f in findings if f["code"] == "JIT900")


def test_a_break_inside_a_library_confirms_the_finding_at_the_call_and_is_not_listed_again(tmp_path):
    (tmp_path / "lib_model.py").write_text(textwrap.dedent(LIBRARY_CALL).lstrip("\n"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((REPO, FAKESOLVER_SITE)))
    _, results, findings = _verify(tmp_path, "lib_model.py:make", env=env)
    (brk,) = results[0]["analysis"]["graph_breaks"]
    assert brk["path"].endswith(os.path.join("fakesolver", "_impl", "steps.py"))  # the break is in the library
    # ... and the static finding at the user's call stands for it, confirmed by the break's frame there.
    assert [(f["path"], f["line"], f["code"], f["confirmed"]) for f in findings] == [
        ("lib_model.py", 11, "JIT101", True)]

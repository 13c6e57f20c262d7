"""`compile-lint verify` and `--fix --verify` end to end, through the real CLI and compiler (CPU)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import assert_findings_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = os.path.join("tests", "verify_targets", "breaks.py")


def run_cli(*args, cwd=ROOT, timeout=600):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "compile_lint", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_without_torch_the_command_says_how_to_install():
    code = ("import sys; sys.modules['torch'] = None; from compile_lint.linter.cli import main; "
            "sys.exit(main(['verify', 'model.py:make']))")
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 2
    assert "pip install 'compile-lint[verify]'" in done.stderr


def test_bad_target_is_a_usage_error():
    done = run_cli("verify", "no_factory_here")
    assert done.returncode == 2
    assert "expected path/to/file.py:factory" in done.stderr


def test_parse_break_and_recompile_messages():
    from compile_lint.verifier.analysis import parse_break_message, parse_recompile_message

    brk = parse_break_message(
        "Graph break in user code at /src/m.py:8\nGraph Break Reason: Encountered graph break when attempting "
        "to trace CALL\n\nFailed to trace builtin operator\n  Explanation: Dynamo does not know how to trace "
        "builtin operator `print`\n For more details, visit: https://x/gb/gb0059.html")
    assert (brk.path, brk.line, brk.gb_type, brk.gb_id) == ("/src/m.py", 8, "Failed to trace builtin operator", "GB0059")
    recompile = parse_recompile_message(
        "Recompiling function forward in /src/m.py:5\n    triggered by the following guard failure(s):\n"
        "    - 0/0: scale == 1.0     # return y * scale  # m.py:11 in forward\n"
        "    - User stack trace:\n    -   File \"/src/m.py\", line 11, in forward")
    assert (recompile.path, recompile.line, recompile.guard) == ("/src/m.py", 11, "scale == 1.0")
    # A recompile caused only by a size change is automatic dynamic: compiled once more, harmless.
    assert parse_recompile_message(
        "Recompiling function f in /src/m.py:1\n    triggered by the following guard failure(s):\n"
        "    - 0/0: tensor 'x' size mismatch at index 0. expected 2, actual 3") is None


@pytest.mark.slow
def test_verify_reports_breaks_and_recompiles_at_their_lines_and_confirms_static_findings(tmp_path):
    report = tmp_path / "report.json"
    done = run_cli("verify", f"{TARGETS}:make", f"{TARGETS}:clean", "--backend", "eager",
                   "--output-format", "json", "--report", str(report))
    assert done.returncode == 1, done.stderr
    findings = assert_findings_json(done.stdout)
    by_code = {}
    for finding in findings:
        by_code.setdefault(finding["code"], []).append(finding)
    (brk,) = by_code["JIT900"]
    assert (brk["path"], brk["line"], brk["gb_type"]) == (TARGETS, 13, "Data-dependent branching")
    assert "GB0170" in brk["message"]
    (recompile,) = by_code["JIT901"]
    assert recompile["line"] == 15 and "scale == 1.0" in recompile["message"]
    (static,) = by_code["JIT101"]
    assert static["line"] == 13 and static["confirmed"] is True
    results = json.loads(report.read_text())["results"]
    clean = next(r for r in results if r["target"].endswith(":clean"))
    # The varying batch dim is marked dynamic: no recompile, one graph, equal outputs.
    assert clean["analysis"]["recompiles"] == [] and clean["analysis"]["fullgraph_error"] is None
    assert clean["analysis"]["comparison"]["equal"]

    from compile_lint.linter.reporters import render
    from compile_lint.verifier.report import runtime_diagnostics

    runtime = [d for r in results for d in runtime_diagnostics(r)]
    sarif = json.loads(render("sarif", runtime))
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"JIT900", "JIT901"}
    assert f"file={TARGETS},line=13" in render("github", runtime)


@pytest.mark.slow
def test_targets_that_raise_hang_or_exhaust_memory_are_reported_and_the_next_target_runs(tmp_path):
    (tmp_path / "bad.py").write_text(textwrap.dedent("""
        import time
        import torch

        def raises():
            raise ValueError("boom in factory")

        def hangs():
            time.sleep(600)

        def exhausts_memory():
            return bytearray(1 << 50)

        def good():
            return (lambda x: torch.sin(x) + 1), [(torch.randn(4),)]
    """))
    done = run_cli("verify", *(f"bad.py:{name}" for name in ("raises", "hangs", "exhausts_memory", "good")),
                   "--backend", "eager", "--timeout", "20", "--output-format", "json", "--no-lint", cwd=tmp_path)
    messages = [f["message"] for f in assert_findings_json(done.stdout) if f["code"] == "JIT904"]
    assert any("boom in factory" in m for m in messages)
    assert any("timeout" in m and "20 s" in m for m in messages)
    assert any("oom" in m and "MemoryError" in m for m in messages)
    assert len(messages) == 3  # `good` ran after them and is clean


FIX_PROJECT = {
    "pyproject.toml": """
        [tool.compile-lint.verify]
        targets = ["gated.py:make", "pooled.py:make"]
    """,
    # A correct fix: torch.where over two branches of the same shape.
    "gated.py": """
        import torch
        from torch import nn


        class GatedResidual(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 8)

            def forward(self, x):
                h = self.proj(x)
                if h.mean() > 0:
                    out = x + h
                else:
                    out = x - h
                return out


        def make():
            return GatedResidual(), [(torch.randn(4, 8),), (torch.randn(4, 8) + 1,)]
    """,
    # A wrong fix, in a module the target imports: the branches have different shapes,
    # so torch.where broadcasts and changes the output. The verifier must roll it back.
    "pool_layers.py": """
        from torch import nn


        class MaybePool(nn.Module):
            def forward(self, x):
                return x.mean(0) if x.sum() > 0 else x
    """,
    "pooled.py": """
        import torch

        from pool_layers import MaybePool


        def make():
            return MaybePool(), [(torch.ones(4, 8),)]
    """,
}


@pytest.mark.slow
def test_fix_verify_keeps_a_proven_fix_and_rolls_back_a_wrong_one(tmp_path):
    for name, text in FIX_PROJECT.items():
        (tmp_path / name).write_bytes(textwrap.dedent(text).lstrip().encode())
    pooled_before = (tmp_path / "pool_layers.py").read_bytes()
    gated_before = (tmp_path / "gated.py").read_bytes()

    done = run_cli("--fix", "--unsafe-fixes", "--verify", ".", cwd=tmp_path)

    assert (tmp_path / "pool_layers.py").read_bytes() == pooled_before
    assert "pool_layers.py: fix rolled back, file left unchanged" in done.stderr
    assert "the fix changes outputs" in done.stderr
    gated_after = (tmp_path / "gated.py").read_text()
    assert gated_after != gated_before.decode()
    assert "torch.where(h.mean() > 0, x + h, x - h)" in gated_after

    # Targets come from the config when none are given; the fixed file now compiles cleanly.
    verified = run_cli("verify", "--backend", "eager", "--output-format", "json", cwd=tmp_path)
    findings = assert_findings_json(verified.stdout)
    assert not [f for f in findings if f["path"] == "gated.py"]
    assert [f for f in findings if f["path"] == "pool_layers.py" and f["code"] == "JIT900"]


def test_verify_needs_fix():
    done = run_cli("--verify", TARGETS)
    assert done.returncode == 2 and "--verify needs --fix" in done.stderr


def test_output_comparison_is_dtype_aware_and_structural():
    torch = pytest.importorskip("torch")
    from compile_lint.verifier.analysis import compare

    x = torch.linspace(-3, 3, 64)
    assert compare(x, x + 5e-5).equal  # float32: within 1e-4
    assert not compare(x, x + 1e-2).equal
    xb = x.bfloat16()
    assert compare(xb, (x + 1e-2).bfloat16()).equal  # bf16: one rounding step is fine
    assert not compare({"logits": x, "ids": torch.arange(3)}, {"logits": x, "ids": torch.arange(1, 4)}).equal
    shape = compare([x], [x.view(8, 8)])
    assert not shape.equal and "(64,)" in shape.detail and "(8, 8)" in shape.detail
    assert compare((x, 2.0, "tag"), (x.clone(), 2.0, "tag")).equal
    nan = torch.tensor([float("nan"), 1.0])
    assert compare(nan, nan.clone()).equal
    assert not compare(nan, torch.tensor([0.0, 1.0])).equal


def test_a_break_inside_the_standard_library_is_reported_at_the_users_line():
    pytest.importorskip("torch")
    import logging

    from compile_lint.verifier.analysis import parse_break_message

    stdlib = os.path.abspath(logging.__file__)
    brk = parse_break_message(
        f"Graph break in user code at {stdlib}:1476\nGraph Break Reason: x\n\nLogger method\n  Explanation: no\n\n"
        "User code traceback:\n"
        f'  File "/src/models/block.py", line 74, in forward\n    logger.debug("x")\n'
        f'  File "{stdlib}", line 1476, in debug\n    if self.isEnabledFor(DEBUG):\n')
    assert (brk.path, brk.line, brk.gb_type) == ("/src/models/block.py", 74, "Logger method")


@pytest.mark.parametrize("target, message", [
    ("nofile.py:make", "nofile.py:make: no such file 'nofile.py'"),
    (f"{TARGETS}:nope", f"{TARGETS}:nope: {TARGETS} defines no 'nope' at top level"),
    ("no_such_package.models:make", "no module named 'no_such_package.models'"),
])
def test_a_missing_file_module_or_factory_is_a_usage_error(target, message):
    done = run_cli("verify", target)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "JIT904" not in done.stdout
    assert len(done.stderr.splitlines()) == 1


def test_factories_made_dynamically_are_left_to_the_run(tmp_path):
    from compile_lint.verifier.targets import missing_target, parse_target

    (tmp_path / "star.py").write_text("from os.path import *\n")
    (tmp_path / "lazy.py").write_text("def __getattr__(name):\n    return print\n")
    (tmp_path / "plain.py").write_text("import torch\nif torch:\n    def make():\n        pass\nelse:\n    build = 1\n")
    assert missing_target(parse_target(f"{tmp_path / 'star.py'}:make")) is None
    assert missing_target(parse_target(f"{tmp_path / 'lazy.py'}:make")) is None
    assert missing_target(parse_target(f"{tmp_path / 'plain.py'}:make")) is None
    assert missing_target(parse_target(f"{tmp_path / 'plain.py'}:build")) is None
    assert "defines no 'forward'" in missing_target(parse_target(f"{tmp_path / 'plain.py'}:forward"))

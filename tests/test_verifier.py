"""`compile-lint verify` and `--fix --verify` end to end, through the real CLI and compiler (CPU)."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest

from tests.helpers import assert_findings_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = os.path.join("tests", "verify_targets", "breaks.py")


def run_cli(*args, cwd=ROOT, timeout=600):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "compile_lint", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_without_torch_the_command_says_how_to_install():
    code = ("import sys; sys.modules['torch'] = None; from compile_lint.frontends.cli import main; "
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
    assert (brk.path, brk.line, brk.gb_type, brk.gb_id) == (
        "/src/m.py", 8, "Failed to trace builtin operator", "GB0059")
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
    # The break is listed once: the static finding, confirmed; no JIT900 beside it (issue 41.4).
    assert "JIT900" not in by_code
    (recompile,) = by_code["JIT901"]
    assert recompile["line"] == 15 and "scale == 1.0" in recompile["message"]
    (static,) = by_code["JIT101"]
    assert static["line"] == 13 and static["confirmed"] is True
    results = json.loads(report.read_text())["results"]
    (brk,) = next(r for r in results if r["target"].endswith(":make"))["analysis"]["graph_breaks"]
    assert (brk["path"].endswith(TARGETS), brk["line"], brk["gb_type"], brk["gb_id"]) == (
        True, 13, "Data-dependent branching", "GB0170")
    clean = next(r for r in results if r["target"].endswith(":clean"))
    # The varying batch dim is marked dynamic: no recompile, one graph, equal outputs.
    assert clean["analysis"]["recompiles"] == [] and clean["analysis"]["fullgraph_error"] is None
    assert clean["analysis"]["comparison"]["equal"]

    from compile_lint.reporters.formats import render
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
    # `where` forces the rewrite this project exists to catch: under the default "auto" the
    # pooled branch (it calls a submodule) gets torch.cond, which is right (see below).
    "pyproject.toml": """
        [tool.compile-lint]
        tensor-branch-fix = "where"

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
    # A wrong fix, in a module the target imports: the branches have different shapes
    # (a submodule's output, which the linter cannot see), so torch.where broadcasts and
    # changes the output. The verifier must roll it back.
    "pool_layers.py": """
        from torch import nn


        class MaybePool(nn.Module):
            def __init__(self):
                super().__init__()
                self.pool = nn.Linear(8, 1)

            def forward(self, x):
                return self.pool(x) if x.sum() > 0 else x
    """,
    "pooled.py": """
        import torch

        from pool_layers import MaybePool


        def make():
            return MaybePool(), [(torch.ones(4, 8),)]
    """,
}


@pytest.mark.slow
def test_fix_verify_keeps_a_proven_fix_and_rolls_back_a_wrong_one(tmp_path, private_tmp):
    write_project(tmp_path, FIX_PROJECT)
    pooled_before = (tmp_path / "pool_layers.py").read_bytes()
    gated_before = (tmp_path / "gated.py").read_bytes()

    done = run_cli("--fix", "--unsafe-fixes", "--verify", ".", cwd=tmp_path)

    assert (tmp_path / "pool_layers.py").read_bytes() == pooled_before
    assert "pool_layers.py: fix rolled back, file left unchanged" in done.stderr
    # The rollback names the check that failed and the numbers behind the verdict.
    rollback = next(line for line in done.stderr.splitlines() if "pool_layers.py: fix rolled back" in line)
    assert "check failed: eager outputs equal" in rollback
    assert "output[0]: (4, 1) torch.float32 vs (4, 8) torch.float32" in rollback
    assert "graph breaks 1 -> 0, recompiles 0 -> 0" in rollback
    assert leftovers(private_tmp) == []
    gated_after = (tmp_path / "gated.py").read_text()
    assert gated_after != gated_before.decode()
    assert "torch.where(h.mean() > 0, x + h, x - h)" in gated_after

    # Targets come from the config when none are given; the fixed file now compiles cleanly.
    verified = run_cli("verify", "--backend", "eager", "--output-format", "json", cwd=tmp_path)
    findings = assert_findings_json(verified.stdout)
    assert not [f for f in findings if f["path"] == "gated.py"]
    # The rolled-back file still breaks: its static finding, confirmed, and no JIT900 beside it.
    pooled = [f for f in findings if f["path"] == "pool_layers.py"]
    assert [f for f in pooled if f["kind"] == "break" and f.get("confirmed")]
    assert not [f for f in pooled if f["code"] == "JIT900"]


@pytest.mark.slow
def test_fix_verify_keeps_the_torch_cond_fix_of_a_branch_that_changes_shape(tmp_path, private_tmp):
    # torch.cond (2.13) accepts arms of different shapes and runs only the taken one, so the
    # "auto" rewrite of the same branch is correct and the verifier proves and keeps it.
    project = dict(FIX_PROJECT, **{"pyproject.toml": """
        [tool.compile-lint.verify]
        targets = ["pooled.py:make"]
    """})
    del project["gated.py"]
    write_project(tmp_path, project)

    done = run_cli("--fix", "--unsafe-fixes", "--verify", ".", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "rolled back" not in done.stderr
    assert "torch.cond(x.sum() > 0" in (tmp_path / "pool_layers.py").read_text()
    assert leftovers(private_tmp) == []
    verified = run_cli("verify", "--backend", "eager", "--output-format", "json", "--no-lint", cwd=tmp_path)
    assert not [f for f in assert_findings_json(verified.stdout) if f["code"] == "JIT900"]


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


# --- Stateful models, temp dirs and rollback messages (issue 13) -------------------------

def _jit501_docs_example(field: str) -> str:
    """JIT501's first documented example (`invalid` or its `fixed` form) with a target factory."""
    from compile_lint.rules.recompile.jit501_mutated_module_state import MutatedModuleState

    example = MutatedModuleState.invalid[0]
    code = textwrap.dedent(example.code if field == "invalid" else example.fixed).strip("\n")
    return code + "\n\n\ndef make():\n    return WarmupScale(), [(torch.randn(4, 8),)] * 4\n"


STATEFUL_FIX_PROJECT = {
    "pyproject.toml": """
        [tool.compile-lint.verify]
        targets = ["warm.py:make", "fused.py:make"]
    """,
    # JIT701: a custom op with no fake kernel; the fix adds `register_fake`. The model also
    # counts its calls in a buffer, so reusing one instance makes compiled differ from eager.
    "fused.py": """
        import torch
        from torch import nn


        @torch.library.custom_op("verifier_test::fused_scale", mutates_args=())
        def fused_scale(x: torch.Tensor, scale: float) -> torch.Tensor:
            out = torch.empty_like(x)
            out.copy_(x * scale)
            return out


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 8)
                self.register_buffer("calls", torch.tensor(0.0), persistent=False)

            def forward(self, x):
                self.calls += 1
                return fused_scale(self.proj(x), 0.5) + x * self.calls


        def make():
            return Block(), [(torch.randn(4, 8),), (torch.randn(4, 8),)]
    """,
}


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A temp dir of this test's own (in process and for the CLI subprocesses): other tests
    running beside this one cannot add to it, so anything in it was left by the code under test."""
    directory = tmp_path / "tmpdir"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


def leftovers(directory) -> list:
    """Whatever is left in a temp dir (torch's own files included: Inductor's precompiled
    headers go to the temp dir whatever its cache setting says)."""
    return sorted(os.listdir(directory))


def write_project(root, files: dict) -> None:
    for name, text in files.items():
        (root / name).write_bytes(textwrap.dedent(text).lstrip().encode())


@pytest.mark.slow
def test_verify_passes_a_stateful_model_and_leaves_no_temp_dir(tmp_path, private_tmp):
    # JIT501's fix: the counter lives in a registered buffer, updated in place. Every call
    # changes the model, so eager, fullgraph and compiled runs must each get a fresh one.
    write_project(tmp_path, {"counter.py": _jit501_docs_example("fixed")})
    done = run_cli("verify", "counter.py:make", "--backend", "eager", "--output-format", "json", "--no-lint",
                   cwd=tmp_path)
    findings = assert_findings_json(done.stdout)
    assert [f["code"] for f in findings] == [], findings
    assert done.returncode == 0, done.stderr
    assert leftovers(private_tmp) == []


@pytest.mark.slow
def test_fix_verify_keeps_correct_fixes_of_stateful_models_and_leaves_no_temp_dir(tmp_path, private_tmp):
    write_project(tmp_path, {**STATEFUL_FIX_PROJECT, "warm.py": _jit501_docs_example("invalid")})
    done = run_cli("--fix", "--unsafe-fixes", "--verify", ".", cwd=tmp_path)
    assert "rolled back" not in done.stderr, done.stderr
    assert (tmp_path / "warm.py").read_text() == _jit501_docs_example("fixed")
    assert "@fused_scale.register_fake" in (tmp_path / "fused.py").read_text()
    assert leftovers(private_tmp) == []


def test_probes_leave_no_temp_dir_and_keep_their_source_readable(private_tmp):
    torch = pytest.importorskip("torch")
    import inspect

    from compile_lint.verifier.probe import compare_compiled_outputs, load_module_from_source, probe_example

    code = textwrap.dedent("""
        import torch

        class Gate(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x * 2
                return x
    """)
    module = load_module_from_source(code)
    assert "if x.sum() > 0:" in inspect.getsource(module.Gate)  # Dynamo and tracebacks read it
    result = probe_example(code, "Gate", "[(torch.ones(3),)]")
    assert result.fullgraph_error == "Unsupported: Data-dependent branching"
    assert compare_compiled_outputs(code, "Gate", "[(torch.ones(3),)]").equal
    assert torch.equal(module.Gate()(torch.ones(3)), torch.full((3,), 2.0))
    assert leftovers(private_tmp) == []


def test_a_rollback_for_more_breaks_gives_the_counts_before_and_after():
    from compile_lint.verifier.fixcheck import judge

    def analysis(breaks: int, recompiles: int) -> dict:
        return {"eager_error": None, "compile_error": None, "fullgraph_error": "Unsupported" if breaks else None,
                "graph_breaks": [{"line": n} for n in range(breaks)],
                "recompiles": [{"line": n} for n in range(recompiles)],
                "comparison": {"equal": True, "max_abs_diff": 0.0, "detail": ""}}

    verdict = judge({"target": "m.py:make", "before": analysis(1, 0), "after": analysis(1, 2),
                     "outputs": {"equal": True, "max_abs_diff": 3e-7, "detail": ""}})
    assert not verdict.accepted
    assert verdict.reason == ("m.py:make: check failed: no more graph breaks + recompiles: 1 before, 3 after "
                              "(graph breaks 1 -> 1, recompiles 0 -> 2, eager outputs max abs diff 3e-07, "
                              "compiled vs eager max abs diff 0)")
    kept = judge({"target": "m.py:make", "before": analysis(1, 0), "after": analysis(0, 0),
                  "outputs": {"equal": True, "max_abs_diff": 0.0, "detail": ""}})
    assert kept.accepted and kept.improved and "graph breaks 1 -> 0" in kept.reason


# --- Termination (SIGTERM, SIGHUP) and the model's mode (new-user issue, items 4 and 5) ---

# FIX_PROJECT's gated model (a fixable break), with a factory that hangs once it has said so.
HANGING_FACTORY = "import os\nimport time\n" + textwrap.dedent(FIX_PROJECT["gated.py"]).split("\n\n\ndef make")[0] + """


def make():
    # Tell the test the worker runs user code (in the working directory: the fixed copy lives
    # elsewhere), then hang, as a CI job's model that never ends.
    open(f"started-{os.getpid()}", "w").close()
    while True:
        time.sleep(0.1)
"""


# The hanging factory as a `--fix --verify` target: its fixable break makes the tool start both sides.
HANGING_PROJECT = {
    "pyproject.toml": """
        [tool.compile-lint]
        tensor-branch-fix = "where"

        [tool.compile-lint.verify]
        targets = ["hang.py:make"]
    """,
    "hang.py": HANGING_FACTORY,
}


@contextlib.contextmanager
def running_cli(*args, cwd):
    """`compile-lint ARGS` started in the background; whatever it started is killed at the end, even
    processes it orphaned (the CLI's children are recorded while they run)."""
    import psutil

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    process = subprocess.Popen([sys.executable, "-m", "compile_lint", *args], cwd=cwd, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list = []
    try:
        yield process, psutil.Process(process.pid), seen
    finally:
        for child in seen:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        if process.poll() is None:
            process.kill()
            process.communicate()


def _workers_running_user_code(cli, seen: list, directory, count: int, within_s: float = 180.0) -> list:
    """The CLI's worker processes, once `count` of them have reached the factory."""
    import time

    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        assert cli.is_running(), "the CLI ended before its workers started"
        seen.extend(child for child in cli.children(recursive=True) if child not in seen)
        started = {int(name.split("-")[1]) for name in os.listdir(directory) if name.startswith("started-")}
        workers = [child for child in seen if child.pid in started]
        if len(workers) >= count:
            return workers
        time.sleep(0.2)
    raise AssertionError(f"{count} worker(s) did not reach the factory within {within_s:g} s")


def _assert_stopped_and_clean(process, workers, signum, private_tmp):
    import psutil

    _, stderr = process.communicate(timeout=15)
    # 128 + the signal, as a shell reports a process that signal ended: not 1 (findings) or 2 (usage).
    # Ctrl-C keeps its status: 2, "interrupted".
    status, message = ((2, "interrupted") if signum == signal.SIGINT else
                       (128 + signum, f"terminated by {signal.Signals(signum).name}"))
    assert process.returncode == status, (process.returncode, stderr)
    assert stderr.splitlines()[-1] == f"compile-lint: error: {message}"
    _, alive = psutil.wait_procs(workers, timeout=5)
    assert alive == [], f"workers still running after {signal.Signals(signum).name}: {alive}"
    for worker in workers:  # nothing left in the worker's process group either (Inductor's compile pool)
        with pytest.raises(ProcessLookupError):
            os.killpg(worker.pid, 0)
    assert leftovers(private_tmp) == []


@pytest.mark.slow
def test_sigterm_stops_the_worker_and_removes_the_temp_dir(tmp_path, private_tmp):
    write_project(tmp_path, {"hang.py": HANGING_FACTORY})
    with running_cli("verify", "hang.py:make", "--backend", "eager", "--no-lint", cwd=tmp_path) as (process, cli, seen):
        (worker,) = _workers_running_user_code(cli, seen, tmp_path, 1)
        assert leftovers(private_tmp)  # the run's compile-lint-verify-* directory exists now
        process.send_signal(signal.SIGTERM)
        _assert_stopped_and_clean(process, [worker], signal.SIGTERM, private_tmp)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_sigterm_sighup_or_ctrl_c_stops_fix_verify_workers_and_leaves_the_file_unchanged(tmp_path, private_tmp, signum):
    write_project(tmp_path, HANGING_PROJECT)
    before = (tmp_path / "hang.py").read_bytes()
    with running_cli("--fix", "--unsafe-fixes", "--verify", "hang.py", cwd=tmp_path) as (process, cli, seen):
        workers = _workers_running_user_code(cli, seen, tmp_path, 2)  # the original and the fixed code, at once
        process.send_signal(signum)
        _assert_stopped_and_clean(process, workers, signum, private_tmp)
        assert (tmp_path / "hang.py").read_bytes() == before


TRAINING_ONLY_BREAK = """
    import torch
    from torch import nn


    class NoisyInTraining(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            if self.training:
                print("training step")
            return self.proj(x)


    def make():
        return NoisyInTraining(), [(torch.randn(4, 8),)]  # a new module trains


    def make_eval():
        return NoisyInTraining().eval(), [(torch.randn(4, 8),)]
"""


def _verdicts(stdout: str) -> dict:
    """The last line per target of the text output: `target [device, backend, mode]: verdict`."""
    return {line.split(" [")[0]: line for line in stdout.splitlines() if line.startswith("noisy.py:")}


@pytest.mark.slow
def test_verify_keeps_the_factorys_mode_and_reports_it(tmp_path):
    write_project(tmp_path, {"noisy.py": TRAINING_ONLY_BREAK})
    report = tmp_path / "report.json"
    done = run_cli("verify", "noisy.py:make", "noisy.py:make_eval", "--backend", "eager", "--no-lint",
                   "--report", str(report), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    verdicts = _verdicts(done.stdout)
    # Trained as the factory made it: the training-only print breaks the graph.
    assert verdicts["noisy.py:make"].startswith(
        "noisy.py:make [cpu, eager, train mode]: default compile: 1 graph break, no recompiles; fullgraph=True: fails")
    assert "noisy.py:12:" in done.stdout and "JIT900" in done.stdout
    assert verdicts["noisy.py:make_eval"].startswith(
        "noisy.py:make_eval [cpu, eager, eval mode]: default compile: no graph breaks, no recompiles; "
        "fullgraph=True: compiles;")
    results = {r["target"]: r for r in json.loads(report.read_text())["results"]}
    assert (results["noisy.py:make"]["mode"], results["noisy.py:make"]["mode_setting"]) == ("train", "factory")
    assert results["noisy.py:make_eval"]["mode"] == "eval"


def test_a_verify_mode_in_the_config_must_be_one_of_the_three(tmp_path):
    from compile_lint.settings.config import ConfigError, load_config

    (tmp_path / "pyproject.toml").write_text('[tool.compile-lint.verify]\nmode = "training"\n')
    with pytest.raises(ConfigError, match='verify.mode must be one of "factory", "train", "eval"'):
        load_config(start=str(tmp_path))


@pytest.mark.slow
def test_mode_flag_and_config_force_train_or_eval(tmp_path):
    write_project(tmp_path, {"noisy.py": TRAINING_ONLY_BREAK, "pyproject.toml": """
        [tool.compile-lint.verify]
        targets = ["noisy.py:make_eval"]
        mode = "train"
    """})
    forced_eval = run_cli("verify", "noisy.py:make", "--mode", "eval", "--backend", "eager", "--no-lint",
                          cwd=tmp_path)
    assert forced_eval.returncode == 0, forced_eval.stdout + forced_eval.stderr
    assert _verdicts(forced_eval.stdout)["noisy.py:make"].startswith(
        "noisy.py:make [cpu, eager, eval mode]: default compile: no graph breaks, no recompiles; "
        "fullgraph=True: compiles;")
    # The config's mode applies to its targets: the eval factory's model is trained.
    from_config = run_cli("verify", "--backend", "eager", "--no-lint", "--output-format", "json", cwd=tmp_path)
    assert from_config.returncode == 1, from_config.stderr
    (brk,) = [f for f in assert_findings_json(from_config.stdout) if f["code"] == "JIT900"]
    assert (brk["path"], brk["line"]) == ("noisy.py", 12)
    settings = run_cli("--show-settings", cwd=tmp_path).stdout
    assert 'verify = { targets = ["noisy.py:make_eval"], mode = "train" }' in settings


@pytest.mark.slow
def test_fix_verify_judges_a_fix_in_a_training_only_branch_in_the_factorys_mode(tmp_path, private_tmp):
    # FIX_PROJECT's wrong torch.where fix (the arms differ in shape), in a branch only
    # training runs: run in eval, as the verifier used to, the fix changed nothing it
    # looked at and was kept; the factory's model trains, and there the outputs differ.
    write_project(tmp_path, {
        "pyproject.toml": """
            [tool.compile-lint]
            tensor-branch-fix = "where"

            [tool.compile-lint.verify]
            targets = ["pool.py:make"]
        """,
        "pool.py": """
            import torch
            from torch import nn


            class TrainingPool(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.pool = nn.Linear(8, 1)

                def forward(self, x):
                    if self.training:
                        return self.pool(x) if x.sum() > 0 else x
                    return x


            def make():
                return TrainingPool(), [(torch.ones(4, 8),)]
        """,
    })
    before = (tmp_path / "pool.py").read_bytes()
    done = run_cli("--fix", "--unsafe-fixes", "--verify", ".", cwd=tmp_path)
    assert "pool.py: fix rolled back, file left unchanged" in done.stderr, done.stderr
    assert "check failed: eager outputs equal" in done.stderr
    assert (tmp_path / "pool.py").read_bytes() == before
    assert leftovers(private_tmp) == []


@pytest.mark.slow
def test_dropout_in_a_training_model_compares_equal_under_inductor(tmp_path):
    # Factories' modules now train unless told otherwise, and Inductor draws its own random
    # numbers: the compiled run must use eager's, or every dropout is an output "mismatch".
    write_project(tmp_path, {"drop.py": """
        import torch
        from torch import nn


        def make():
            return nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5)), [(torch.randn(4, 8),)]
    """})
    report = tmp_path / "report.json"
    done = run_cli("verify", "drop.py:make", "--no-lint", "--output-format", "json", "--report", str(report),
                   cwd=tmp_path)
    assert [f["code"] for f in assert_findings_json(done.stdout)] == [], done.stderr
    (result,) = json.loads(report.read_text())["results"]
    assert result["mode"] == "train" and result["analysis"]["backend"] == "inductor"
    assert result["analysis"]["comparison"]["equal"]


# --- `--fix --verify` at project scale (issue 24 item 6) -----------------------------------

# A package its factory module imports whole, as users lay one out: every target imports
# every fixed file. gated.py's fix is right; pool_layers.py's is wrong (FIX_PROJECT's).
PACKAGE_PROJECT = {
    "pyproject.toml": """
        [tool.compile-lint]
        tensor-branch-fix = "where"

        [tool.compile-lint.verify]
        targets = ["targets.py:make_gated", "targets.py:make_pool"]
    """,
    "models/__init__.py": "from models import gated, pool_layers\n",
    "models/gated.py": FIX_PROJECT["gated.py"].split("\n\n\n        def make")[0] + "\n",
    "models/pool_layers.py": FIX_PROJECT["pool_layers.py"],
    "targets.py": """
        import torch

        import models


        def make_gated():
            return models.gated.GatedResidual(), [(torch.randn(4, 8),), (torch.randn(4, 8) + 1,)]


        def make_pool():
            return models.pool_layers.MaybePool(), [(torch.ones(4, 8),)]
    """,
}


def _write_package(root, files: dict) -> None:
    (root / "models").mkdir()
    write_project(root, files)


@pytest.mark.slow
def test_fix_verify_runs_each_target_once_with_all_fixes_and_bisects_only_the_failing_one(tmp_path, private_tmp):
    _write_package(tmp_path, PACKAGE_PROJECT)
    pool_before = (tmp_path / "models" / "pool_layers.py").read_bytes()

    done = run_cli("--fix", "--unsafe-fixes", "--verify", "models", cwd=tmp_path)

    # A rollback is no error: pool_layers.py is left as it was and its finding stays one (exit 1).
    assert done.returncode == 1, done.stderr
    assert "torch.where(h.mean() > 0, x + h, x - h)" in (tmp_path / "models" / "gated.py").read_text()
    assert (tmp_path / "models" / "pool_layers.py").read_bytes() == pool_before
    rollback = next(line for line in done.stderr.splitlines() if "fix rolled back" in line)
    assert rollback.startswith("compile-lint: warning: models/pool_layers.py: fix rolled back, file left unchanged: "
                               "targets.py:make_pool: check failed: eager outputs equal"), rollback
    assert done.stdout.endswith("Rolled back the fixes of 1 file that --verify did not prove (see the warnings "
                                "above).\n"), done.stdout
    progress = [re.sub(r"\(\d+ s\)", "(N s)", line.strip()) for line in done.stderr.splitlines()
                if not line.startswith("compile-lint:")]
    # make_gated passes with both files' fixes: one run. make_pool fails with both, passes
    # with gated.py's alone (a bisect run of the fixed side only, beside the original's
    # first run), so pool_layers.py's is the culprit (the set with it already failed: no
    # run). make_gated then runs once more without the rolled-back file.
    assert progress[:8] == [
        "verifying fixes [1/2] targets.py:make_gated ...",
        "targets.py:make_gated: passes with 2 of 2 fixed file(s)",
        "verifying fixes [2/2] targets.py:make_pool ...",
        "targets.py:make_pool: fails with 2 fixed files together; bisecting (check failed: eager outputs equal: "
        + progress[3].split("bisecting (check failed: eager outputs equal: ", 1)[-1],
        "bisect run 3: targets.py:make_pool with 1 suspect(s) (gated.py) beside 0 passing file(s) ...",
        "passes (N s)",
        "targets.py:make_pool: passes with 1 of 2 fixed file(s); rolled back: pool_layers.py",
        "verifying fixes again without the rolled-back files: targets.py:make_gated ...",
    ], done.stderr
    assert ("verified 2 fixed file(s) on 2 target(s) in 4 target run(s) (2 of them ran the fixed code alone): "
            "1 kept, 1 rolled back") in done.stderr
    assert leftovers(private_tmp) == []


@pytest.mark.slow
def test_sigkill_kills_the_workers_and_the_next_run_removes_the_temp_dir(tmp_path, private_tmp):
    import psutil

    from compile_lint.verifier.scratch import owned_directory, remove_stale

    write_project(tmp_path, HANGING_PROJECT)
    with running_cli("--fix", "--unsafe-fixes", "--verify", "hang.py", cwd=tmp_path) as (process, cli, seen):
        workers = _workers_running_user_code(cli, seen, tmp_path, 2)
        process.kill()
        process.communicate(timeout=15)
        _, alive = psutil.wait_procs(workers, timeout=10)
        assert alive == [], "the workers outlived the tool"
    (left,) = leftovers(private_tmp)  # SIGKILL leaves no time to clean up
    assert left.startswith("compile-lint-fixcheck-")
    with owned_directory("compile-lint-verify-") as running:  # a live run's directory stays
        assert remove_stale(str(private_tmp)) == [str(private_tmp / left)]
        assert os.path.isdir(running)
    assert leftovers(private_tmp) == []


@pytest.mark.slow
def test_fix_verify_rolls_back_a_file_whose_fixes_remove_nothing_even_beside_one_that_does(tmp_path, private_tmp):
    # Run together, the target has fewer breaks; the compiler places the one removed in
    # gated.py, so idle.py's fix (in a model the target never builds) proves nothing.
    project = {
        "pyproject.toml": PACKAGE_PROJECT["pyproject.toml"].replace(
            '"targets.py:make_gated", "targets.py:make_pool"', '"targets.py:make"'),
        "models/__init__.py": "from models import gated, idle\n",
        "models/gated.py": PACKAGE_PROJECT["models/gated.py"],
        "models/idle.py": PACKAGE_PROJECT["models/gated.py"].replace("GatedResidual", "NeverBuilt"),
        "targets.py": """
            import torch
            from torch import nn

            import models


            class Wrapped(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.inner = models.gated.GatedResidual()

                def forward(self, x):
                    x = self.inner(x)
                    if x.sum() > 0:  # noqa: JIT101 - a break no fix removes
                        x = x * 2
                    return x


            def make():
                return Wrapped(), [(torch.randn(4, 8),), (torch.randn(4, 8) + 1,)]
        """,
    }
    _write_package(tmp_path, project)
    idle_before = (tmp_path / "models" / "idle.py").read_bytes()

    done = run_cli("--fix", "--unsafe-fixes", "--verify", "models", cwd=tmp_path)

    assert "torch.where(h.mean() > 0, x + h, x - h)" in (tmp_path / "models" / "gated.py").read_text()
    assert (tmp_path / "models" / "idle.py").read_bytes() == idle_before
    (rollback,) = [line for line in done.stderr.splitlines() if "fix rolled back" in line]
    assert ("models/idle.py: fix rolled back, file left unchanged: check failed: fewer graph breaks + "
            "recompiles on some target: targets.py:make: outputs equal (graph breaks 2 -> 1") in rollback, rollback
    # The target runs again without idle.py's fix, so what is written was what ran.
    assert "in 2 target run(s) (1 of them ran the fixed code alone): 1 kept, 1 rolled back" in done.stderr, \
        done.stderr
    assert leftovers(private_tmp) == []

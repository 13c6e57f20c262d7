"""Stopping a run (issue 41.3): SIGTERM or SIGHUP during a lint or a `--fix` ends the pool's workers
with the CLI, says in one line how far it got, exits 128 + the signal, and leaves no file half-written.

Real subprocesses on a tree big enough to be stopped in the middle; the workers are read from /proc.
"""

import glob
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from compile_lint.engine.api import fix_text
from compile_lint.settings.config import Config
from tests.helpers import BREAKING_GATE, REPO, child_processes, still_running

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the workers from /proc (Linux)")]

# One file: twenty tensor `if`s, each a JIT101 finding with an unsafe fix (torch.where).
_GATE_CLASS = "\n\n\n" + BREAKING_GATE.split("\n\n\n", 1)[1]
MODEL = BREAKING_GATE + "".join(_GATE_CLASS.replace("class Gate(", f"class Gate{n}(") for n in range(1, 20))
FILES = 400  # about 30 s of work on two cores: stopped long before it ends


def _write_tree(root) -> list:
    (root / "pyproject.toml").write_text("[tool.compile-lint]\n")
    paths = [root / f"model_{index:04d}.py" for index in range(FILES)]
    for path in paths:
        path.write_text(MODEL)
    return paths


def _start(root, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (REPO, os.environ.get("PYTHONPATH")))))
    return subprocess.Popen([sys.executable, "-m", "compile_lint", "-j", "2", *args, "."], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stop_midway(process, started, timeout_s: float = 240.0) -> set:
    """Wait until `started()` says the work is under way, note the CLI's children, then return them."""
    seen: set = set()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        seen |= child_processes(process.pid)
        if started() and len(still_running(seen)) >= 2:
            return seen
        time.sleep(0.05)
    raise AssertionError("the run did not get under way in time")


def _survivors(process, seen: set, signum: int, within_s: float) -> set:
    """Send `signum` to the CLI: which of its children `seen` are still running `within_s` after it ended.
    Whatever is left is killed: orphans would hold the pipes open."""
    try:
        process.send_signal(signum)
        process.wait(timeout=60)
        deadline = time.monotonic() + within_s
        while still_running(seen) and time.monotonic() < deadline:
            time.sleep(0.05)
        return still_running(seen)
    finally:
        for pid, _ in still_running(seen):
            os.kill(pid, signal.SIGKILL)
        if process.poll() is None:
            process.kill()


def _assert_stopped(process, seen: set, signum: int, doing: str) -> None:
    survivors = _survivors(process, seen, signum, within_s=5)
    _, stderr = process.communicate(timeout=60)
    assert not survivors, f"workers outlived the CLI: {survivors}"
    # 128 + the signal, as a shell reports a process that signal ended; Ctrl-C keeps its 2, "interrupted".
    status, reason = ((2, "interrupted") if signum == signal.SIGINT else
                      (128 + signum, f"terminated by {signal.Signals(signum).name}"))
    assert process.returncode == status, stderr
    # One line, how far the run got; nothing else (no traceback from the workers).
    assert re.fullmatch(rf"compile-lint: error: {reason}: stopped while {doing}, "
                        rf"\d+ of {FILES} files done\n", stderr), stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_during_a_lint_ends_the_workers_with_the_cli(tmp_path, signum):
    _write_tree(tmp_path)
    process = _start(tmp_path)

    def linting() -> bool:  # the workers write each file's findings to the cache as they go
        return bool(glob.glob(str(tmp_path / ".compile-lint-cache" / "*" / "*" / "*.json")))

    seen = _stop_midway(process, linting)
    _assert_stopped(process, seen, signum, "linting")


def test_sigterm_during_fix_leaves_each_file_whole_and_no_worker(tmp_path):
    paths = _write_tree(tmp_path)
    fixed = fix_text(MODEL, "model.py", Config(), unsafe=True).text
    assert fixed != MODEL
    process = _start(tmp_path, "--fix", "--unsafe-fixes")

    def fixing() -> bool:
        return any(path.read_text() != MODEL for path in paths)

    seen = _stop_midway(process, fixing)
    _assert_stopped(process, seen, signal.SIGTERM, "fixing")
    texts = [path.read_text() for path in paths]
    assert set(texts) <= {MODEL, fixed}, "a file was left half-written"
    assert MODEL in texts and fixed in texts  # stopped in the middle
    assert not glob.glob(str(tmp_path / "**" / ".compile-lint-*.tmp"), recursive=True)


def test_workers_end_themselves_when_the_cli_is_killed(tmp_path):
    """SIGKILL leaves the CLI no time to stop its workers: each notices its parent is gone and ends."""
    _write_tree(tmp_path)
    process = _start(tmp_path)
    seen = _stop_midway(process, lambda: bool(glob.glob(str(tmp_path / ".compile-lint-cache" / "*" / "*" / "*.json"))))
    survivors = _survivors(process, seen, signal.SIGKILL, within_s=10)
    process.communicate(timeout=60)
    assert not survivors, f"workers outlived the killed CLI: {survivors}"
    # A cache entry being written when its worker ended is whole or absent: no temp file is left.
    assert not glob.glob(str(tmp_path / ".compile-lint-cache" / "**" / ".compile-lint-*.tmp"), recursive=True)

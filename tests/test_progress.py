"""The progress bar shows on a real terminal only, never in pipes or CI logs; the summary line counts."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

from compile_lint.frontends import progress
from compile_lint.frontends.progress import MIN_FILES, track, wants_progress

MODEL = ("import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
         "        if x.sum() > 0:\n            y = x\n        else:\n            y = -x\n        return y\n")
CLEAN = "import torch\n\n\ndef scale(x):\n    return x * 2\n"


@pytest.fixture
def many_files(tmp_path):
    for number in range(MIN_FILES + 5):
        (tmp_path / f"m{number:03d}.py").write_text(MODEL if number < 3 else CLEAN)
    return tmp_path


def _environment(**changes: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env["TERM"] = "xterm"
    env.update(changes)
    return env


def _run_with_terminal_stderr(directory, env) -> tuple[subprocess.CompletedProcess, str]:
    """Run the CLI with stderr on a pseudo-terminal; return the result and what the terminal showed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a 100-column terminal
    try:
        result = subprocess.run([sys.executable, "-m", "compile_lint", "."], cwd=directory, env=env,
                                stdout=subprocess.PIPE, stderr=slave, text=True, timeout=300)
    finally:
        os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal is closed and drained
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return result, shown.decode("utf-8", "replace")


def test_bar_on_a_terminal_and_clean_stdout(many_files):
    pytest.importorskip("tqdm")
    result, shown = _run_with_terminal_stderr(many_files, _environment())
    assert result.returncode == 1
    assert "Linting" in shown and f"/{MIN_FILES + 5}" in shown
    assert "Linting" not in result.stdout
    assert result.stdout.endswith(f"Found 3 findings in 3 of {MIN_FILES + 5} files. 3 fixable with --unsafe-fixes.\n")


def test_no_bar_in_ci_or_pipes(many_files):
    _, shown = _run_with_terminal_stderr(many_files, _environment(CI="true"))
    assert shown == ""
    piped = subprocess.run([sys.executable, "-m", "compile_lint", "."], cwd=many_files, env=_environment(),
                           capture_output=True, text=True, timeout=300)
    assert piped.stderr == ""
    assert piped.returncode == 1


def test_no_bar_for_short_runs_or_without_a_bar_library(monkeypatch):
    master, slave = pty.openpty()
    with os.fdopen(slave, "w") as terminal:
        monkeypatch.delenv("CI", raising=False)
        monkeypatch.setenv("TERM", "xterm")
        assert wants_progress(MIN_FILES, terminal)
        assert not wants_progress(MIN_FILES - 1, terminal)
        items = list(range(MIN_FILES))
        monkeypatch.setitem(sys.modules, "tqdm", None)  # as if neither library were installed
        monkeypatch.setitem(sys.modules, "rich", None)
        monkeypatch.setitem(sys.modules, "rich.progress", None)
        monkeypatch.setitem(sys.modules, "rich.console", None)
        assert track(items, len(items), stream=terminal) is items
    os.close(master)


def test_track_passes_items_through_when_the_stream_is_not_a_terminal(tmp_path):
    items = list(range(MIN_FILES * 2))
    with open(tmp_path / "log.txt", "w") as log:
        assert progress.track(items, len(items), stream=log) is items


def test_summary_counts_findings_fixable_findings_and_files(tmp_path):
    (tmp_path / "bad.py").write_text(MODEL)
    (tmp_path / "good.py").write_text(CLEAN)
    run = lambda *args: subprocess.run([sys.executable, "-m", "compile_lint", *args, "."], cwd=tmp_path,  # noqa: E731
                                       capture_output=True, text=True, timeout=300).stdout.splitlines()[-1]
    assert run() == "Found 1 finding in 1 of 2 files. 1 fixable with --unsafe-fixes."
    assert run("--unsafe-fixes") == "Found 1 finding in 1 of 2 files. 1 fixable with --fix."
    assert run("--select", "JIT102") == "All checks passed (2 files)."
    assert run("--fix", "--unsafe-fixes") == "Found 1 finding (1 fixed, 0 remaining)."  # ruff's fix summary

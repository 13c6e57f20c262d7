"""`--watch`: the real CLI re-lints when a file really changes on disk (watchfiles events)."""

import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.helpers import BREAKING_GATE

pytest.importorskip("watchfiles")
TIMEOUT = 60


def _lines(stream, sink: queue.Queue) -> None:
    for line in stream:
        sink.put(line)


def _wait_for(sink: queue.Queue, needle: str, seen: list) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            line = sink.get(timeout=1)
        except queue.Empty:
            continue
        seen.append(line)
        if needle in line:
            return
    raise AssertionError(f"no {needle!r} within {TIMEOUT} s; output so far: {''.join(seen)}")


def test_watch_lints_again_when_a_file_changes(tmp_path):
    model = tmp_path / "model.py"
    model.write_text("x = 1\n")
    process = subprocess.Popen([sys.executable, "-m", "compile_lint", "--watch", "--output-format", "concise", "."],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sink: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(process.stdout, sink), daemon=True).start()
    seen: list = []
    try:
        _wait_for(sink, "All checks passed (1 file).", seen)
        time.sleep(0.5)  # let the watcher start before the change
        model.write_text(BREAKING_GATE)
        _wait_for(sink, "changed: model.py; linting again", seen)
        _wait_for(sink, "model.py:7:12: JIT101", seen)
        model.write_text("x = 2\n")
        _wait_for(sink, "All checks passed (1 file).", seen)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert code == 0, "".join(seen)
    assert sorted(os.listdir(tmp_path)) == ["model.py"]


def test_watch_without_watchfiles_says_how_to_install(tmp_path):
    code = ("import sys; sys.modules['watchfiles'] = None; from compile_lint.frontends.cli import main; "
            "sys.exit(main(['--watch', '.']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 2
    assert done.stderr == ('compile-lint: error: --watch needs watchfiles: pip install "compile-lint[watch]" '
                           "(or pip install watchfiles)\n")

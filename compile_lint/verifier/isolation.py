"""Run each target in its own process, with a timeout, so user code cannot take the tool down."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import Optional

import compile_lint
from compile_lint.linter.cache import INDUCTOR_CACHE_NAME, user_cache_dir

DEFAULT_TIMEOUT_S = 600.0


def _package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(compile_lint.__file__)))


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def run_isolated(request: dict, timeout_s: Optional[float] = DEFAULT_TIMEOUT_S) -> dict:
    """Run one worker request in a fresh process; failures come back as `{"error": {...}}`."""
    with tempfile.TemporaryDirectory(prefix="compile-lint-verify-") as directory:
        request_path = os.path.join(directory, "request.json")
        result_path = os.path.join(directory, "result.json")
        with open(request_path, "w", encoding="utf-8") as handle:
            json.dump(request, handle)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)
        # Inductor's kernels go to the user's cache directory (kept between runs) unless the
        # user chose a place; whatever else the run puts in the temp dir (Inductor's
        # precompiled headers ignore its cache setting) goes into this run's own, removed below.
        env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(user_cache_dir(), INDUCTOR_CACHE_NAME))
        worker_tmp = os.path.join(directory, "tmp")
        os.mkdir(worker_tmp)
        env["TMPDIR"] = worker_tmp
        process = subprocess.Popen(
            [sys.executable, "-m", "compile_lint.verifier.worker", request_path, result_path],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True,
        )
        try:
            _, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.communicate()
            return {"target": request.get("target"), "error": {
                "kind": "timeout", "message": f"did not finish within {timeout_s:g} s (killed; raise --timeout)"}}
        finally:
            if process.poll() is None:
                _kill_group(process)
        tail = stderr.decode("utf-8", "replace")[-3000:]
        if os.path.exists(result_path):
            with open(result_path, encoding="utf-8") as handle:
                result = json.load(handle)
            result.setdefault("stderr_tail", tail)
            return result
        code = process.returncode
        if code in (-signal.SIGKILL, 137):
            message = "killed by SIGKILL (most likely out of memory)"
            kind = "oom"
        elif code is not None and code < 0:
            message, kind = f"died from signal {signal.Signals(-code).name}", "crash"
        else:
            last = [line for line in tail.splitlines() if line.strip()]
            message, kind = f"exited with status {code}: {last[-1] if last else 'no output'}", "crash"
        return {"target": request.get("target"), "error": {"kind": kind, "message": message, "traceback": tail}}

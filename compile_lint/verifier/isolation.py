"""Run each target in its own process, with a timeout, so user code cannot take the tool down.

A worker runs in a session (and process group) of its own, so a terminal's Ctrl-C or
hangup, or a CI runner's SIGTERM to the tool's group, never reaches the user's code
directly: the tool stops it. Every live worker is registered here; when the tool is
interrupted (KeyboardInterrupt) or terminated (SIGTERM, SIGHUP, see `stop_on_termination`),
each worker's process group is killed and reaped before the temp directories are removed.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from typing import Any, Callable, Iterator, Optional, Sequence

import compile_lint
from compile_lint.engine import stopping
from compile_lint.engine.cache import INDUCTOR_CACHE_NAME, user_cache_dir
from compile_lint.verifier.scratch import owned_directory

DEFAULT_TIMEOUT_S = 600.0


def _package_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(compile_lint.__file__)))


PARENT_PID_VARIABLE = "COMPILE_LINT_VERIFY_PARENT"
_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def kill_workers() -> None:
    """Kill the process group of every live worker (from any thread, or a signal handler)."""
    with _live_lock:
        live = list(_live)
    for process in live:
        if process.poll() is None:
            _kill_group(process)


def run_in_parallel(function: Callable[[Any], Any], items: Sequence[Any], parallel: int,
                    on_stop: Callable[[], None] = lambda: None) -> list:
    """`[function(item) for item in items]`, `parallel` at once on threads (in order on this
    one when 1). On Ctrl-C or SIGTERM, which reach this (the main) thread only, or an error
    in one of them, `on_stop` is called (to keep the threads from starting more workers) and
    every live worker is killed until the threads waiting on them have ended; then it re-raises."""
    if parallel <= 1 or len(items) <= 1:
        return [function(item) for item in items]
    with concurrent.futures.ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = [pool.submit(function, item) for item in items]
        try:
            return [future.result() for future in futures]
        except BaseException:
            on_stop()
            for future in futures:
                future.cancel()
            while not all(future.done() for future in futures):
                kill_workers()
                concurrent.futures.wait(futures, timeout=0.1)
            raise


@contextlib.contextmanager
def stop_on_termination() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP stop it as Ctrl-C does: the workers' process
    groups are killed at once, and `Terminated` unwinds the block, removing temp directories
    on the way (engine/stopping.py); a second signal during that cleanup only kills again."""
    with stopping.stop_on_termination(kill_workers):
        yield


def run_isolated(request: dict, timeout_s: Optional[float] = DEFAULT_TIMEOUT_S, parent: Optional[str] = None) -> dict:
    """Run one worker request in a fresh process; failures come back as `{"error": {...}}`.

    Its files live in a directory of their own, inside `parent` when given (a directory the
    caller owns and removes), else in the temp dir (see `scratch.owned_directory`)."""
    with owned_directory("compile-lint-verify-", parent) as directory:
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
        # The worker dies with this process, even when SIGKILL leaves no time to stop it.
        env[PARENT_PID_VARIABLE] = str(os.getpid())
        process = subprocess.Popen(
            [sys.executable, "-m", "compile_lint.verifier.worker", request_path, result_path],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True,
        )
        with _live_lock:
            _live.add(process)
        try:
            _, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.communicate()
            return {"target": request.get("target"), "error": {
                "kind": "timeout", "message": f"did not finish within {timeout_s:g} s (killed; raise --timeout)"}}
        finally:
            # Interrupted or terminated: kill the worker's group and reap it before its temp dir goes.
            if process.poll() is None:
                _kill_group(process)
                process.wait()
            with _live_lock:
                _live.discard(process)
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

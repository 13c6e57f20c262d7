"""Running one function over many files: in order, in a pool of forked workers when there are many."""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Iterable, Sequence, TypeVar

from compile_lint.engine.stopping import TERMINATING_SIGNALS, record_progress

T = TypeVar("T")
# A progress display: wraps the results as they come, told how many there will be and what is done
# (the CLI's bar on a terminal, frontends/progress.track); `no_progress` shows nothing.
Progress = Callable[[Iterable[T], int, str], Iterable[T]]


def no_progress(items: Iterable[T], total: int, description: str) -> Iterable[T]:
    """The results unchanged: no progress shown."""
    return items

# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 8
# Work items per worker: enough that the big files, sent first, even out at the end.
CHUNKS_PER_JOB = 16


def by_size_descending(paths: Sequence[str]) -> list[str]:
    """Largest files first, so that no worker is left with a big file at the end."""
    def size(path: str) -> int:
        try:
            return os.stat(path).st_size
        except OSError:
            return 0
    return sorted(paths, key=size, reverse=True)


_WORKER: dict = {}  # in a worker process: the function to run and what every call shares


# How often a worker checks that the process that started it is still there.
PARENT_CHECK_S = 0.5
# How long stopped workers get to finish a write (atomic, with the signals held) before SIGKILL.
STOP_GRACE_S = 5.0


def _exit_with_parent(parent: int) -> None:
    """In a worker: end it once its parent is gone (killed by SIGKILL, which leaves the parent no
    time to stop its workers), by the SIGTERM it would have sent: a write under way finishes."""
    if hasattr(signal, "pthread_sigmask"):
        # The signal must reach the main thread, which holds it while it writes a file.
        signal.pthread_sigmask(signal.SIG_BLOCK, TERMINATING_SIGNALS)
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os.kill(os.getpid(), signal.SIGTERM)


def _start_worker(function, shared, parent: int) -> None:
    _WORKER["function"], _WORKER["shared"] = function, shared
    # The parent stops its workers itself (Ctrl-C reaches the whole process group): no traceback
    # from each of them. SIGTERM and SIGHUP end a worker at once, except while it writes a file
    # (storage/atomic.py holds them there), so it never leaves half a file or a temp file behind.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in TERMINATING_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="exit-with-parent").start()


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End the pool's workers now (a stopped run): SIGTERM, then SIGKILL for any still running after
    STOP_GRACE_S. The executor has no public way to do it before Python 3.14 (`terminate_workers`)."""
    processes = [process for process in list((getattr(pool, "_processes", None) or {}).values())
                 if process.is_alive()]
    for process in processes:
        process.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join()


def _run_chunk(chunk: list) -> list:
    function, shared = _WORKER["function"], _WORKER["shared"]
    return [function(item) if shared is None else function(item, shared) for item in chunk]


def parallel_map(function, items: list, jobs: int, description: str = "Linting", shared=None,
                 progress: Progress = no_progress):
    """`function(item[, shared])` for each item, in order; with `jobs` > 1, in a pool of forked workers.

    Workers are forked once (the engine and every rule imported already), receive
    `shared` once, then items in chunks, and send back one list of results per chunk.
    `progress` is shown the results as they come, under `description`.
    Stopped (Ctrl-C, SIGTERM: a KeyboardInterrupt), it ends its workers before the interrupt
    goes on, and adds to it how many items were done (`stopping.record_progress`).
    """
    call = (lambda item: function(item)) if shared is None else (lambda item: function(item, shared))
    if jobs <= 1 or len(items) < PARALLEL_THRESHOLD:
        done: list = []
        try:
            done.extend(progress((call(item) for item in items), len(items), description))
        except KeyboardInterrupt as stop:
            record_progress(stop, description, len(done), len(items))
            raise
        return done
    # Import the engine (libcst, every rule) and fill its tables once here; forked workers inherit them.
    import compile_lint.engine.lint  # noqa: F401
    from compile_lint.engine.dispatch import warm_up

    warm_up()

    jobs = min(jobs, len(items))
    size = max(1, len(items) // (jobs * CHUNKS_PER_JOB))
    chunks = [items[start:start + size] for start in range(0, len(items), size)]
    context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    # What the workers inherit (libcst, every rule) is never garbage: freezing it keeps their
    # collector from walking it, and from copying every page it touches on the way.
    gc.freeze()
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_start_worker,
                               initargs=(function, shared, os.getpid()))
    futures = []
    try:
        # Submitted one by one, not with pool.map, whose results generator cancels the futures left
        # when it is interrupted: Python 3.11's executor then fails to mark them broken (an
        # InvalidStateError traceback from its thread) once the workers are stopped.
        futures = [pool.submit(_run_chunk, chunk) for chunk in chunks]
        results = (result for future in futures for result in future.result())
        return list(progress(results, len(items), description))
    except BaseException as stop:
        finished = sum(len(chunk) for chunk, future in zip(chunks, futures)
                       if future.done() and not future.cancelled() and future.exception() is None)
        _stop_workers(pool)  # else they would outlive this process, waiting for work
        if isinstance(stop, KeyboardInterrupt):
            record_progress(stop, description, finished, len(items))
        raise
    finally:
        pool.shutdown(wait=True)
        gc.unfreeze()

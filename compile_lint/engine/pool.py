"""Running one function over many files: in order, in a pool of forked workers when there are many."""

from __future__ import annotations

import gc
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Iterable, Sequence, TypeVar

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


def _start_worker(function, shared) -> None:
    _WORKER["function"], _WORKER["shared"] = function, shared


def _run_chunk(chunk: list) -> list:
    function, shared = _WORKER["function"], _WORKER["shared"]
    return [function(item) if shared is None else function(item, shared) for item in chunk]


def parallel_map(function, items: list, jobs: int, description: str = "Linting", shared=None,
                 progress: Progress = no_progress):
    """`function(item[, shared])` for each item, in order; with `jobs` > 1, in a pool of forked workers.

    Workers are forked once (the engine and every rule imported already), receive
    `shared` once, then items in chunks, and send back one list of results per chunk.
    `progress` is shown the results as they come, under `description`.
    """
    call = (lambda item: function(item)) if shared is None else (lambda item: function(item, shared))
    if jobs <= 1 or len(items) < PARALLEL_THRESHOLD:
        return list(progress((call(item) for item in items), len(items), description))
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
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_start_worker,
                                 initargs=(function, shared)) as pool:
            results = (result for chunk in pool.map(_run_chunk, chunks) for result in chunk)
            return list(progress(results, len(items), description))
    finally:
        gc.unfreeze()

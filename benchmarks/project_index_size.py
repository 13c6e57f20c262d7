"""How big the project index of a tree is: on disk (the pickled cache) and in memory (loaded back).

    python benchmarks/project_index_size.py TREE [--json OUT]

Builds the summaries of every Python file under TREE with the index's own store
(`analysis.project.index.IndexStore`, one process, the cache written to a temporary
directory that is removed afterwards), then reports:

- the cache file's size, and per call site;
- the memory the summaries hold once loaded back from the cache (tracemalloc's count of
  what `pickle.load` allocated and kept), and per call site;
- the size of one call site object as Python allocates it (the object, its `__dict__` when
  it has one; its argument tuple is counted apart);
- the time to summarise, to load the cache (untraced), and the process's peak resident size.

It reads the index through the names both the old and the new layout export, so that the
same script measures a tree before and after a change: run it with `PYTHONPATH=<tree>`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import resource
import shutil
import sys
import tempfile
import time
import tracemalloc


def _object_size(item: object) -> int:
    """Bytes of `item` and of its instance dictionary, when it has one (not what they refer to)."""
    size = sys.getsizeof(item)
    if hasattr(item, "__dict__"):
        size += sys.getsizeof(vars(item))
    return size


def measure(tree: str) -> dict:
    """The sizes and times of the project index of `tree`."""
    from compile_lint.analysis.project.index import IndexStore

    try:
        from compile_lint.storage.walk import PROJECT_INDEX, python_files
        files = python_files(os.path.abspath(tree), PROJECT_INDEX)
    except ImportError:  # a tree from before storage/ (the "before" column of the results)
        from compile_lint.analysis.project.index import project_files
        files = project_files(os.path.abspath(tree))
    work = tempfile.mkdtemp(prefix="index-size-")
    try:
        cache_file = os.path.join(work, "index.pickle")
        started = time.perf_counter()
        store = IndexStore(cache_file)
        summaries = store.summaries(files)
        built = time.perf_counter() - started
        store.save()
        functions = [function for summary in summaries.values() for function in summary.functions.values()]
        calls = [call for function in functions for call in function.calls]
        call_count, call_size = len(calls), _object_size(calls[0]) if calls else 0
        del summaries, functions, calls, store
        disk = os.path.getsize(cache_file)
        gc.collect()
        started = time.perf_counter()
        with open(cache_file, "rb") as handle:
            pickle.load(handle)
        load_time = time.perf_counter() - started
        gc.collect()
        tracemalloc.start()  # a second load, traced: tracing slows every allocation down
        with open(cache_file, "rb") as handle:
            loaded = pickle.load(handle)
        gc.collect()
        in_memory = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        del loaded
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "tree": tree, "files": len(files), "call_sites": call_count,
        "pickle_bytes": disk, "pickle_bytes_per_call_site": round(disk / max(call_count, 1), 1),
        "loaded_bytes": in_memory, "loaded_bytes_per_call_site": round(in_memory / max(call_count, 1), 1),
        "call_site_object_bytes": call_size, "summarise_s": round(built, 2), "load_s": round(load_time, 2),
        # Linux reports the largest resident size the process reached, in KiB.
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args()
    result = measure(args.tree)
    for name, value in result.items():
        print(f"{name}: {value}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)
            handle.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

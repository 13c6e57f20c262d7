"""Run the user project of tests/fixtures/library_reach/ under the real compiler; print its breaks as JSON.

    PYTHONPATH=SITE python tests/library_probe.py PROJECT_DIR

The project's `entry.py` lists what the user compiles (`entries()`: a name, the callable,
example args, and whether it must compile with fullgraph=True). Each entry runs under the
default torch.compile (backend "eager", Dynamo's verdict only) with the graph-break log; a
break is reported with its user stack, outermost frame first (every frame: the project's
and the installed library's), read with the verifier's own parser. Entries that say so
also run with fullgraph=True.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys

from reach_probe import fullgraph_error  # beside this file: the script's directory is on sys.path


def run_entry(fn, args, fullgraph: bool) -> dict:
    import torch
    import torch._dynamo

    from compile_lint.verifier.analysis import _traceback_frames, capture_dynamo_logs, first_line, parse_break_message

    result = {"breaks": [], "compile_error": None, "fullgraph": fullgraph, "fullgraph_error": None}
    torch._dynamo.reset()
    with capture_dynamo_logs() as logs:
        try:
            torch.compile(fn, backend="eager")(*args)
        except Exception as error:  # noqa: BLE001 - the fixture's code may raise anything
            result["compile_error"] = first_line(error)
    for message in logs.messages:
        found = parse_break_message(message)
        if found is not None:
            frames = _traceback_frames(message, "User code traceback:") + [(found.path, found.line)]
            unique = [frame for index, frame in enumerate(frames) if frame not in frames[:index]]
            result["breaks"].append({"gb_type": found.gb_type,
                                     "stack": [[os.path.abspath(path), line] for path, line in unique]})
    torch._dynamo.reset()
    if fullgraph:
        result["fullgraph_error"] = fullgraph_error(fn, args)
    return result


def main(project: str) -> None:
    sys.path.insert(0, os.path.abspath(project))
    import entry  # the project's own entry.py

    report = {}
    with contextlib.redirect_stdout(sys.stderr):  # the library prints (one of its breaks)
        for name, fn, args, fullgraph in entry.entries():
            report[name] = run_entry(fn, args, fullgraph)
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])

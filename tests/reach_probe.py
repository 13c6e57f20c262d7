"""Run one fixture project of tests/fixtures/reach/ under the real compiler; print what Dynamo did, as JSON.

    python tests/reach_probe.py PROJECT_DIR

The project's `entry.py` lists its compiled entry points (`entries()`: the entry point as
`entry-points` names it, the callable, example args, and whether it must compile with
fullgraph=True). Each entry is run eagerly, then under the default compile (backend
"eager", Dynamo's verdict only) with the graph-break and call-trace logs, then, when it
says so, under fullgraph=True. One process per project: every entry point in it.

Breaks are read from the graph-break log with the verifier's own parser
(compile_lint.verifier.analysis); a compile that fails outright (a break inside a
`torch.cond` branch is an error, not a break) gives its site from the error's user stack.
A site is the innermost frame of the user stack that lies in the project.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys

# "TRACE inlined call positive from /p/flow/model.py:12 in forward (Gated.forward)": where
# Dynamo followed a call, from which function (its qualified name).
_INLINED_CALL = re.compile(r"TRACE inlined call (?P<callee>\S+) from (?P<path>.+?):(?P<line>\d+) "
                           r"in \S+ \((?P<function>[^)\s]+)\)")


def _relative(root: str, path: str | None) -> str | None:
    """`path` relative to the project root (with /), or None when it lies outside it."""
    if not path:
        return None
    path = os.path.abspath(path)
    if not path.startswith(root + os.sep):
        return None
    return os.path.relpath(path, root).replace(os.sep, "/")


def _innermost_in_project(root: str, frames) -> list | None:
    for path, line in reversed(list(frames)):
        relative = _relative(root, path)
        if relative is not None:
            return [relative, line]
    return None


def _error_site(root: str, error: BaseException) -> list | None:
    """[path, line, error type] of the innermost project frame of a compile error's user stack."""
    from compile_lint.verifier.analysis import _traceback_frames

    stack = [(frame.filename, frame.lineno or 1) for frame in getattr(error, "real_stack", None) or []]
    stack = stack or _traceback_frames(str(error), "from user code:")
    site = _innermost_in_project(root, stack)
    return None if site is None else site + [type(error).__name__]


def run_entry(root: str, fn, args, fullgraph: bool) -> dict:
    import torch
    import torch._dynamo
    import torch._logging

    from compile_lint.verifier.analysis import _traceback_frames, capture_dynamo_logs, first_line, parse_break_message

    result = {"fullgraph": fullgraph, "eager_error": None, "eager_error_from_dynamo": False, "sites": [], "outside": [],
              "compile_error": None, "calls": [], "fullgraph_error": None}
    try:
        fn(*args)
    except Exception as error:  # noqa: BLE001 - fixture code may raise anything
        result["eager_error"] = first_line(error)
        # `torch.cond` compiles its branches even when called eagerly (with Dynamo,
        # fullgraph): its error is the compiler's verdict too, so the compile runs anyway.
        if not isinstance(error, torch._dynamo.exc.TorchDynamoException):
            return result
        result["eager_error_from_dynamo"] = True

    torch._dynamo.reset()
    with capture_dynamo_logs() as logs:
        torch._logging.set_logs(graph_breaks=True, recompiles=True, trace_call=True)
        try:
            torch.compile(fn, backend="eager")(*args)
        except Exception as error:  # noqa: BLE001
            result["compile_error"] = first_line(error)
            site = _error_site(root, error)
            if site is not None:
                result["sites"].append(site)
    for message in logs.messages:
        found = parse_break_message(message)
        if found is not None:
            frames = _traceback_frames(message, "User code traceback:") + [(found.path, found.line)]
            site = [_relative(root, found.path), found.line]
            if site[0] is None:  # the verifier's innermost user frame is outside: look deeper
                site = _innermost_in_project(root, frames)
            entry = (site + [found.gb_type]) if site else [found.path, found.line, found.gb_type]
            (result["sites"] if site else result["outside"]).append(entry)
        for call in _INLINED_CALL.finditer(message):
            relative = _relative(root, call["path"])
            if relative is not None:
                result["calls"].append([relative, int(call["line"]), call["function"], call["callee"]])
    torch._dynamo.reset()

    if fullgraph:
        result["fullgraph_error"] = fullgraph_error(fn, args)
    return result


def fullgraph_error(fn, args) -> str | None:
    """The first line of the error `fn(*args)` raises compiled with fullgraph=True, None when it compiles."""
    import torch
    import torch._dynamo

    from compile_lint.verifier.analysis import first_line

    try:
        torch.compile(fn, backend="eager", fullgraph=True)(*args)
    except Exception as error:  # noqa: BLE001 - any failure is the verdict
        return first_line(error)
    finally:
        torch._dynamo.reset()
    return None


def _eager_error(run) -> str | None:
    from compile_lint.verifier.analysis import first_line

    try:
        run()
    except Exception as error:  # noqa: BLE001 - fixture code may raise anything
        return first_line(error)
    return None


def main(project: str) -> None:
    root = os.path.abspath(project)
    sys.path.insert(0, root)
    import entry  # the project's own entry.py

    report = {"entries": {}, "scripts": {}}
    # The fixtures print (that is one of their breaks): keep stdout for the report.
    with contextlib.redirect_stdout(sys.stderr):
        for name, fn, args, fullgraph in entry.entries():
            report["entries"][name] = run_entry(root, fn, args, fullgraph)
        if os.path.isfile(os.path.join(root, "train.py")):
            # The training script calls the eager-only look-alike helpers: it must run.
            report["scripts"]["train.py"] = _eager_error(lambda: __import__("train").main())
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])

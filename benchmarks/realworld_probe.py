"""Measure one real model on the real compiler: graph breaks, fullgraph verdict, recompiles.

Run as a subprocess by benchmarks/realworld.py (`python benchmarks/realworld_probe.py NAME`);
prints one JSON object on its last stdout line. Everything is CPU, eval mode, no_grad,
backend "eager" (only Dynamo's verdict matters).

- breaks: every graph-break log record (`torch._logging.set_logs(graph_breaks=True)`),
  parsed into gb_type, gb id, the location Dynamo names and the user stack frames;
  explain() is not used because it under-counts. Breaks are collected on all three calls
  (see recompiles): calls 2 and 3 run with automatic-dynamic shapes and can break elsewhere.
- fullgraph: whether `fullgraph=True` compiles and runs, and the first error line.
- recompiles: the model is called at (batch 2, length 16), then (3, 24), then (4, 32); the
  second call may cost one automatic-dynamic recompile per frame, so only recompiles on
  the third call count, with the guard failures the recompile log gives.
- executed_lines: the library lines that ran during one eager call (sys.settrace), so the
  scorer can tell a finding that the compiler traced cleanly from one that never ran.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
import traceback

import realworld_models

_LOCATION = re.compile(r"in user code at (.+):(\d+)\s*$", re.M)
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in (.+)$', re.M)
_GB_ID = re.compile(r"/gb/(gb\d+)\.html")


class Collector(logging.Handler):
    """Keeps the formatted message of every log record it sees."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.messages: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append((record.name, record.getMessage()))
        except Exception:  # a record that cannot format is not worth failing the probe
            pass


def parse_graph_break(message: str) -> dict | None:
    """gb_type, gb id, location and user stack frames out of one graph-break log message."""
    location = _LOCATION.search(message.splitlines()[0] if message else "")
    if location is None:
        return None
    reason = message.split("Graph Break Reason:", 1)[-1]
    lines = [line.strip() for line in reason.splitlines()]
    if lines and lines[0].startswith("Encountered graph break"):
        lines = lines[1:]
    gb_type = next((line for line in lines if line), "")
    explanation = next((line[len("Explanation:"):].strip() for line in lines if line.startswith("Explanation:")), "")
    gb_id = _GB_ID.search(message)
    frames = []
    if "User code traceback:" in message:
        for path, line, function in _FRAME.findall(message.split("User code traceback:", 1)[1]):
            frames.append({"file": path, "line": int(line), "function": function.strip()})
    return {
        "file": location.group(1), "line": int(location.group(2)), "gb_type": gb_type,
        "gb_id": gb_id.group(1) if gb_id else None, "explanation": explanation[:300], "frames": frames,
    }


def breaks_in(messages: list[tuple[str, str]], call: int) -> list[dict]:
    """The graph breaks among collected log messages, tagged with the call that hit them.

    Calls 2 and 3 run with automatic-dynamic shapes, which can break where static shapes did not.
    """
    found = []
    for logger, message in messages:
        if "graph_breaks" in logger or message.startswith("Graph break"):
            parsed = parse_graph_break(message)
            if parsed:
                parsed["call"] = call
                found.append(parsed)
    return found


def _executed_lines(model, inputs: dict, root: str) -> dict[str, list[int]]:
    """The lines inside the library folder `root` that one eager call runs."""
    import torch

    seen: dict[str, set[int]] = {}

    def local(frame, event, arg):
        if event == "line":
            seen.setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
        return local

    def tracer(frame, event, arg):
        if frame.f_code.co_filename.startswith(root):
            seen.setdefault(frame.f_code.co_filename, set()).add(frame.f_code.co_firstlineno)
            return local
        return None

    sys.settrace(tracer)
    try:
        with torch.no_grad():
            model(**inputs)
    finally:
        sys.settrace(None)
    return {path: sorted(lines) for path, lines in seen.items()}


def counting_backend(frames: list):
    def backend(graph_module, example_inputs):
        frames.append(len(graph_module.graph.nodes))
        return graph_module.forward

    return backend


def probe(name: str) -> dict:
    """Every measurement of one model, as a JSON-ready dict."""
    import torch
    import torch._dynamo

    result: dict = {"model": name, "status": "ok"}
    started = time.perf_counter()
    torch.manual_seed(0)
    model, make_inputs = realworld_models.build(name)
    root = realworld_models.library_root(name)
    result["library_root"] = root
    first, second, third = make_inputs(2, 16), make_inputs(3, 24), make_inputs(4, 32)
    with torch.no_grad():
        model(**first)
    result["executed_lines"] = _executed_lines(model, first, root)
    result["module_files"] = sorted(
        {os.path.abspath(sys.modules[type(m).__module__].__file__) for m in model.modules()
         if getattr(sys.modules.get(type(m).__module__), "__file__", None)
         and os.path.abspath(sys.modules[type(m).__module__].__file__).startswith(root)}
    )

    collector = Collector()
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    dynamo_logger = logging.getLogger("torch._dynamo")
    dynamo_logger.addHandler(collector)

    # fullgraph=False: breaks, frames, then recompiles over two more sizes
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    collector.messages.clear()
    frames: list = []
    compiled = torch.compile(model, backend=counting_backend(frames), fullgraph=False)
    error = None
    try:
        with torch.no_grad():
            compiled(**first)
    except Exception as exc:
        error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]
    breaks = breaks_in(collector.messages, call=1)
    result["breaks"] = breaks
    result["graph_break_counter"] = sum(torch._dynamo.utils.counters["graph_break"].values())
    result["graphs_first_call"] = len(frames)
    result["compile_error"] = error
    recompiles: list[str] = []
    if error is None:
        try:
            with torch.no_grad():
                collector.messages.clear()
                compiled(**second)
                breaks.extend(breaks_in(collector.messages, call=2))
                collector.messages.clear()
                before = len(frames)
                compiled(**third)
            breaks.extend(breaks_in(collector.messages, call=3))
            recompiles = [m for logger, m in collector.messages if "Recompiling function" in m]
            result["graphs_third_call"] = len(frames) - before
        except Exception as exc:
            result["recompile_error"] = (f"{type(exc).__name__}: "
                                         f"{str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}")
    result["recompiles"] = [_recompile_summary(m) for m in recompiles]
    # fullgraph=True verdict: only worth a compile when fullgraph=False saw a break or an error
    # (with no break, fullgraph=True holds; it is only ever more lenient, e.g. unbacked .item()).
    if breaks or error is not None or result["graph_break_counter"]:
        torch._dynamo.reset()
        try:
            with torch.no_grad():
                torch.compile(model, backend="eager", fullgraph=True)(**first)
            result["fullgraph"] = {"ok": True, "error": None}
        except Exception as exc:  # the verdict itself: any failure means fullgraph does not hold
            text = str(exc).strip().splitlines()
            result["fullgraph"] = {"ok": False, "error": f"{type(exc).__name__}: {text[0] if text else ''}"[:300]}
    else:
        result["fullgraph"] = {"ok": True, "error": None, "inferred": "no graph break under fullgraph=False"}
    dynamo_logger.removeHandler(collector)
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def _recompile_summary(message: str) -> dict:
    """The function and the first failed guard of one 'Recompiling function' log message."""
    head = re.search(r"Recompiling function (\S+) in (.+):(\d+)", message)
    reason = message.split("triggered by the following guard failure(s):", 1)[-1].strip().splitlines()
    return {
        "function": head.group(1) if head else None,
        "file": head.group(2) if head else None,
        "line": int(head.group(3)) if head else None,
        "reason": (reason[0].strip(" -") if reason else "")[:300],
    }


def main(argv: list[str]) -> int:
    """Probe the model named in argv[1]; print the result as one JSON line."""
    name = argv[1]
    try:
        result = probe(name)
    except Exception as error:
        result = {
            "model": name, "status": "setup-error",
            "error": (f"{type(error).__name__}: "
                      f"{str(error).strip().splitlines()[0][:300] if str(error).strip() else ''}"),
            "traceback": traceback.format_exc()[-2000:],
        }
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

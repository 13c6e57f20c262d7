"""Measure one variant of one architecture on the real compiler (the sweep's inner loop).

For a variant (model class, eval or train, with or without labels, forward or generate)
`probe_variant` records, CPU and backend "eager" (only Dynamo's verdict matters):

- executed: the library lines one eager call runs (`sys.settrace`);
- breaks: the default compile (fullgraph=False) over one call at (batch 2, length 16), or
  three calls, (2, 16), (3, 24) and (4, 32), for the variants that measure recompiles; every
  record of the graph-break log (`explain()` under-counts, DESIGN.md), with its gb_type (the
  inner one for "Failed to handle graph break gracefully"), GB id, the location Dynamo names,
  the user stack, and the call (1 static, 2 and 3 dynamic) that hit it;
- traced: the library lines Dynamo traced (`trace_source` log). When the default compile
  logged no break and raised nothing they are `traced_clean`: *certainly* traceable in this
  mode, so a break-kind finding on one of them is a false positive; else
  `traced_breaking_run` (not certain: a frame may have been skipped);
- fullgraph: whether `fullgraph=True` compiles and runs (compiled when the default compile
  broke; with no break it holds);
- recompiles: the "Recompiling function" records of the third call, with the guard that
  failed: the second call makes the varying dims dynamic (automatic dynamic), so a
  recompile on the third is one that marking the dims dynamic does not avoid.

Records without `"protocol": "default-first"` come from the first H200 run, which compiled
fullgraph=True first and the default compile only when that failed (see sweep_truth.py).

Paths inside the measured libraries are written relative to their site-packages folder
("transformers/models/bert/modeling_bert.py") so that results from another machine score
against any unpacked copy of the same versions.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import time
from typing import Any, Optional

_LOCATION = re.compile(r"in user code at (.+):(\d+)\s*$", re.M)
_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in (.+)$', re.M)
_GB_ID = re.compile(r"/gb/(gb\d+)\.html")
_TRACE = re.compile(r"^TRACE starts_line (.+):(\d+) in ")
_RECOMPILE = re.compile(r"Recompiling function (\S+) in (.+):(\d+)")
GRACEFUL = "Failed to handle graph break gracefully"
SIZES = ((2, 16), (3, 24), (4, 32))


class PathMap:
    """Absolute file paths -> library-relative ones (None outside the measured libraries)."""

    def __init__(self, roots: dict[str, str]):
        self.prefixes = [(root.rstrip(os.sep) + os.sep, library) for library, root in roots.items()]
        self._cache: dict[str, Optional[str]] = {}

    def __call__(self, path: str) -> Optional[str]:
        if path not in self._cache:
            found = None
            for prefix, library in self.prefixes:
                if path.startswith(prefix):
                    found = library + "/" + path[len(prefix):].replace(os.sep, "/")
                    break
            self._cache[path] = found
        return self._cache[path]


class _Collector(logging.Handler):
    """Keeps graph-break and recompile messages, and the (file, line) of every traced line."""

    def __init__(self, paths: PathMap) -> None:
        super().__init__(level=logging.DEBUG)
        self.paths = paths
        self.messages: list[tuple[str, str]] = []
        self.traced: set[tuple[str, int]] = set()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if record.name.endswith("__trace_source"):
                match = _TRACE.match(record.getMessage())
                if match:
                    relative = self.paths(match.group(1))
                    if relative:
                        self.traced.add((relative, int(match.group(2))))
                return
            self.messages.append((record.name, record.getMessage()))
        except Exception:  # a record that cannot format is not worth failing the probe
            pass


def parse_graph_break(message: str, paths: PathMap) -> Optional[dict]:
    """One graph-break log message -> gb_type, gb id, location, library site and user stack."""
    first = message.splitlines()[0] if message else ""
    location = _LOCATION.search(first)
    if location is None:
        return None
    reason = message.split("Graph Break Reason:", 1)[-1]
    lines = [line.strip() for line in reason.splitlines()]
    wrapped = False
    text = [line for line in lines if line and not line.startswith("Encountered graph break")]
    gb_type = text[0] if text else ""
    if gb_type.startswith(GRACEFUL):
        wrapped = True
        inner = [line for line in text[1:] if not line.startswith(("Explanation:", "Hint:", "Developer debug"))]
        gb_type = inner[0] if inner else gb_type
    explanation = next((line[len("Explanation:"):].strip() for line in lines if line.startswith("Explanation:")), "")
    gb_id = _GB_ID.search(message)
    frames = []
    if "User code traceback:" in message:
        for path, line, function in _FRAME.findall(message.split("User code traceback:", 1)[1]):
            frames.append({"file": paths(path) or _outside(path), "line": int(line), "function": function.strip()})
    where = paths(location.group(1))
    site = {"file": where, "line": int(location.group(2))} if where else None
    if site is None:
        library_frames = [f for f in frames if not f["file"].startswith("<")]
        if library_frames:
            site = {"file": library_frames[-1]["file"], "line": library_frames[-1]["line"]}
    return {
        "location": (where or _outside(location.group(1))) + ":" + location.group(2),
        "site": site, "gb_type": gb_type, "gb_id": gb_id.group(1) if gb_id else None,
        "graceful_fallback": wrapped, "explanation": explanation[:240],
        "frames": [f for f in frames if not f["file"].startswith("<outside")],
    }


def _outside(path: str) -> str:
    """A short tag for a file outside the measured libraries (torch internals, the harness)."""
    marker = os.sep + "torch" + os.sep
    if marker in path:
        return "<outside>torch/" + path.split(marker, 1)[1]
    return "<outside>" + os.path.basename(path)


def _recompile(message: str, paths: PathMap) -> dict:
    head = _RECOMPILE.search(message)
    reasons = message.split("triggered by the following guard failure(s):", 1)[-1].strip().splitlines()
    failures = [line.strip(" -") for line in reasons if line.strip()]
    file = head.group(2) if head else ""
    # One failed guard per cached entry ("frame/entry: guard"); the newest entry is the one
    # compiled for the dynamic call before, i.e. what marking the varying dims dynamic missed.
    newest = max(failures, key=lambda f: int(m.group(1)) if (m := re.match(r"\d+/(\d+):", f)) else -1, default="")
    return {
        "function": head.group(1) if head else None,
        "file": paths(file) or _outside(file) if head else None,
        "line": int(head.group(3)) if head else None,
        "reason": newest[:240],
        "guard_failures": [failure[:240] for failure in failures[:8]],
    }


def _executed_lines(call, paths: PathMap) -> dict[str, str]:
    """The library lines that `call()` runs eagerly."""
    seen: dict[str, set[int]] = {}
    codes: dict[Any, Optional[str]] = {}

    def local(frame, event, arg):
        if event == "line":
            seen[codes[frame.f_code]].add(frame.f_lineno)
        return local

    def tracer(frame, event, arg):
        code = frame.f_code
        if code not in codes:
            codes[code] = paths(code.co_filename)
        relative = codes[code]
        if relative is None:
            return None
        seen.setdefault(relative, set()).add(code.co_firstlineno)
        return local

    sys.settrace(tracer)
    try:
        call()
    finally:
        sys.settrace(None)
    return {path: to_ranges(lines) for path, lines in sorted(seen.items())}


def _group(pairs) -> dict[str, str]:
    grouped: dict[str, set[int]] = {}
    for path, line in pairs:
        grouped.setdefault(path, set()).add(line)
    return {path: to_ranges(lines) for path, lines in sorted(grouped.items())}


def to_ranges(lines) -> str:
    """Line numbers as a compact string: [1, 2, 3, 7, 9, 10] -> "1-3,7,9-10"."""
    parts = []
    ordered = sorted(set(lines))
    index = 0
    while index < len(ordered):
        start = end = ordered[index]
        while index + 1 < len(ordered) and ordered[index + 1] == end + 1:
            index += 1
            end = ordered[index]
        parts.append(str(start) if start == end else f"{start}-{end}")
        index += 1
    return ",".join(parts)


def from_ranges(text: str) -> set[int]:
    """The inverse of `to_ranges`."""
    lines: set[int] = set()
    for part in filter(None, text.split(",")):
        start, _, end = part.partition("-")
        lines.update(range(int(start), int(end or start) + 1))
    return lines


def _error_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:300]


def _counting_backend(graphs: list):
    def backend(graph_module, example_inputs):
        graphs.append(len(graph_module.graph.nodes))
        return graph_module.forward

    return backend


class _Runner:
    """Calls a model (forward, or generate with the forward compiled) in the variant's mode."""

    def __init__(self, model, mode: str, generate: bool):
        import torch

        self.model = model
        self.mode = mode
        self.generate = generate
        self.original_forward = model.forward
        self.grad = torch.enable_grad if mode == "train" else torch.no_grad

    def eager(self, inputs: dict):
        with self.grad():
            return self._call(self.model, inputs)

    def compiled(self, backend, fullgraph: bool):
        import torch

        if self.generate:
            self.model.forward = torch.compile(self.original_forward, backend=backend, fullgraph=fullgraph)
            target = self.model
        else:
            target = torch.compile(self.model, backend=backend, fullgraph=fullgraph)

        def call(inputs):
            with self.grad():
                return self._call(target, inputs)

        return call

    def restore(self) -> None:
        if self.generate:
            self.model.forward = self.original_forward

    def _call(self, target, inputs: dict):
        if self.generate:
            generate_inputs = dict(inputs)
            generate_inputs.pop("decoder_input_ids", None)
            return target.generate(**generate_inputs, max_new_tokens=3, min_new_tokens=3, do_sample=False,
                                   use_cache=True, pad_token_id=_pad_id(self.model))
        return target(**inputs)


def _pad_id(model) -> int:
    config = model.config
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    pad = getattr(text, "pad_token_id", None)
    if pad is None:
        pad = getattr(text, "eos_token_id", 0)
    if isinstance(pad, list):
        pad = pad[0]
    return int(pad or 0)


@contextlib.contextmanager
def _dynamo_logs(collector: _Collector):
    import torch

    torch._logging.set_logs(graph_breaks=True, recompiles=True, trace_source=True)
    logger = logging.getLogger("torch._dynamo")
    logger.addHandler(collector)
    try:
        yield
    finally:
        logger.removeHandler(collector)
        torch._logging.set_logs()


def probe_variant(variant, paths: PathMap, budget: float = 120.0, fullgraph_verdict: bool = True) -> dict:
    """Every measurement of one variant, as a JSON-ready dict (see the module docstring).

    The default compile (fullgraph=False) runs first: its graph-break log gives the breaks,
    and when it logged none its traced lines are *clean*. `fullgraph=True` alone would not
    do for that: it captures `.item()`, `.tolist()` and data-dependent shapes as unbacked
    values and passes where the default compile breaks (DESIGN.md). fullgraph=True is then
    compiled once for the verdict when the default compile broke (with no break it holds).
    """
    import torch
    import torch._dynamo

    started = time.perf_counter()
    result: dict = {"unit": variant.unit, "variant": variant.name, "mode": variant.mode,
                    "labels": variant.labels, "generate": variant.generate, "status": "ok",
                    "protocol": "default-first"}
    if variant.config_level is not None:
        result.update(config_level=variant.config_level, inputs_kind=variant.inputs_kind)
    sizes = SIZES if variant.recompiles and os.environ.get("SWEEP_ONE_CALL") != "1" else SIZES[:1]
    result["calls"] = len(sizes)
    timing = result["timing"] = {}
    torch.manual_seed(0)
    try:
        model, make_inputs = variant.build()
        model.train() if variant.mode == "train" else model.eval()
        calls = [make_inputs(batch, length) for batch, length in sizes]
    except Exception as error:
        result.update(status="build-error", error=_error_line(error))
        return result
    timing["build"] = round(time.perf_counter() - started, 2)
    runner = _Runner(model, variant.mode, variant.generate)
    try:
        torch.manual_seed(0)
        runner.eager(calls[0])
        torch.manual_seed(0)
        result["executed"] = _executed_lines(lambda: runner.eager(calls[0]), paths)
    except Exception as error:
        result.update(status="eager-error", error=_error_line(error))
        return result
    timing["eager"] = round(time.perf_counter() - started - timing["build"], 2)
    collector = _Collector(paths)
    with _dynamo_logs(collector):
        mark = time.perf_counter()
        default = _compiled_calls(runner, calls, collector, paths, fullgraph=False, budget=budget)
        timing["default"] = round(time.perf_counter() - mark, 2)
        clean = not default["breaks"] and default["calls_ok"] == len(calls)
        result.update(breaks=default["breaks"], recompiles=default["recompiles"], graphs=default["graphs"],
                      compile_error=default["error"], default_clean=clean)
        result["traced_clean" if clean else "traced_breaking_run"] = _group(default["traced_all"])
        if clean:
            result["fullgraph"] = {"ok": True, "error": None, "inferred": "no graph break under fullgraph=False"}
        elif fullgraph_verdict and time.perf_counter() - started < budget:
            mark = time.perf_counter()
            verdict = _compiled_calls(runner, calls[:1], collector, paths, fullgraph=True, budget=budget)
            timing["fullgraph"] = round(time.perf_counter() - mark, 2)
            result["fullgraph"] = {"ok": verdict["calls_ok"] == 1, "error": verdict["error"]}
    runner.restore()
    torch._dynamo.reset()
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def _compiled_calls(runner: _Runner, calls: list, collector: _Collector, paths: PathMap, fullgraph: bool,
                    budget: float) -> dict:
    """The three calls under one torch.compile; what broke, recompiled and was traced per call."""
    import torch
    import torch._dynamo

    torch._dynamo.reset()
    # Dynamo logs a break's user stack once per process; later runs would get only the
    # location, not the library frame that leads to it. Every run starts afresh.
    torch._dynamo.utils.graph_break_dup_warning_checker.reset()
    graphs: list = []
    compiled = runner.compiled(_counting_backend(graphs), fullgraph)
    out = {"calls_ok": 0, "error": None, "breaks": [], "recompiles": [], "traced_ok": set(), "traced_all": set(),
           "graphs": []}
    started = time.perf_counter()
    for index, inputs in enumerate(calls, start=1):
        collector.messages.clear()
        collector.traced = set()
        before = len(graphs)
        error = None
        try:
            torch.manual_seed(0)
            compiled(inputs)
        except Exception as exc:  # the verdict itself: a failing call is recorded, not raised
            error = _error_line(exc)
        out["graphs"].append(len(graphs) - before)
        out["traced_all"] |= collector.traced
        for logger, message in collector.messages:
            if "graph_breaks" in logger or message.startswith("Graph break"):
                parsed = parse_graph_break(message, paths)
                if parsed:
                    parsed["call"] = index
                    out["breaks"].append(parsed)
            if index == 3 and "Recompiling function" in message:
                out["recompiles"].append(_recompile(message, paths))
        if error is None:
            out["calls_ok"] += 1
            out["traced_ok"] |= collector.traced
        else:
            out["error"] = f"call {index}: {error}"
            if fullgraph:
                break
        if time.perf_counter() - started > budget:
            out["error"] = (out["error"] or "") + f" (budget spent after call {index})"
            break
    return out

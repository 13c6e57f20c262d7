"""Turn worker results into Diagnostics beside the linter's, and a short per-target summary.

Runtime findings use codes outside the rule ranges (JIT9xx) so they never clash with a
rule; a static finding the runtime reproduces at the same file and line is marked
`confirmed`, and one in a file the target ran but that the runtime did not reproduce is
marked `confirmed=False` (not seen with these example calls).
"""

from __future__ import annotations

import linecache
import os
import re
from dataclasses import replace
from typing import Iterable, Optional, Sequence

from compile_lint.core.diagnostics import Diagnostic

RUNTIME_BREAK = ("JIT900", "runtime-graph-break", "break")
RUNTIME_RECOMPILE = ("JIT901", "runtime-recompile", "recompile")
RUNTIME_FULLGRAPH = ("JIT902", "runtime-fullgraph-failure", "break")
RUNTIME_MISMATCH = ("JIT903", "compiled-output-mismatch", "error")
RUNTIME_FAILURE = ("JIT904", "target-failed", "error")
RUNTIME_SLOWER = ("JIT905", "compiled-slower-than-eager", "perf")


def display_path(path: Optional[str]) -> str:
    """A path relative to the working directory when it is under it (as the linter prints)."""
    if not path:
        return "<unknown>"
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative.startswith("..") else relative


def _diagnostic(kind: tuple, path: Optional[str], line: int, message: str,
                gb_type: Optional[str] = None, gb_id: Optional[str] = None) -> Diagnostic:
    code, name, category = kind
    line = max(1, int(line or 1))
    text = linecache.getline(path, line).rstrip() if path else ""
    column = len(text) - len(text.lstrip()) + 1 if text.strip() else 1
    end_column = len(text) + 1 if text.strip() else 1
    return Diagnostic(display_path(path), line, column, line, end_column, code, name, category,
                      message, gb_type, gb_id)


def runtime_diagnostics(result: dict) -> list[Diagnostic]:
    """The findings of one target's worker result."""
    target = result.get("target", "?")
    entry_path, entry_line = (result.get("entry") or [result.get("module_file"), 1])
    error = result.get("error")
    if error:
        # At the innermost frame of the user's code in the traceback (the worker finds it),
        # else at the top of the target's file.
        path = error.get("path") or result.get("module_file") or _target_file(target)
        line = error.get("line") if error.get("path") else 1
        return [_diagnostic(RUNTIME_FAILURE, path, line, f"{target}: {error['kind']}: {error['message']}")]
    found = result["analysis"]
    out: list[Diagnostic] = []
    if found.get("eager_error"):
        out.append(_diagnostic(RUNTIME_FAILURE, entry_path, entry_line,
                               f"{target}: raises eagerly: {found['eager_error']}"))
        return out
    for brk in found["graph_breaks"]:
        gb = f" ({brk['gb_id']})" if brk.get("gb_id") else ""
        text = (f"graph break at runtime: {brk['gb_type']}{gb}"
                + (f": {brk['explanation']}" if brk.get("explanation") else ""))
        out.append(_diagnostic(RUNTIME_BREAK, brk["path"], brk["line"], text, brk["gb_type"], brk.get("gb_id")))
    break_lines = {(display_path(b["path"]), b["line"]) for b in found["graph_breaks"]}
    if found.get("fullgraph_error"):
        location = found.get("fullgraph_location") or {"path": entry_path, "line": entry_line}
        if (display_path(location["path"]), location["line"]) not in break_lines:
            out.append(_diagnostic(RUNTIME_FULLGRAPH, location["path"], location["line"],
                                   f"fullgraph=True fails: {found['fullgraph_error']}",
                                   found.get("fullgraph_gb_type"), found.get("fullgraph_gb_id")))
    if found.get("compile_error"):
        out.append(_diagnostic(RUNTIME_FAILURE, entry_path, entry_line,
                               f"{target}: compile fails: {found['compile_error']}"))
    for recompile in found["recompiles"]:
        out.append(_diagnostic(RUNTIME_RECOMPILE, recompile["path"], recompile["line"],
                               f"recompiled {friendly_function(recompile['function'])}: "
                               f"guard failed: {recompile['guard']}"))
    comparison = found.get("comparison")
    if comparison and not comparison["equal"]:
        out.append(_diagnostic(RUNTIME_MISMATCH, entry_path, entry_line,
                               f"compiled output differs from eager: {comparison['detail']}"))
    bench = result.get("bench")
    if bench:
        slower = slower_than_eager(bench)
        for call, eager_ms, compiled_ms in slower:
            why = _why_slow(found)
            out.append(_diagnostic(RUNTIME_SLOWER, entry_path, entry_line,
                                   f"compiled is slower than eager on call {call} "
                                   f"({compiled_ms:.3f} ms vs {eager_ms:.3f} ms): {why}"))
    return out


def friendly_function(name: str) -> str:
    """`torch_dynamo_resume_in_forward_at_13` -> `forward (resumed after the break at line 13)`."""
    match = re.fullmatch(r"torch_dynamo_resume_in_(\w+?)_at_(\d+)", name)
    return f"{match[1]} (resumed after the break at line {match[2]})" if match else name


def _why_slow(found: dict) -> str:
    parts: list[str] = []
    if found["graph_breaks"]:
        parts.append(f"{len(found['graph_breaks'])} graph break(s) split it into eager-glued pieces")
    if found["recompiles"]:
        parts.append(f"{len(found['recompiles'])} recompile(s)")
    if not parts and str(found.get("device", "")).startswith("cuda"):
        return "no breaks or recompiles: likely launch-overhead bound; try mode='reduce-overhead' (CUDA graphs)"
    if not parts:
        return "no breaks or recompiles: the work per call is too small to repay the compiled wrapper's overhead"
    return "; ".join(parts)


def slower_than_eager(bench: dict) -> list[tuple[int, float, float]]:
    """(call, eager ms, compiled ms) where the default compiled build lost to eager."""
    by_key = {(t["variant"], t["call"]): t["median_ms"] for t in bench.get("timings", [])}
    return [(call, eager, by_key[("default", call)]) for (variant, call), eager in sorted(by_key.items())
            if variant == "eager" and ("default", call) in by_key and by_key[("default", call)] > eager]


def _target_file(target: str) -> Optional[str]:
    location = target.rpartition(":")[0]
    return location if location.endswith(".py") else None


def confirm(static: Iterable[Diagnostic], runtime: Sequence[Diagnostic], ran_files: set[str]) -> list[Diagnostic]:
    """Static findings marked confirmed where the runtime saw the same kind at their lines."""
    seen = {(d.path, d.line, d.kind) for d in runtime}
    out = []
    for d in static:
        if d.path not in ran_files:
            out.append(d)
            continue
        hit = any((d.path, line, d.kind) in seen for line in range(d.line, d.end_line + 1))
        out.append(replace(d, confirmed=hit))
    return out


def summary_lines(result: dict) -> list[str]:
    """A few human lines per target: verdicts, counts, equality, benchmark table."""
    target = result.get("target", "?")
    if result.get("error"):
        return [f"{target}: {result['error']['kind']}: {result['error']['message']}"]
    found = result["analysis"]
    mode = result.get("mode")
    where = ", ".join([found["device"], found["backend"]] + ([f"{mode} mode"] if mode else []))
    if found.get("eager_error"):
        return [f"{target} [{where}]: raises eagerly: {found['eager_error']}"]
    fullgraph = ("fullgraph=True OK" if not found.get("fullgraph_error")
                 else f"fullgraph=True fails: {found['fullgraph_error']}")
    comparison = found.get("comparison")
    equal = ("outputs equal to eager" if comparison and comparison["equal"] else
             f"outputs DIFFER: {comparison['detail']}" if comparison else "outputs not compared")
    if comparison and comparison["equal"]:
        equal += f" (max abs diff {comparison['max_abs_diff']:.2g})"
    lines = [f"{target} [{where}]: {fullgraph}; {len(found['graph_breaks'])} graph break(s); "
             f"{len(found['recompiles'])} recompile(s); {equal}"]
    bench = result.get("bench")
    if bench:
        lines += bench_table(bench)
    return lines


def bench_table(bench: dict) -> list[str]:
    """A markdown table of the timings and the patch comparison."""
    lines = []
    timings = bench.get("timings", [])
    if timings:
        eager = {t["call"]: t["median_ms"] for t in timings if t["variant"] == "eager"}
        lines += ["", "| call | variant | compile s | median ms | speedup vs eager |",
                  "| --- | --- | --- | --- | --- |"]
        for t in sorted(timings, key=lambda t: (t["call"], t["variant"] != "eager")):
            speed = f"{eager[t['call']] / t['median_ms']:.2f}x" if t["call"] in eager and t["median_ms"] > 0 else "-"
            lines.append(f"| {t['call']} | {t['variant']} | {t['compile_s']:.1f} | {t['median_ms']:.4f} | {speed} |")
    stock, patched = bench.get("stock_code"), bench.get("patched_code")
    if stock and patched:
        lines += ["", "| generated code | kernels | buffers | loads |", "| --- | --- | --- | --- |",
                  f"| stock | {stock['kernels']} | {stock['buffers']} | {stock['loads']} |",
                  f"| patched | {patched['kernels']} | {patched['buffers']} | {patched['loads']} |"]
    if bench.get("numerics"):
        lines += ["", "| dtype | stock max abs diff | patched max abs diff | atol | patched within tolerance |",
                  "| --- | --- | --- | --- | --- |"]
        lines += [f"| {n['dtype']} | {n['stock_max_abs_diff']:.3g} | {n['patched_max_abs_diff']:.3g} | {n['atol']:g} | "
                  f"{'yes' if n['patched_within_tolerance'] else 'NO'} |" for n in bench["numerics"]]
    if bench.get("recommendation"):
        lines += ["", f"Inductor reuse patch: {bench['recommendation']}"]
    lines += [f"error: {e}" for e in bench.get("errors", [])]
    return lines

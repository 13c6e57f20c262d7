"""Turn worker results into Diagnostics beside the linter's, and a short per-target summary.

Runtime findings use codes outside the rule ranges (JIT9xx) so they never clash with a
rule; a static finding the runtime reproduces is marked `confirmed`, and one in a file the
target ran but that the runtime did not reproduce is marked `confirmed=False` (not seen
with these example calls). Each break is listed once: a runtime break (JIT900, JIT902) a
confirmed static finding covers is not listed beside it. A break is the static finding's
when it happens on its lines, or, in the finding's file, at the break's innermost frame
there (the call into a library that breaks inside). The verdict says which compile is
which: the default compile's breaks and recompiles, and what `fullgraph=True` does (on
torch 2.13 it captures `.item()`, mask indexing, `nonzero` and `bincount`, which break the
default compile).
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


# (path, line): where a static finding may name a runtime one.
Site = tuple[str, int]


def _break_sites(brk: dict) -> frozenset[Site]:
    """The break's line, and in each file of its user stack the innermost frame there."""
    innermost = {display_path(path): line for path, line in brk.get("frames") or ()}  # outermost first
    return frozenset(innermost.items()) | {(display_path(brk["path"]), brk["line"])}


def runtime_diagnostics(result: dict) -> list[Diagnostic]:
    """The findings of one target's worker result."""
    return [diagnostic for diagnostic, _ in _runtime_findings(result)]


def _runtime_findings(result: dict) -> list[tuple[Diagnostic, frozenset[Site]]]:
    """The findings of one target's worker result, each with the places a static finding names it by."""
    return [(d, sites or frozenset({(d.path, d.line)})) for d, sites in _runtime_with_sites(result)]


def _runtime_with_sites(result: dict) -> list[tuple[Diagnostic, frozenset[Site]]]:
    none: frozenset[Site] = frozenset()
    target = result.get("target", "?")
    entry_path, entry_line = (result.get("entry") or [result.get("module_file"), 1])
    error = result.get("error")
    if error:
        # At the innermost frame of the user's code in the traceback (the worker finds it),
        # else at the top of the target's file.
        path = error.get("path") or result.get("module_file") or _target_file(target)
        line = error.get("line") if error.get("path") else 1
        return [(_diagnostic(RUNTIME_FAILURE, path, line, f"{target}: {error['kind']}: {error['message']}"), none)]
    found = result["analysis"]
    out: list[tuple[Diagnostic, frozenset[Site]]] = []
    if found.get("eager_error"):
        out.append((_diagnostic(RUNTIME_FAILURE, entry_path, entry_line,
                                f"{target}: raises eagerly: {found['eager_error']}"), none))
        return out
    for brk in found["graph_breaks"]:
        gb = f" ({brk['gb_id']})" if brk.get("gb_id") else ""
        text = (f"graph break at runtime (default compile): {brk['gb_type']}{gb}"
                + (f": {brk['explanation']}" if brk.get("explanation") else ""))
        out.append((_diagnostic(RUNTIME_BREAK, brk["path"], brk["line"], text, brk["gb_type"], brk.get("gb_id")),
                    _break_sites(brk)))
    break_lines = {(display_path(b["path"]), b["line"]) for b in found["graph_breaks"]}
    if found.get("fullgraph_error"):
        location = found.get("fullgraph_location") or {"path": entry_path, "line": entry_line}
        if (display_path(location["path"]), location["line"]) not in break_lines:
            out.append((_diagnostic(RUNTIME_FULLGRAPH, location["path"], location["line"],
                                    f"fullgraph=True fails: {found['fullgraph_error']}",
                                    found.get("fullgraph_gb_type"), found.get("fullgraph_gb_id")), none))
    if found.get("compile_error"):
        out.append((_diagnostic(RUNTIME_FAILURE, entry_path, entry_line,
                                f"{target}: compile fails: {found['compile_error']}"), none))
    for recompile in found["recompiles"]:
        out.append((_diagnostic(RUNTIME_RECOMPILE, recompile["path"], recompile["line"],
                                f"recompiled {friendly_function(recompile['function'])}: "
                                f"guard failed: {recompile['guard']}"), none))
    comparison = found.get("comparison")
    if comparison and not comparison["equal"]:
        out.append((_diagnostic(RUNTIME_MISMATCH, entry_path, entry_line,
                                f"compiled output differs from eager: {comparison['detail']}"), none))
    bench = result.get("bench")
    if bench:
        slower = slower_than_eager(bench)
        for call, eager_ms, compiled_ms in slower:
            why = _why_slow(found)
            out.append((_diagnostic(RUNTIME_SLOWER, entry_path, entry_line,
                                    f"compiled is slower than eager on call {call} "
                                    f"({compiled_ms:.3f} ms vs {eager_ms:.3f} ms): {why}"), none))
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


def verified(static: Iterable[Diagnostic], results: Sequence[dict], ran_files: set[str]) -> list[Diagnostic]:
    """The static findings, marked confirmed where the runtime saw the same kind at their lines (or, for a
    break, at its innermost frame in their file), and the runtime findings; a runtime break a
    confirmed static finding covers is not listed again."""
    runtime = [finding for result in results for finding in _runtime_findings(result)]
    seen = {(path, line, d.kind) for d, sites in runtime for path, line in sites}
    out, covered = [], set()
    for d in static:
        if d.path not in ran_files:
            out.append(d)
            continue
        lines = range(d.line, d.end_line + 1)
        hit = any((d.path, line, d.kind) in seen for line in lines)
        out.append(replace(d, confirmed=hit))
        if hit:
            covered |= {(d.path, line, d.kind) for line in lines}
    for d, sites in runtime:
        said = d.code in (RUNTIME_BREAK[0], RUNTIME_FULLGRAPH[0]) and any(
            (path, line, d.kind) in covered for path, line in sites)
        if not said:
            out.append(d)
    return out


def _count(number: int, noun: str) -> str:
    return f"{'no' if number == 0 else number} {noun}{'' if number == 1 else 's'}"


def fullgraph_verdict(found: dict) -> str:
    """What `fullgraph=True` does: fails (why), or compiles, capturing what breaks the default compile."""
    if found.get("fullgraph_error"):
        return f"fails: {found['fullgraph_error']}"
    if found["graph_breaks"]:
        return "compiles (captures data-dependent values)"
    return "compiles"


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
    comparison = found.get("comparison")
    equal = ("outputs equal to eager" if comparison and comparison["equal"] else
             f"outputs DIFFER: {comparison['detail']}" if comparison else "outputs not compared")
    if comparison and comparison["equal"]:
        equal += f" (max abs diff {comparison['max_abs_diff']:.2g})"
    lines = [f"{target} [{where}]: default compile: {_count(len(found['graph_breaks']), 'graph break')}, "
             f"{_count(len(found['recompiles']), 'recompile')}; fullgraph=True: {fullgraph_verdict(found)}; {equal}"]
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

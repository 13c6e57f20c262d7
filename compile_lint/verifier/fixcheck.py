"""`compile-lint --fix --verify`, one target: run it on the original and on fixed code, and judge.

The original and the fixed code are imported, each in a subprocess of its own (both at
once), and run on their factories' example calls, which must be equal. A target passes
when eager outputs are equal and the fixed code compiles to outputs equal to eager with
no more graph breaks + recompiles than before. A rejection names the check that failed
and the numbers: breaks and recompiles before -> after, output diffs. Which fixes are
run together, and which are kept, is `fixproject`'s business.
"""

from __future__ import annotations

import concurrent.futures
import os
from dataclasses import dataclass
from typing import Optional, Sequence

from compile_lint.verifier.isolation import kill_workers, run_isolated
from compile_lint.verifier.report import display_path
from compile_lint.verifier.targets import TargetSpec, parse_target

FIX_TIMEOUT_S = 600.0


@dataclass
class FixVerdict:
    """Whether a fixed file may be written, and why."""

    accepted: bool
    reason: str
    checked: bool = True
    improved: bool = False


def resolve_targets(targets: Sequence[str], root: str) -> list[TargetSpec]:
    """Config targets with file paths made absolute against the config's directory."""
    specs = []
    for text in targets:
        spec = parse_target(text)
        if spec.is_path and not os.path.isabs(spec.location):
            location = os.path.normpath(os.path.join(root, spec.location))
            spec = TargetSpec(f"{location}:{spec.factory}", location, spec.factory)
        specs.append(spec)
    return specs


def _breaks(analysis: dict) -> int:
    # A fullgraph failure no logged break accounts for (a hard error) counts as one break.
    extra = 1 if analysis.get("fullgraph_error") and not analysis["graph_breaks"] else 0
    return len(analysis["graph_breaks"]) + extra


def problems(analysis: dict) -> int:
    """Graph breaks + recompiles of one run (a fullgraph hard error no break explains counts as one)."""
    return _breaks(analysis) + len(analysis["recompiles"])


def problems_in(analysis: dict, path: str) -> int:
    """The graph breaks + recompiles of one run that the compiler placed in the file at `path`."""
    def at(item: Optional[dict]) -> bool:
        return bool(item and item.get("path")) and os.path.abspath(item["path"]) == path

    found = sum(at(item) for item in analysis["graph_breaks"]) + sum(at(item) for item in analysis["recompiles"])
    if analysis.get("fullgraph_error") and not analysis["graph_breaks"] and at(analysis.get("fullgraph_location")):
        found += 1
    return found


def numbers(result: dict) -> str:
    """The measurements behind a verdict: breaks and recompiles before -> after, output diffs."""
    before, after = result["before"], result["after"]
    parts = [f"graph breaks {_breaks(before)} -> {_breaks(after)}",
             f"recompiles {len(before['recompiles'])} -> {len(after['recompiles'])}"]
    outputs, comparison = result.get("outputs"), after.get("comparison")
    if outputs:
        parts.append(f"eager outputs max abs diff {outputs['max_abs_diff']:.3g}")
    if comparison:
        parts.append(f"compiled vs eager max abs diff {comparison['max_abs_diff']:.3g}")
    return ", ".join(parts)


def judge(result: dict) -> FixVerdict:
    """The verdict for one target's side-by-side run; a rejection names the check that failed."""
    target = result.get("target", "?")
    if result.get("error"):
        return FixVerdict(False, f"{target}: {result['error']['kind']}: {result['error']['message']}")
    before, after = result["before"], result["after"]
    if before.get("eager_error"):
        return FixVerdict(False, f"{target}: the original raises, nothing to compare: {before['eager_error']}")
    if after.get("eager_error"):
        return FixVerdict(False, f"{target}: check failed: fixed code runs: {after['eager_error']}")

    def failed(check: str, detail: str) -> FixVerdict:
        return FixVerdict(False, f"{target}: check failed: {check}: {detail} ({numbers(result)})")

    outputs = result.get("outputs")
    if not outputs or not outputs["equal"]:
        return failed("eager outputs equal", outputs["detail"] if outputs else "not compared")
    if after.get("compile_error"):
        return failed("fixed code compiles", after["compile_error"])
    comparison = after.get("comparison")
    if comparison and not comparison["equal"]:
        return failed("compiled fixed code equals its eager outputs", comparison["detail"])
    n_before, n_after = problems(before), problems(after)
    if n_after > n_before:
        return failed("no more graph breaks + recompiles", f"{n_before} before, {n_after} after")
    return FixVerdict(True, f"{target}: outputs equal ({numbers(result)})",
                      improved=n_after < n_before or n_after == 0)


def shown(spec: TargetSpec) -> str:
    """A target as messages show it: a file target's path relative to the working directory."""
    return f"{display_path(spec.location)}:{spec.factory}" if spec.is_path else spec.text


def check_target(spec: TargetSpec, fixed: dict[str, str], scratch: str,
                 timeout_s: Optional[float], backend: str, device: Optional[str],
                 mode: str = "factory") -> Optional[dict]:
    """Run one target on the original code and, at once, with every fixed copy in `fixed`
    (original file -> fixed copy) in place of its original, the module in `mode`.

    Separate processes, because importing both versions into one registers everything the
    files register twice (a custom op's second definition breaks the first). The result's
    `covered` lists the fixed files the target imports; None when it imports none of them.
    A failure of the original's side is marked `"original_failed": True`."""
    request = {"mode": "fixcheck", "target": shown(spec), "fixed": fixed,
               "backend": backend, "device": device, "model_mode": mode}
    sides = {side: dict(request, side=side, outputs_path=os.path.join(scratch, f"{side}.pt"))
             for side in ("before", "after")}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        runs = {side: pool.submit(run_isolated, side_request, timeout_s, scratch)
                for side, side_request in sides.items()}
        try:
            before, after = runs["before"].result(), runs["after"].result()
        except BaseException:
            # Ctrl-C or SIGTERM reaches this (the main) thread only: stop both workers (again,
            # should one start after the first kill), so that the threads waiting on them end
            # and the pool can shut down.
            for run in runs.values():
                run.cancel()
            while not all(run.done() for run in runs.values()):
                kill_workers()
                concurrent.futures.wait(runs.values(), timeout=0.1)
            raise
    if before.get("covered") == [] or after.get("covered") == []:
        return None
    if before.get("error"):
        return dict(before, original_failed=True)
    if after.get("error"):
        return after
    covered = sorted(set(before["covered"]) | set(after["covered"]))
    result = {"target": shown(spec), "covered": covered, "before": before["analysis"], "after": after["analysis"]}
    if not before["analysis"].get("eager_error") and not after["analysis"].get("eager_error"):
        result["outputs"] = compare_saved(sides["before"]["outputs_path"], sides["after"]["outputs_path"])
    return result


def compare_saved(before_path: str, after_path: str) -> dict:
    """Eager outputs of the two sides, on the same example calls (else the fix changed the calls)."""
    import torch

    from compile_lint.verifier.analysis import compare

    before, after = (torch.load(path, weights_only=False) for path in (before_path, after_path))
    calls = compare(before["calls"], after["calls"], "calls")
    if not calls.equal:
        return {"equal": False, "max_abs_diff": calls.max_abs_diff,
                "detail": f"the fixed code's factory makes other example calls: {calls.detail}"}
    return compare(before["eager"], after["eager"]).__dict__

"""`compile-lint --fix --verify`, one target: run it on the original and on fixed code, and judge.

The original and the fixed code are imported, each in a subprocess of its own (both at
once), and run on their factories' example calls, which must be equal. A target passes
when eager outputs are equal and the fixed code compiles to outputs equal to eager with
no more graph breaks + recompiles than before. The fixes are judged against the
original's own verdict: a failure the original shows too (it raises, or does not compile,
with the same error) is not held against them; such a target is neutral, it passes but
proves nothing. A rejection names the check that failed and the numbers: breaks and
recompiles before -> after, output diffs. Which fixes are run together, and which are
kept, is `fixproject`'s business.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from compile_lint.verifier.isolation import run_in_parallel, run_isolated
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
    neutral: bool = False  # passed only because the original fails the same way: proves nothing


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
        return item is not None and bool(item.get("path")) and os.path.abspath(item["path"]) == path

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
    if before.get("timing") and after.get("timing"):
        parts.append(f"compiled {before['timing']['ms']:.3g} -> {after['timing']['ms']:.3g} ms per pass")
    return ", ".join(parts)


def _run_failure(result: dict, side: str) -> Optional[str]:
    """Why one side ran nothing to compare (its worker failed, or its eager run raised), or None."""
    error = result.get(f"{side}_error")
    if error:
        return f"{error['kind']}: {error['message']}"
    analysis = result.get(side)
    return analysis.get("eager_error") if analysis else None


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/][^\s\\/:'\"()<>]+)+")
_NUMBER = re.compile(r"\d+")


def same_failure(original: str, fixed: str) -> bool:
    """Whether two error lines are the same failure: equal once file paths (the fixed copy
    lives elsewhere), addresses and numbers (line numbers move when a fix adds a line) are masked."""
    def masked(text: str) -> str:
        return _NUMBER.sub("N", _PATH.sub("<path>", _ADDRESS.sub("0x?", text)))

    return masked(original) == masked(fixed)


def _neutral(target: str, failure: str) -> FixVerdict:
    return FixVerdict(True, f"{target}: the original fails the same way, not held against the fixes, "
                            f"nothing proven here: {failure}", neutral=True)


def judge(result: dict) -> FixVerdict:
    """The verdict for one target's side-by-side run; a rejection names the check that failed.

    A failure of the fixed code that the original shows too (the same error) makes the
    target neutral: accepted, not improved, `neutral` set."""
    target = result.get("target", "?")
    original_failure, fixed_failure = _run_failure(result, "before"), _run_failure(result, "after")
    if fixed_failure:
        if original_failure and same_failure(original_failure, fixed_failure):
            return _neutral(target, original_failure)
        return FixVerdict(False, f"{target}: check failed: fixed code runs: {fixed_failure}")
    if original_failure:
        return FixVerdict(False, f"{target}: the original raises, nothing to compare: {original_failure}")
    before, after = result["before"], result["after"]

    def failed(check: str, detail: str) -> FixVerdict:
        return FixVerdict(False, f"{target}: check failed: {check}: {detail} ({numbers(result)})")

    outputs = result.get("outputs")
    if not outputs or not outputs["equal"]:
        return failed("eager outputs equal", outputs["detail"] if outputs else "not compared")
    if after.get("compile_error"):
        if before.get("compile_error") and same_failure(before["compile_error"], after["compile_error"]):
            return _neutral(target, f"does not compile: {before['compile_error']}")
        return failed("fixed code compiles", after["compile_error"])
    comparison, original_comparison = after.get("comparison"), before.get("comparison")
    if comparison and not comparison["equal"] and not (original_comparison and not original_comparison["equal"]):
        return failed("compiled fixed code equals its eager outputs", comparison["detail"])
    n_before, n_after = problems(before), problems(after)
    if n_after > n_before:
        return failed("no more graph breaks + recompiles", f"{n_before} before, {n_after} after")
    slower = slower_when_compiled(before.get("timing"), after.get("timing"))
    if slower:
        return failed("compiled fixed code no slower than the compiled original", slower)
    made_it_compile = bool(before.get("compile_error"))
    return FixVerdict(True, f"{target}: outputs equal ({numbers(result)})",
                      improved=n_after < n_before or n_after == 0 or made_it_compile)


# Under --bench a fix is rolled back when its compiled code is slower than the compiled original in
# at least three quarters of the samples: its lower quartile above the original's upper quartile, by
# this much more. A noisy machine widens the quartiles, so noise alone never rolls a fix back.
SLOWER_MARGIN = 0.05


def slower_when_compiled(before: Optional[dict], after: Optional[dict]) -> Optional[str]:
    """How much slower the compiled fixed code runs than the compiled original, beyond the noise; None when
    it does not (or either side has no timing). A fix may compile to one graph and lose: it computes an
    untaken branch, runs every expert of an MoE layer, or unrolls an RNN the original ran in one kernel."""
    if not before or not after or before["ms"] <= 0 or after["low"] <= before["high"] * (1 + SLOWER_MARGIN):
        return None
    return (f"{after['ms']:.3g} ms per pass against {before['ms']:.3g} ms ({after['ms'] / before['ms']:.2f}x; "
            f"quartiles {after['low']:.3g}-{after['high']:.3g} against {before['low']:.3g}-{before['high']:.3g}; "
            f"{after['backend']}): kept the original")


def shown(spec: TargetSpec) -> str:
    """A target as messages show it: a file target's path relative to the working directory."""
    return f"{display_path(spec.location)}:{spec.factory}" if spec.is_path else spec.text


def check_target(spec: TargetSpec, fixed: dict[str, str], scratch: str,
                 timeout_s: Optional[float], backend: str, device: Optional[str],
                 mode: str = "factory", original: Optional[dict] = None,
                 bench: Optional[str] = None) -> Optional[dict]:
    """Run one target on the original code and, at once, with every fixed copy in `fixed`
    (original file -> fixed copy) in place of its original, the module in `mode`.

    Separate processes, because importing both versions into one registers everything the
    files register twice (a custom op's second definition breaks the first). The original
    code is the same in every run of a target: pass an earlier run's `result["original"]`
    as `original` and only the fixed side runs. The result's `covered` lists the fixed
    files the target imports; None when it imports none of them. A side whose worker
    failed (its import or factory raised, it timed out) has its `before_error`/`after_error`.
    `bench` (a backend): each side also times its compiled model, the sides one after the other
    so that neither slows the other."""
    request: dict[str, Any] = {"mode": "fixcheck", "target": shown(spec), "fixed": fixed,
                               "backend": backend, "device": device, "model_mode": mode, "bench": bench}
    sides = {side: dict(request, side=side, outputs_path=os.path.join(scratch, f"{side}.pt"))
             for side in ("before", "after") if side == "after" or original is None}
    finished = _run_sides(sides, scratch, timeout_s, 1 if bench else len(sides))
    before = original["side"] if original is not None else finished["before"]
    before_outputs = original["outputs_path"] if original is not None else sides["before"]["outputs_path"]
    after = finished["after"]
    before_covered = set(before["covered"]) & set(fixed) if "covered" in before else None
    if before_covered == set() or after.get("covered") == []:
        return None
    result: dict = {"target": shown(spec), "original": {"side": before, "outputs_path": before_outputs},
                    "before": before.get("analysis"), "after": after.get("analysis"),
                    "before_error": before.get("error"), "after_error": after.get("error")}
    if before_covered is not None or "covered" in after:
        result["covered"] = sorted((before_covered or set()) | set(after.get("covered", ())))
    if (result["before"] and result["after"] and not result["before"].get("eager_error")
            and not result["after"].get("eager_error")):
        result["outputs"] = compare_saved(before_outputs, sides["after"]["outputs_path"])
    return result


def _run_sides(sides: dict[str, dict], scratch: str, timeout_s: Optional[float], parallel: int) -> dict[str, dict]:
    """Each side's worker result, `parallel` sides at once."""
    results = run_in_parallel(lambda request: run_isolated(request, timeout_s, scratch), list(sides.values()),
                              parallel)
    return dict(zip(sides, results))


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

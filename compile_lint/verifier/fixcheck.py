"""`compile-lint --fix --verify`: keep a fix only if the compiler proves it.

For each configured verify target whose factory lives in the fixed file or imports it,
the original and the fixed code are imported, each in a subprocess of its own (both at
once), and run on their factories' example calls, which must be equal. The fix is kept
only if, for every such target, eager outputs are equal, the fixed code compiles to
outputs equal to eager and has no more graph breaks + recompiles than before, and at
least one target shows fewer (or none at all). A rollback names the
check that failed and the numbers: breaks and recompiles before -> after, output diffs.
"""

from __future__ import annotations

import concurrent.futures
import os
import tempfile
from dataclasses import dataclass
from typing import Optional, Sequence

from compile_lint.verifier.isolation import kill_workers, run_isolated
from compile_lint.verifier.targets import TargetError, TargetSpec, module_file_of, parse_target

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


def _problems(analysis: dict) -> int:
    return _breaks(analysis) + len(analysis["recompiles"])


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
    n_before, n_after = _problems(before), _problems(after)
    if n_after > n_before:
        return failed("no more graph breaks + recompiles", f"{n_before} before, {n_after} after")
    return FixVerdict(True, f"{target}: outputs equal ({numbers(result)})",
                      improved=n_after < n_before or n_after == 0)


def check_target(spec: TargetSpec, path: str, fixed_path: str, scratch: str,
                 timeout_s: Optional[float], backend: str, device: Optional[str],
                 mode: str = "factory") -> Optional[dict]:
    """Run one target on the original and on the fixed code, in two processes at once.

    Separate processes, because importing both versions into one registers everything the
    file registers twice (a custom op's second definition breaks the first). None when
    the target does not import the file."""
    request = {"mode": "fixcheck", "target": spec.text, "original_path": path, "fixed_path": fixed_path,
               "backend": backend, "device": device, "model_mode": mode}
    sides = {side: dict(request, side=side, outputs_path=os.path.join(scratch, f"{side}.pt"))
             for side in ("before", "after")}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        runs = {side: pool.submit(run_isolated, side_request, timeout_s) for side, side_request in sides.items()}
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
    for side in (before, after):
        if side.get("covered") is False:
            return None
        if side.get("error"):
            return side
    result = {"target": spec.text, "before": before["analysis"], "after": after["analysis"]}
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


def verify_fix(path: str, fixed_text: str, targets: Sequence[str], root: str,
               timeout_s: Optional[float] = FIX_TIMEOUT_S, backend: str = "eager",
               device: Optional[str] = None, mode: str = "factory") -> FixVerdict:
    """Run every target that covers `path` on the original and the fixed text, its module
    in `mode` (the factory's, or "train"/"eval")."""
    try:
        specs = resolve_targets(targets, root)
    except TargetError as error:
        return FixVerdict(False, str(error))
    absolute = os.path.abspath(path)
    reasons, improved = [], False
    with tempfile.TemporaryDirectory(prefix="compile-lint-fixcheck-") as scratch:
        fixed_path = os.path.join(scratch, os.path.basename(absolute))
        with open(fixed_path, "w", encoding="utf-8") as handle:
            handle.write(fixed_text)
        for index, spec in enumerate(specs):
            if not may_cover(spec, absolute):
                continue
            target_scratch = os.path.join(scratch, str(index))
            os.mkdir(target_scratch)
            result = check_target(spec, absolute, fixed_path, target_scratch, timeout_s, backend, device, mode)
            if result is None:
                continue
            verdict = judge(result)
            if not verdict.accepted:
                return verdict
            reasons.append(verdict.reason)
            improved = improved or verdict.improved
    if not reasons:
        return FixVerdict(True, f"{path}: no verify target covers this file; fix applied unverified", checked=False)
    if not improved:
        return FixVerdict(False, "check failed: fewer graph breaks + recompiles on some target: " + "; ".join(reasons))
    return FixVerdict(True, "; ".join(reasons), improved=True)


def may_cover(spec: TargetSpec, path: str) -> bool:
    """A cheap pre-filter: the target's module is the file, or names the file's module.

    The worker decides exactly (is the file among the modules the target imported?); this
    only spares a subprocess for targets that cannot import it directly.
    """
    target_file = module_file_of(spec)
    if target_file is None:
        return True
    if target_file == path:
        return True
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem == "__init__":
        stem = os.path.basename(os.path.dirname(path))
    try:
        with open(target_file, encoding="utf-8") as handle:
            return stem in handle.read()
    except (OSError, UnicodeError):
        return True


def accept_hook(targets: Sequence[str], root: str, mode: str = "factory"):
    """A callback for autofix.apply.fix_file: None to write the fix, else why it was rolled back."""
    def accept(path: str, original: str, fixed: str) -> Optional[str]:
        verdict = verify_fix(path, fixed, targets, root, mode=mode)
        return None if verdict.accepted else f"{path}: fix rolled back, file left unchanged: {verdict.reason}"

    return accept

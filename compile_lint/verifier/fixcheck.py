"""`compile-lint --fix --verify`: keep a fix only if the compiler proves it.

For each configured verify target whose factory lives in the fixed file or imports it,
the original and the fixed code are imported side by side (in a subprocess) and run on
the same example calls. The fix is kept only if, for every such target, eager outputs are
equal, the fixed code compiles to outputs equal to eager and has no more graph breaks +
recompiles than before, and at least one target shows fewer (or none at all).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Sequence

from compile_lint.verifier.isolation import run_isolated
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


def _problems(analysis: dict) -> int:
    extra = 1 if analysis.get("fullgraph_error") and not analysis["graph_breaks"] else 0
    return len(analysis["graph_breaks"]) + len(analysis["recompiles"]) + extra


def judge(result: dict) -> FixVerdict:
    """The verdict for one target's side-by-side run."""
    target = result.get("target", "?")
    if result.get("error"):
        return FixVerdict(False, f"{target}: {result['error']['kind']}: {result['error']['message']}")
    before, after = result["before"], result["after"]
    if before.get("eager_error"):
        return FixVerdict(False, f"{target}: the original raises, nothing to compare: {before['eager_error']}")
    if after.get("eager_error"):
        return FixVerdict(False, f"{target}: the fixed code raises: {after['eager_error']}")
    outputs = result.get("outputs")
    if not outputs or not outputs["equal"]:
        return FixVerdict(False, f"{target}: the fix changes outputs: {outputs['detail'] if outputs else 'not compared'}")
    if after.get("compile_error"):
        return FixVerdict(False, f"{target}: the fixed code fails to compile: {after['compile_error']}")
    comparison = after.get("comparison")
    if comparison and not comparison["equal"]:
        return FixVerdict(False, f"{target}: compiled fixed code differs from eager: {comparison['detail']}")
    n_before, n_after = _problems(before), _problems(after)
    if n_after > n_before:
        return FixVerdict(False, f"{target}: more graph breaks + recompiles ({n_before} before, {n_after} after)")
    return FixVerdict(True, f"{target}: breaks + recompiles {n_before} -> {n_after}, outputs equal",
                      improved=n_after < n_before or n_after == 0)


def verify_fix(path: str, fixed_text: str, targets: Sequence[str], root: str,
               timeout_s: Optional[float] = FIX_TIMEOUT_S, backend: str = "eager",
               device: Optional[str] = None) -> FixVerdict:
    """Run every target that lives in `path` on the original and the fixed text."""
    try:
        specs = resolve_targets(targets, root)
    except TargetError as error:
        return FixVerdict(False, str(error))
    absolute = os.path.abspath(path)
    reasons, improved = [], False
    for spec in specs:
        if not may_cover(spec, absolute):
            continue
        request = {"mode": "fixcheck", "target": spec.text, "original_path": absolute,
                   "fixed_text": fixed_text, "backend": backend, "device": device}
        result = run_isolated(request, timeout_s)
        if result.get("covered") is False:
            continue
        verdict = judge(result)
        if not verdict.accepted:
            return verdict
        reasons.append(verdict.reason)
        improved = improved or verdict.improved
    if not reasons:
        return FixVerdict(True, f"{path}: no verify target covers this file; fix applied unverified", checked=False)
    if not improved:
        return FixVerdict(False, "no target shows fewer graph breaks + recompiles: " + "; ".join(reasons))
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


def accept_hook(targets: Sequence[str], root: str):
    """A callback for autofix.apply.fix_file: None to write the fix, else why it was rolled back."""
    def accept(path: str, original: str, fixed: str) -> Optional[str]:
        verdict = verify_fix(path, fixed, targets, root)
        return None if verdict.accepted else f"{path}: fix rolled back, file left unchanged: {verdict.reason}"

    return accept

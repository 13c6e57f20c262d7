"""Proof of `--fix` on real models: fix copies of the model libraries, run original vs fixed.

1. Copy the installed transformers, timm and diffusers (the real-world list's pinned
   versions) into a temp dir and fix every file of the copies in place, as
   `compile-lint --fix --unsafe-fixes` does (the same `fix_text`, to a fixed point),
   recording per finding its code, whether a fix was offered (safe/unsafe) and applied.
2. Trace the library lines each pinned model's forward runs, eval and train mode
   (benchmarks/fix_realworld_side.py trace).
3. For every model whose forward runs a line a fix changed, build it twice under the same
   seed, once from the original libraries and once from the fixed copies (each in its own
   process), and compare: eager outputs in eval mode, and in train mode where the model is
   deterministic (two runs with the same seed agree); graph breaks (backend "eager",
   eval and train); whether `fullgraph=True` succeeds; the compiled output against eager.
4. Report per code: findings, fixes offered, fixes applied, applied on executed lines,
   meaning changes (must be 0), breaks removed, applied to code no model runs.

Usage (from the repository root; `make fix-realworld` installs what it needs):

    python benchmarks/fix_realworld.py                       # every pinned model
    python benchmarks/fix_realworld.py --models timm/resnet18,transformers/gpt2
    python benchmarks/fix_realworld.py --select ALL          # also the off-by-default rules

Writes benchmarks/results/fix_realworld.{md,json} (or --out PREFIX) and prints the summary.
Exits 1 when a fix changed a model's outputs.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Optional, Union

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

from realworld_models import ALL_MODELS, PINNED  # noqa: E402

SIDE = os.path.join(HERE, "fix_realworld_side.py")
DEFAULT_OUT = os.path.join(HERE, "results", "fix_realworld")
LIBRARIES = ("transformers", "timm", "diffusers")
# Eager outputs of the original and the fixed library: a fix that keeps meaning gives the
# same values up to float rounding (a Python double kept as a float32 tensor, say).
ATOL, RTOL = 1e-5, 1e-4


# --- 1. fix the copies ----------------------------------------------------------------

def installed_root(library: str) -> str:
    """The installed package folder of `library`, found without importing it."""
    spec = importlib.util.find_spec(library)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{library} is not installed: run `make fix-realworld` (or pip install the realworld extra)")
    return os.path.abspath(list(spec.submodule_search_locations)[0])


def line_map(original: str, fixed: str) -> dict[int, int]:
    """Fixed line -> original line (1-based); lines inside a changed hunk map to its first line."""
    matcher = difflib.SequenceMatcher(None, original.splitlines(), fixed.splitlines(), autojunk=False)
    mapping = {}
    for tag, i1, _i2, j1, j2 in matcher.get_opcodes():
        for j in range(j1, j2):
            mapping[j + 1] = (i1 + (j - j1) if tag == "equal" else i1) + 1
    return mapping


def changed_lines(original: str, fixed: str) -> set[int]:
    """Original lines (1-based) a fix replaced or deleted, or next to which it inserted."""
    matcher = difflib.SequenceMatcher(None, original.splitlines(), fixed.splitlines(), autojunk=False)
    lines: set[int] = set()
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            lines.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    return lines


def read_and_lint(path: str, relpath: str, select: tuple) -> Union[tuple[str, list, Any], dict]:
    """(text, findings, config) of one file, or the error record of a file that fails to read or lint."""
    from compile_lint.engine.api import lint_source
    from compile_lint.engine.source import read_source
    from compile_lint.settings.config import Config

    config = Config(select=select) if select else Config()
    try:
        text = read_source(path).text
        return text, lint_source(text, path, config).diagnostics, config
    except Exception as error:  # noqa: BLE001 - an unreadable file is counted, not fatal
        return {"path": relpath, "error": f"{type(error).__name__}: {error}"[:300], "findings": [], "applied": []}


def fix_one(job: tuple[str, str, tuple]) -> Optional[dict]:
    """Lint and fix one copied file in place; None when it has no finding."""
    from compile_lint.fixes.apply import fix_text

    path, relpath, select = job
    linted = read_and_lint(path, relpath, select)
    if isinstance(linted, dict):
        return linted
    text, findings, config = linted
    if not findings:
        return None
    record: dict[str, Any] = {
        "path": relpath,
        "findings": [{"code": d.code, "line": d.line, "end_line": d.end_line,
                      "fix": d.fix.applicability if d.fix else None} for d in findings],
        "applied": [],
    }
    if not any(d.fix for d in findings):
        return record
    outcome = fix_text(text, path, config, unsafe=True)
    if outcome.error:
        record["fix_error"] = outcome.error
    if not outcome.changed:
        return record
    first_round = {(d.code, d.line, d.column) for d in findings}
    record["applied"] = [{"code": d.code, "line": d.line, "end_line": d.end_line,
                          "first_round": (d.code, d.line, d.column) in first_round} for d in outcome.applied]
    record["changed_lines"] = sorted(changed_lines(text, outcome.text))
    record["line_map"] = line_map(text, outcome.text)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(outcome.text)
    return record


def fix_copies(work: str, select: tuple, jobs: int, only: Optional[set[str]] = None) -> tuple[dict[str, dict], int]:
    """Copy the libraries under work/fixed and fix them: per relative path, what was found and
    fixed, and how many files were linted. `only`: just these relative paths (the rest is
    copied unfixed)."""
    jobs_list = []
    for library in LIBRARIES:
        source = installed_root(library)
        target = os.path.join(work, "fixed", library)
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        for folder, _, names in os.walk(target):
            for name in sorted(names):
                relpath = library + "/" + os.path.relpath(os.path.join(folder, name), target)
                if name.endswith(".py") and (only is None or relpath in only):
                    jobs_list.append((os.path.join(folder, name), relpath, select))
    records = {}
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
        for record in pool.map(fix_one, jobs_list, chunksize=16):
            if record is not None:
                records[record["path"]] = record
    return records, len(jobs_list)


# --- 2 and 3. run the models --------------------------------------------------------------

def side(args: list[str], fixed_root: Optional[str], timeout: float) -> tuple[int, str]:
    """Run fix_realworld_side.py; with `fixed_root`, the fixed copies shadow the installed libraries."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore",
               OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), PYTHONDONTWRITEBYTECODE="1")
    if fixed_root:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (fixed_root, env.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run([sys.executable, SIDE, *args], capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=REPO)
    except subprocess.TimeoutExpired:
        return 124, f"timeout after {timeout:.0f}s"
    tail = [line for line in done.stderr.strip().splitlines() if line.strip()][-1:] or [""]
    return done.returncode, tail[0][:300]


def load_traces(folder: str) -> dict[str, dict]:
    """The executed lines an earlier run traced (its kept dir's trace-*.json)."""
    traces: dict[str, dict] = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith("trace-") and name.endswith(".json"):
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                traces.update(json.load(handle)["models"])
    return traces


def trace_models(models: list[str], work: str, timeout: float, jobs: int) -> dict[str, dict]:
    """Executed library lines per model (original libraries), a few models per process."""
    batches = [models[index::jobs * 4] for index in range(min(len(models), jobs * 4))]
    results: dict[str, dict] = {}

    def run(index_batch: tuple[int, list[str]]) -> None:
        index, batch = index_batch
        out = os.path.join(work, f"trace-{index}.json")
        code, tail = side(["trace", out, *batch], None, timeout * len(batch))
        found = {}
        if os.path.exists(out):
            with open(out, encoding="utf-8") as handle:
                found = json.load(handle)["models"]
        for name in batch:
            results[name] = found.get(name, {"eval_error": f"trace process failed ({code}): {tail}"})

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(run, enumerate(batches)))
    return results


def fixed_lines_run(records: dict[str, dict], trace: dict) -> dict[str, set]:
    """Per mode, the (path, line) of applied-fix changes that the model's forward ran."""
    hits: dict[str, set] = {}
    for mode in ("eval", "train"):
        lines = trace.get(mode) or {}
        found = set()
        for path, executed in lines.items():
            record = records.get(path)
            if record and record.get("changed_lines"):
                found.update((path, line) for line in set(record["changed_lines"]) & set(executed))
        hits[mode] = found
    return hits


def load_side(prefix: str) -> tuple[Optional[dict], Optional[dict]]:
    """A side's JSON summary and its saved outputs, or (None, None) when it did not finish."""
    import torch

    if not os.path.exists(prefix + ".json"):
        return None, None
    with open(prefix + ".json", encoding="utf-8") as handle:
        summary = json.load(handle)
    return summary, torch.load(prefix + ".pt", weights_only=False)


def flatten(value: Any, where: str = "out") -> dict[str, Any]:
    """Nested outputs as {path: leaf}."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in flatten(item, f"{where}.{key}").items()}
    if isinstance(value, list):
        return {k: v for index, item in enumerate(value) for k, v in flatten(item, f"{where}[{index}]").items()}
    return {where: value}


@dataclass
class Difference:
    """How two nested outputs differ: equal within tolerance, the largest difference, the first mismatch."""

    equal: bool
    max_abs_diff: float = 0.0
    detail: str = ""


def difference(expected: Any, actual: Any) -> Difference:
    """Compare two nested outputs (tensors within ATOL/RTOL, everything else exactly)."""
    import torch

    left, right = flatten(expected), flatten(actual)
    if set(left) != set(right):
        return Difference(False, float("inf"), f"structure differs: {sorted(set(left) ^ set(right))[:3]}")
    worst, first = 0.0, ""
    for key, a in left.items():
        b = right[key]
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.shape != b.shape or a.dtype != b.dtype:
                first = first or f"{key}: {tuple(a.shape)} {a.dtype} vs {tuple(b.shape)} {b.dtype}"
                worst = float("inf")
                continue
            if not a.is_floating_point():
                if not torch.equal(a, b):
                    first, worst = first or f"{key}: integer values differ", float("inf")
                continue
            a64, b64 = a.double(), b.double()
            finite = torch.isfinite(a64) & torch.isfinite(b64)
            diff = float((a64 - b64)[finite].abs().max()) if bool(finite.any()) else 0.0
            worst = max(worst, diff)
            if not torch.allclose(a64, b64, atol=ATOL, rtol=RTOL, equal_nan=True):
                first = first or f"{key}: max abs diff {diff:.3g}"
        elif a != b:
            first, worst = first or f"{key}: {a!r} vs {b!r}", float("inf")
    return Difference(not first, worst, first)


def break_keys(entry: Optional[dict], mapping: Optional[dict[str, dict]] = None) -> set[tuple]:
    """Distinct (file, line, gb_type) of a run's breaks; `mapping` takes fixed lines to original ones."""
    keys = set()
    for brk in (entry or {}).get("breaks", []):
        line = brk["line"]
        if mapping is not None and brk["file"] in mapping:
            line = int(mapping[brk["file"]].get(str(line), mapping[brk["file"]].get(line, line)))
        keys.add((brk["file"], line, brk["gb_type"]))
    return keys


def compare_model(name: str, work: str, fixed_root: str, records: dict[str, dict], timeout: float) -> dict:
    """Run the model on both sides and judge the fixed side against the original."""
    folder = os.path.join(work, "runs", name.replace("/", "__"))
    os.makedirs(folder, exist_ok=True)
    report: dict[str, Any] = {"model": name}
    sides = {}
    for label, root in (("original", None), ("fixed", fixed_root)):
        prefix = os.path.join(folder, label)
        code, tail = side(["compare", prefix, name], root, timeout)
        summary, outputs = load_side(prefix)
        if summary is None:
            report["status"] = f"{label} side failed ({code}): {tail}"
            return report
        sides[label] = (summary, outputs)
    (original, out_o), (fixed, out_f) = sides["original"], sides["fixed"]
    if original["roots"] == fixed["roots"]:
        report["status"] = "the fixed side imported the original libraries"
        return report
    report["status"] = "ok"
    report["errors"] = {"original": original["errors"], "fixed": fixed["errors"]}
    checks = {}
    if "eval_a" in out_o and "eval_a" in out_f:
        checks["eval"] = difference(out_o["eval_a"], out_f["eval_a"]).__dict__
    elif "eval_a" in out_o:
        checks["eval"] = Difference(False, float("inf"), f"the fixed model raises: {fixed['errors']}").__dict__
    deterministic = "train_a" in out_o and difference(out_o["train_a"], out_o["train_b"]).equal
    report["train_deterministic"] = deterministic
    if deterministic:
        if "train_a" in out_f:
            checks["train"] = difference(out_o["train_a"], out_f["train_a"]).__dict__
        else:
            checks["train"] = Difference(False, float("inf"), f"the fixed model raises: {fixed['errors']}").__dict__
    if "layerdrop_a" in out_o and difference(out_o["layerdrop_a"], out_o["layerdrop_b"]).equal:
        checks["train, layer-drop 0.5"] = (difference(out_o["layerdrop_a"], out_f["layerdrop_a"]).__dict__
                                           if "layerdrop_a" in out_f else
                                           Difference(False, float("inf"),
                                                      f"the fixed model raises: {fixed['errors']}").__dict__)
    if "eval_default_compiled" in out_f and "eval_a" in out_f:
        checks["fixed compiled vs eager"] = difference(out_f["eval_a"], out_f["eval_default_compiled"]).__dict__
    report["checks"] = checks
    report["meaning_changed"] = any(not check["equal"] for key, check in checks.items()
                                    if key != "fixed compiled vs eager")
    mapping = {path: records[path]["line_map"] for path in records if records[path].get("line_map")}
    for mode in ("eval", "train"):
        before, after = original.get(f"{mode}_default"), fixed.get(f"{mode}_default")
        keys_before, keys_after = break_keys(before), break_keys(after, mapping)
        report[mode] = {
            "breaks_before": len(keys_before), "breaks_after": len(keys_after),
            "graphs_before": (before or {}).get("graphs"), "graphs_after": (after or {}).get("graphs"),
            "removed": sorted(keys_before - keys_after), "added": sorted(keys_after - keys_before),
            "fullgraph_before": original.get(f"{mode}_fullgraph", {}).get("error") is None,
            "fullgraph_after": fixed.get(f"{mode}_fullgraph", {}).get("error") is None,
            "fullgraph_error_after": fixed.get(f"{mode}_fullgraph", {}).get("error"),
            "compile_error_after": (after or {}).get("error"),
        }
    return report


# --- 4. report --------------------------------------------------------------------------

@dataclass
class CodeRow:
    """The per-code counts of the report."""

    findings: int = 0
    offered_safe: int = 0
    offered_unsafe: int = 0
    applied: int = 0
    applied_executed: int = 0
    models: set = field(default_factory=set)
    meaning_changes: int = 0
    breaks_removed: int = 0

    @property
    def applied_never_run(self) -> int:
        return self.applied - self.applied_executed


def _in_range(line: int, item: dict, spread: set[int]) -> bool:
    return item["line"] <= line <= item["end_line"] or line in spread


def per_code(records: dict[str, dict], executed: dict[str, set[int]], compared: list[dict]) -> dict[str, CodeRow]:
    """Findings, offers, applications, executed applications, meaning changes and breaks removed, per code."""
    rows: dict[str, CodeRow] = defaultdict(CodeRow)
    # Each applied fix's original lines: its finding's lines, plus the changed lines of the
    # hunks they touch (a fix may rewrite the whole statement around the finding).
    applied_lines: list[tuple[str, str, set[int]]] = []
    for path, record in records.items():
        for finding in record["findings"]:
            row = rows[finding["code"]]
            row.findings += 1
            if finding["fix"] == "safe":
                row.offered_safe += 1
            elif finding["fix"] == "unsafe":
                row.offered_unsafe += 1
        changed = set(record.get("changed_lines", []))
        for item in record["applied"]:
            span = set(range(item["line"], item["end_line"] + 1))
            lines = span | _hunk_around(span, changed) if item["first_round"] else set(changed)
            rows[item["code"]].applied += 1
            applied_lines.append((item["code"], path, lines))
            if lines & executed.get(path, set()):
                rows[item["code"]].applied_executed += 1
    for report in compared:
        if report.get("status") != "ok":
            continue
        for code, path, lines in applied_lines:
            if any(hit_path == path and line in lines for hit_path, line in report["fixed_lines_run"]):
                row = rows[code]
                row.models.add(report["model"])
                row.meaning_changes += int(report["meaning_changed"])
                for mode in ("eval", "train"):
                    row.breaks_removed += sum(1 for file, line, _ in report[mode]["removed"]
                                              if file == path and line in lines)
    return rows


def _hunk_around(span: set[int], changed: set[int]) -> set[int]:
    """The run of consecutive changed lines that touches `span`."""
    hunk = set()
    for line in span:
        if line in changed:
            cursor = line
            while cursor in changed:
                hunk.add(cursor)
                cursor -= 1
            cursor = line + 1
            while cursor in changed:
                hunk.add(cursor)
                cursor += 1
    return hunk


def markdown(rows: dict[str, CodeRow], compared: list[dict], traces: dict[str, dict], command: str,
             seconds: float, versions: dict[str, str], files: int, with_findings: int, fixed_files: int) -> str:
    """The results page."""
    lines = [
        "# `--fix --unsafe-fixes` on real models: original vs fixed libraries",
        "",
        f"Command: `{command}` ({seconds / 60:.1f} min). Versions: "
        + ", ".join(f"{name} {version}" for name, version in versions.items()) + ".",
        "",
        f"Files linted: {files}; with findings: {with_findings}; changed by a fix: {fixed_files}. "
        f"Models traced: {len(traces)} "
        f"({sum(1 for t in traces.values() if 'eval' in t)} ran eagerly in eval mode, "
        f"{sum(1 for t in traces.values() if 'train' in t)} in train mode). "
        f"Models whose forward runs a fixed line: {len(compared)}.",
        "",
        "## Per code",
        "",
        "| code | findings | fixes offered (safe / unsafe) | fixes applied | applied on executed lines | "
        "models running them | meaning changes | breaks removed | applied to code no model runs |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for code in sorted(rows):
        row = rows[code]
        lines.append(f"| {code} | {row.findings} | {row.offered_safe} / {row.offered_unsafe} | {row.applied} | "
                     f"{row.applied_executed} | {len(row.models)} | {row.meaning_changes} | {row.breaks_removed} | "
                     f"{row.applied_never_run} |")
    total = CodeRow()
    for row in rows.values():
        for name in ("findings", "offered_safe", "offered_unsafe", "applied", "applied_executed",
                     "meaning_changes", "breaks_removed"):
            setattr(total, name, getattr(total, name) + getattr(row, name))
    lines.append(f"| all | {total.findings} | {total.offered_safe} / {total.offered_unsafe} | {total.applied} | "
                 f"{total.applied_executed} | {len({m for r in rows.values() for m in r.models})} | "
                 f"{total.meaning_changes} | {total.breaks_removed} | {total.applied_never_run} |")
    lines += [
        "",
        "\"Executed\": the line (or the statement the fix rewrote) ran in an eager forward of at least one",
        "pinned model, eval or train mode. \"Meaning changes\": models running a fixed line of that code whose",
        "eager outputs differ between the original and the fixed library (eval; train where two runs",
        "with one seed agree; and train with layer-drop set to 0.5 and every dropout to 0, where the model",
        "has layer-drop, so the skip branch is taken and its draws are the only randomness),",
        f"beyond atol {ATOL:g} / rtol {RTOL:g}. \"Breaks removed\": distinct break",
        "locations (file, line, gb_type) inside a fix of that code that the fixed library no longer hits.",
        "",
        "## Per model (forward runs a fixed line)",
        "",
        "| model | fixed lines run (eval / train) | eval outputs | train outputs | train, layer-drop 0.5 | "
        "breaks eval before -> after | breaks train before -> after | fullgraph eval before -> after | "
        "fullgraph train before -> after | fixed: compiled vs eager |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for report in compared:
        if report.get("status") != "ok":
            lines.append(f"| {report['model']} | {report.get('fixed_lines_count', '')} | {report['status']} "
                         f"| | | | | | | |")
            continue
        checks = report["checks"]

        def verdict(key: str) -> str:
            check = checks.get(key)
            if check is None:
                return {"train": "not deterministic", "train, layer-drop 0.5": "no layer-drop"}.get(key, "not compared")
            return (f"equal (max abs diff {check['max_abs_diff']:.2g})" if check["equal"]
                    else f"**DIFFER**: {check['detail']}")

        def fullgraph(mode: str) -> str:
            entry = report[mode]
            return (f"{'ok' if entry['fullgraph_before'] else 'fails'} -> "
                    f"{'ok' if entry['fullgraph_after'] else 'fails'}")

        lines.append(
            f"| {report['model']} | {report['fixed_lines_count']} | {verdict('eval')} | {verdict('train')} | "
            f"{verdict('train, layer-drop 0.5')} | "
            f"{report['eval']['breaks_before']} -> {report['eval']['breaks_after']} | "
            f"{report['train']['breaks_before']} -> {report['train']['breaks_after']} | "
            f"{fullgraph('eval')} | {fullgraph('train')} | {verdict('fixed compiled vs eager')} |")
    changed = [r for r in compared if r.get("meaning_changed")]
    lines += ["", "## Meaning changes", ""]
    if not changed:
        lines.append("None.")
    for report in changed:
        lines.append(f"- {report['model']}: " + "; ".join(
            f"{key}: {check['detail']}" for key, check in report["checks"].items() if not check["equal"])
            + ". Fixed lines it runs: " + ", ".join(f"{p}:{line}" for p, line in report["fixed_lines_run"][:10]))
    failed = {name: trace for name, trace in traces.items() if "eval" not in trace}
    if failed:
        lines += ["", "## Models that did not run in eval mode", ""]
        lines += [f"- {name}: {trace.get('eval_error')}" for name, trace in sorted(failed.items())]
    return "\n".join(lines) + "\n"


def versions() -> dict[str, str]:
    """The versions of torch and the libraries as installed."""
    from importlib.metadata import version

    found = {name: version(name) for name in ("torch", *LIBRARIES)}
    for name, pinned in PINNED.items():
        if found[name] != pinned:
            print(f"warning: {name} {found[name]} is installed, the real-world list pins {pinned}", file=sys.stderr)
    return found


def main(argv: Optional[list[str]] = None) -> int:
    """Fix, trace, compare, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated library/model names (default: the pinned list)")
    parser.add_argument("--select", help="rule selection, e.g. ALL (default: the default selection)")
    parser.add_argument("--jobs", type=int, default=2, help="processes at once (default 2)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per model and side (default 900)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="results path prefix (.json and .md are added)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (fixed copies, outputs) and print it")
    parser.add_argument("--traces-from", metavar="DIR",
                        help="a dir kept by an earlier run: reuse its traces (they depend only on the original "
                             "libraries) and fix only the files some model runs (a quick check of new fixes)")
    parser.add_argument("--reuse", metavar="DIR",
                        help="a dir kept by an earlier --keep run: reuse its fixed copies (after a change to the "
                             "models or the report, not to the rules)")
    args = parser.parse_args(argv)
    command = "python benchmarks/fix_realworld.py" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    models = args.models.split(",") if args.models else list(ALL_MODELS)
    select = tuple(args.select.split(",")) if args.select else ()
    started = time.perf_counter()
    found_versions = versions()
    work = args.reuse or tempfile.mkdtemp(prefix="compile-lint-fix-realworld-")
    records_path = os.path.join(work, "records.json")
    try:
        reused_traces = load_traces(args.traces_from) if args.traces_from else None
        if args.reuse:
            with open(records_path, encoding="utf-8") as handle:
                records, files = json.load(handle)
        else:
            only = None
            if reused_traces is not None:
                only = {path for trace in reused_traces.values() for mode in ("eval", "train")
                        for path in (trace.get(mode) or {})}
            print(f"fixing copies of {', '.join(LIBRARIES)} ...", file=sys.stderr)
            records, files = fix_copies(work, select, args.jobs, only)
            with open(records_path, "w", encoding="utf-8") as handle:
                json.dump([records, files], handle)
        if reused_traces is not None:
            traces = {name: reused_traces.get(name, {"eval_error": "not traced by the earlier run"}) for name in models}
        else:
            print(f"tracing {len(models)} models ...", file=sys.stderr)
            traces = trace_models(models, work, args.timeout, args.jobs)
        executed: dict[str, set[int]] = defaultdict(set)
        targets = []
        for name, trace in traces.items():
            for mode in ("eval", "train"):
                for path, lines in (trace.get(mode) or {}).items():
                    executed[path].update(lines)
            hits = fixed_lines_run(records, trace)
            if hits["eval"] or hits["train"]:
                targets.append((name, hits))
        print(f"comparing {len(targets)} models that run a fixed line ...", file=sys.stderr)
        fixed_root = os.path.join(work, "fixed")

        def run(target: tuple[str, dict]) -> dict:
            name, hits = target
            report = compare_model(name, work, fixed_root, records, args.timeout)
            report["fixed_lines_run"] = sorted(hits["eval"] | hits["train"])
            report["fixed_lines_count"] = f"{len(hits['eval'])} / {len(hits['train'])}"
            return report

        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            compared = list(pool.map(run, targets))
        rows = per_code(records, executed, compared)
        fixed_files = sum(1 for r in records.values() if r["applied"])
        page = markdown(rows, compared, traces, command, time.perf_counter() - started, found_versions,
                        files, len(records), fixed_files)
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".md", "w", encoding="utf-8") as handle:
            handle.write(page)
        with open(args.out + ".json", "w", encoding="utf-8") as handle:
            json.dump({"command": command, "versions": found_versions,
                       "records": {p: {k: v for k, v in r.items() if k != "line_map"} for p, r in records.items()},
                       "traces_failed": {n: t for n, t in traces.items() if "eval" not in t},
                       "compared": compared}, handle, indent=1, default=str)
        sys.stdout.write(page)
        return 1 if any(r.get("meaning_changed") for r in compared) else 0
    finally:
        if args.keep or args.reuse:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

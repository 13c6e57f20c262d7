"""Real-world calibration: compile-lint against the real compiler on real model libraries.

For each pinned model (transformers, timm, diffusers; tiny random-init configs, CPU, eval)
a subprocess (benchmarks/realworld_probe.py) records every graph break Dynamo logs, the
fullgraph=True verdict and the recompiles beyond automatic dynamic. This script then lints
the library files involved with compile-lint and scores the linter:

- a break location (file, line, gb_type) is *caught* when a break-kind finding sits in the
  same file on the break's line or on the line of one of the break's user-stack frames
  inside the library (the call that leads into the untraceable code);
- a break-kind finding is a *false positive* when the line it sits on ran during the eager
  call, the compiler traced the enclosing function cleanly (no break frame in it), and it
  caught no break; findings on lines that never ran are *not judged*.

Usage (from the repository root, the `realworld` extra installed):

    python benchmarks/realworld.py                # all pinned models, 2 at a time
    python benchmarks/realworld.py --limit 5      # the first five
    python benchmarks/realworld.py --models timm/resnet18,transformers/gpt2

Writes benchmarks/results/realworld.{json,md} (or --out PREFIX) and prints the summary.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

from realworld_models import ALL_MODELS, PINNED  # noqa: E402

PROBE = os.path.join(HERE, "realworld_probe.py")
DEFAULT_OUT = os.path.join(HERE, "results", "realworld")


def run_probe(name: str, timeout: float) -> dict:
    """Probe one model in its own interpreter; a crash or hang becomes a status, not an exception."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONWARNINGS="ignore",
               OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    started = time.perf_counter()
    try:
        completed = subprocess.run(
            [sys.executable, PROBE, name], capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO,
        )
    except subprocess.TimeoutExpired:
        return {"model": name, "status": "timeout", "error": f"no result within {timeout:.0f}s",
                "seconds": round(time.perf_counter() - started, 1)}
    last = completed.stdout.strip().splitlines()[-1] if completed.stdout.strip() else ""
    try:
        return json.loads(last)
    except json.JSONDecodeError:
        tail = (completed.stderr or completed.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"model": name, "status": "crash", "error": f"exit {completed.returncode}: {tail[0][:300]}",
                "seconds": round(time.perf_counter() - started, 1)}


def cached_probe(name: str, timeout: float, cache: Optional[str]) -> dict:
    """`run_probe`, reusing (and storing) the result in the folder `cache` when given."""
    if not cache:
        return run_probe(name, timeout)
    path = os.path.join(cache, name.replace("/", "__") + ".json")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    result = run_probe(name, timeout)
    os.makedirs(cache, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return result


class _FunctionSpans(ast.NodeVisitor):
    """(start, end, name) of every function in a file, innermost found last."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int, str]] = []

    def visit_FunctionDef(self, node) -> None:
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        self.spans.append((start, node.end_lineno or node.lineno, node.name))
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef


_span_cache: dict[str, list[tuple[int, int, str]]] = {}


def enclosing_function(path: str, line: int) -> Optional[tuple[int, int, str]]:
    """The innermost function of `path` whose lines hold `line`."""
    if path not in _span_cache:
        try:
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            collector = _FunctionSpans()
            collector.visit(tree)
            _span_cache[path] = collector.spans
        except (OSError, SyntaxError, ValueError):
            _span_cache[path] = []
    best = None
    for span in _span_cache[path]:
        if span[0] <= line <= span[1] and (best is None or span[0] >= best[0]):
            best = span
    return best


def lint_files(paths: Iterable[str]) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """compile-lint findings per file, as dicts: (default selection, select ALL).

    One lint under ALL; the default selection is its findings whose rule is on by default
    (the same rules `Config()` runs), so each file is parsed and analysed once.
    """
    from compile_lint.engine.api import lint_file
    from compile_lint.rules import ALL_RULES
    from compile_lint.settings.config import Config
    from compile_lint.settings.selection import rule_enabled

    default_on = {rule.code for rule in ALL_RULES if rule_enabled(rule.code, rule.default_enabled, Config())}
    every: dict[str, list[dict]] = {}
    for path in sorted(set(paths)):
        result = lint_file(path, Config(select=("ALL",)))
        every[path] = [
            {"line": d.line, "end_line": d.end_line, "code": d.code, "name": d.name, "kind": d.kind,
             "gb_type": d.gb_type, "message": d.message}
            for d in result.diagnostics
        ]
    default = {path: [f for f in items if f["code"] in default_on] for path, items in every.items()}
    return default, every


@dataclass
class Score:
    """Recall over distinct break locations, precision over judged break-kind findings."""

    breaks: list[dict]
    findings: list[dict]

    @property
    def caught(self) -> int:
        return sum(1 for b in self.breaks if b["caught_by"])

    @property
    def recall(self) -> Optional[float]:
        return self.caught / len(self.breaks) if self.breaks else None

    @property
    def true_positives(self) -> int:
        return sum(1 for f in self.findings if f["verdict"] == "true-positive")

    @property
    def false_positives(self) -> int:
        return sum(1 for f in self.findings if f["verdict"] == "false-positive")

    @property
    def precision(self) -> Optional[float]:
        judged = self.true_positives + self.false_positives
        return self.true_positives / judged if judged else None


def score(results: list[dict], findings: dict[str, list[dict]]) -> Score:
    """Match distinct break locations to findings and judge every break-kind finding."""
    breaks: dict[tuple, dict] = {}
    broken_functions: set[tuple[str, int, int]] = set()
    executed: dict[str, set[int]] = defaultdict(set)
    for result in results:
        if result.get("status") != "ok":
            continue
        root = result["library_root"]
        for path, lines in result.get("executed_lines", {}).items():
            executed[path].update(lines)
        for item in result.get("breaks", []):
            if not item["file"].startswith(root):
                continue  # a break inside torch itself, reached from library code: judged by its frames
            frames = [f for f in item["frames"] if f["file"].startswith(root)]
            if not any(f["file"] == item["file"] and f["line"] == item["line"] for f in frames):
                frames.append({"file": item["file"], "line": item["line"], "function": ""})
            key = (item["file"], item["line"], item["gb_type"])
            entry = breaks.setdefault(key, {
                "file": item["file"], "line": item["line"], "gb_type": item["gb_type"], "gb_id": item["gb_id"],
                "explanation": item["explanation"], "frames": set(), "models": set(),
            })
            entry["frames"].update((f["file"], f["line"]) for f in frames)
            entry["models"].add(result["model"])
            for path, line in entry["frames"]:
                span = enclosing_function(path, line)
                if span:
                    broken_functions.add((path, span[0], span[1]))
    # Breaks inside torch (e.g. an untraceable torch helper) still have library frames:
    for result in results:
        if result.get("status") != "ok":
            continue
        root = result["library_root"]
        for item in result.get("breaks", []):
            if item["file"].startswith(root):
                continue
            frames = [f for f in item["frames"] if f["file"].startswith(root)]
            if not frames:
                continue
            innermost = frames[-1]
            key = (innermost["file"], innermost["line"], item["gb_type"])
            entry = breaks.setdefault(key, {
                "file": innermost["file"], "line": innermost["line"], "gb_type": item["gb_type"],
                "gb_id": item["gb_id"], "explanation": item["explanation"], "frames": set(), "models": set(),
            })
            entry["frames"].update((f["file"], f["line"]) for f in frames)
            entry["models"].add(result["model"])
            for f in frames:
                span = enclosing_function(f["file"], f["line"])
                if span:
                    broken_functions.add((f["file"], span[0], span[1]))

    finding_rows = []
    for path, items in findings.items():
        for finding in items:
            if finding["kind"] != "break":
                continue
            lines = set(range(finding["line"], finding["end_line"] + 1))
            hit = [b for b in breaks.values() if any(p == path and ln in lines for p, ln in b["frames"])]
            span = enclosing_function(path, finding["line"])
            ran = bool(lines & executed.get(path, set()))
            if hit:
                verdict = "true-positive"
            elif not ran:
                verdict = "not-reached"
            elif span and (path, span[0], span[1]) in broken_functions:
                verdict = "not-judged (function has a break)"
            else:
                verdict = "false-positive"
            finding_rows.append(dict(finding, path=path, function=span[2] if span else None, verdict=verdict))
            for b in hit:
                b.setdefault("caught_by", set()).add(finding["code"])
    rows = []
    for b in breaks.values():
        rows.append({
            "file": b["file"], "line": b["line"], "gb_type": b["gb_type"], "gb_id": b["gb_id"],
            "explanation": b["explanation"], "function": (enclosing_function(b["file"], b["line"]) or (0, 0, None))[2],
            "models": sorted(b["models"]), "stack": sorted(f"{p}:{ln}" for p, ln in b["frames"]),
            "caught_by": sorted(b.get("caught_by", ())), "source": _source_line(b["file"], b["line"]),
        })
    rows.sort(key=lambda r: (bool(r["caught_by"]), -len(r["models"]), r["file"], r["line"]))
    return Score(breaks=rows, findings=finding_rows)


def _source_line(path: str, line: int) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            for number, text in enumerate(handle, 1):
                if number == line:
                    return text.strip()[:160]
    except OSError:
        pass
    return ""


def _short(path: str) -> str:
    marker = "site-packages" + os.sep
    return path.split(marker, 1)[1] if marker in path else path


def _pct(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def markdown_report(results: list[dict], scores: dict[str, Score], seconds: float, jobs: int) -> str:
    """The human-readable results file."""
    ok = [r for r in results if r.get("status") == "ok"]
    lines = [
        "# Real-world calibration: compile-lint vs torch.compile",
        "",
        f"Command: `python benchmarks/realworld.py` ({len(results)} models, {jobs} at a time, "
        f"{seconds / 60:.1f} min wall this run; "
        f"probes {sum(r.get('seconds') or 0 for r in results) / 60:.1f} min summed over "
        "models, cached probes included). Versions: "
        + ", ".join(f"{k} {v}" for k, v in PINNED.items())
        + f", torch {_torch_version()}. CPU, eval, no_grad, backend eager, tiny random-init configs.",
        "",
        "## Summary",
        "",
        "| selection | distinct break locations | caught | recall | break findings judged | true pos. | false pos. "
        "| precision |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, s in scores.items():
        judged = s.true_positives + s.false_positives
        lines.append(f"| {label} | {len(s.breaks)} | {s.caught} | {_pct(s.recall)} | {judged} | "
                     f"{s.true_positives} | {s.false_positives} | {_pct(s.precision)} |")
    fullgraph_ok = sum(1 for r in ok if r.get("fullgraph", {}).get("ok"))
    with_breaks = sum(1 for r in ok if r.get("breaks"))
    recompiling = [r for r in ok if r.get("recompiles")]
    lines += [
        "",
        f"Models measured: {len(ok)} of {len(results)} "
        "(others: " + (", ".join(sorted(r["model"] + " (" + r.get("status", "?") + ")"
                                        for r in results if r.get("status") != "ok")) or "none") + ").",
        f"fullgraph=True passes: {fullgraph_ok}/{len(ok)}; "
        f"models with at least one graph break: {with_breaks}/{len(ok)}; "
        f"models that recompile beyond automatic dynamic: {len(recompiling)}/{len(ok)}.",
        "",
    ]
    default = next(iter(scores.values()))
    by_type: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for b in default.breaks:
        by_type[b["gb_type"]][0] += 1
        by_type[b["gb_type"]][1] += 0 if b["caught_by"] else 1
    lines += ["## Break types real models hit (distinct locations), and misses", "",
              "| gb_type | locations | missed | models hitting it |", "| --- | --- | --- | --- |"]
    models_by_type: dict[str, set] = defaultdict(set)
    for b in default.breaks:
        models_by_type[b["gb_type"]].update(b["models"])
    for gb_type, (count, missed) in sorted(by_type.items(), key=lambda kv: (-kv[1][1], -kv[1][0])):
        lines.append(f"| {gb_type} | {count} | {missed} | {len(models_by_type[gb_type])} |")
    lines += ["", "## Every break location", "",
              "| caught by | gb_type | location | function | source | models |",
              "| --- | --- | --- | --- | --- | --- |"]
    for b in default.breaks:
        models = ", ".join(b["models"][:4]) + (f" +{len(b['models']) - 4}" if len(b["models"]) > 4 else "")
        lines.append(f"| {', '.join(b['caught_by']) or '**missed**'} | {b['gb_type']} | "
                     f"{_short(b['file'])}:{b['line']} | "
                     f"{b['function']} | `{b['source'].replace('|', '/')}` | {models} |")
    lines += ["", "## False positives (break findings on lines that ran in functions the compiler traced cleanly)", ""]
    fps = [f for f in default.findings if f["verdict"] == "false-positive"]
    if not fps:
        lines.append("None.")
    else:
        lines += ["| code | location | function | message |", "| --- | --- | --- | --- |"]
        for f in fps:
            lines.append(f"| {f['code']} | {_short(f['path'])}:{f['line']} | {f['function']} | "
                         f"{f['message'][:120].replace('|', '/')} |")
    verdicts = Counter(f["verdict"] for f in default.findings)
    lines += ["", "Break-kind findings by verdict: " + ", ".join(f"{k}: {v}" for k, v in sorted(verdicts.items())), ""]
    lines += ["## Recompiles beyond automatic dynamic (third call, new batch and length)", ""]
    if not recompiling:
        lines.append("None.")
    for r in recompiling:
        for rc in r["recompiles"][:3]:
            lines.append(f"- {r['model']}: {rc['function']} at {_short(rc['file'] or '')}:{rc['line']}: "
                         f"`{rc['reason'][:160]}`")
    lines += ["", "## Per model", "", "| model | status | breaks | fullgraph | recompiles | seconds |",
              "| --- | --- | --- | --- | --- | --- |"]
    for r in results:
        fg = r.get("fullgraph", {})
        lines.append(f"| {r['model']} | {r.get('status')} {r.get('error', '') or r.get('compile_error') or ''} | "
                     f"{len(r.get('breaks', []))} | "
                     f"{'pass' if fg.get('ok') else ('fail: ' + (fg.get('error') or '')[:80] if fg else '')} | "
                     f"{len(r.get('recompiles', []))} | {r.get('seconds', '')} |")
    return "\n".join(lines) + "\n"


def _torch_version() -> str:
    try:
        from importlib.metadata import version

        return version("torch")
    except Exception:
        return "?"


def _json_ready(results: list[dict]) -> list[dict]:
    """Results without the bulky executed-lines map."""
    return [{k: v for k, v in r.items() if k != "executed_lines"} for r in results]


def main(argv: Optional[list[str]] = None) -> int:
    """Run the sweep, score, print the summary and write the results files."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated library/model names (default: the pinned list)")
    parser.add_argument("--limit", type=int, help="only the first N models")
    parser.add_argument("--jobs", type=int, default=2, help="models probed at once (default 2)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per model (default 600)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="results path prefix (.json and .md are added)")
    parser.add_argument("--cache",
                        help="folder keeping each model's probe result; models already there are not run again")
    parser.add_argument("--list", action="store_true", help="print the pinned model names and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(ALL_MODELS))
        return 0
    names = [n.strip() for n in args.models.split(",") if n.strip()] if args.models else list(ALL_MODELS)
    if args.limit:
        names = names[: args.limit]
    started = time.perf_counter()
    results: dict[str, dict] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(cached_probe, name, args.timeout, args.cache): name for name in names}
        for future in concurrent.futures.as_completed(futures):
            result = future.result()
            results[result["model"]] = result
            print(f"  {result['model']}: {result.get('status')} breaks={len(result.get('breaks', []))} "
                  f"fullgraph={'pass' if result.get('fullgraph', {}).get('ok') else 'fail'} "
                  f"{result.get('seconds', '')}s {result.get('error', '')}", flush=True)
    ordered = [results[name] for name in names]
    ok = [r for r in ordered if r.get("status") == "ok"]
    files = set()
    for r in ok:
        root = r["library_root"]
        files.update(r.get("module_files", []))
        files.update(b["file"] for b in r.get("breaks", []) if b["file"].startswith(root))
        files.update(f["file"] for b in r.get("breaks", []) for f in b["frames"] if f["file"].startswith(root))
    files = {f for f in files if os.path.isfile(f)}
    lint_started = time.perf_counter()
    findings_default, findings_all = lint_files(files)
    lint_seconds = time.perf_counter() - lint_started
    scores = {"default selection": score(ok, findings_default), "select ALL": score(ok, findings_all)}
    seconds = time.perf_counter() - started
    report = markdown_report(ordered, scores, seconds, args.jobs)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".md", "w", encoding="utf-8") as handle:
        handle.write(report)
    with open(args.out + ".json", "w", encoding="utf-8") as handle:
        json.dump({
            "versions": dict(PINNED, torch=_torch_version()), "seconds": round(seconds, 1), "jobs": args.jobs,
            "lint_seconds": round(lint_seconds, 1), "files_linted": len(files),
            "scores": {label: {"recall": s.recall, "precision": s.precision, "breaks": s.breaks,
                               "findings": s.findings} for label, s in scores.items()},
            "models": _json_ready(ordered),
        }, handle, indent=1, default=sorted)
    print()
    for label, s in scores.items():
        print(f"{label}: recall {_pct(s.recall)} ({s.caught}/{len(s.breaks)} distinct break locations), "
              f"precision {_pct(s.precision)} ({s.true_positives} true, {s.false_positives} false positives)")
    print(f"models ok {len(ok)}/{len(ordered)}; {len(files)} library files linted in {lint_seconds:.1f}s; "
          f"total {seconds / 60:.1f} min")
    print(f"wrote {args.out}.md and {args.out}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

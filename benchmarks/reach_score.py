"""Score compile-lint's cross-file reach against the reach corpus's ground truth (no model runs).

    python benchmarks/reach_score.py                                   # lint, score, print the summary
    python benchmarks/reach_score.py --out benchmarks/results/reach_score   # also write .md and .json
    python benchmarks/reach_score.py --libraries whisper,kornia --label "before reach"
    python benchmarks/reach_score.py --user-projects --out benchmarks/results/reach_score_libraries
    make reach-score ARGS="--out benchmarks/results/reach_score"

The ground truth (benchmarks/results/reach_ground_truth.json, made by benchmarks/reach_run.py)
holds, per library of benchmarks/reach_catalog.py, the break sites Dynamo logged (keyed by
the file relative to the folder holding the package, and the line) with their gb_type and
user stacks, and the lines Dynamo traced in runs without a break (*clean* lines), per mode.

Each library's installed package is copied into a temporary project folder (the package
folder plus a `compile-lint.toml` with `select = ["ALL"]`) and linted there as a whole
project by this environment's compile-lint CLI (`python -m compile_lint --config
compile-lint.toml --output-format json --exit-zero --no-cache PACKAGE`). The entry points
the code alone does not show (whisper's `decode`, the k-diffusion samplers, ...: the
catalog's `lint_entry` targets, relative to the project folder) go in through `--config
'entry-points = [...]'` when, and only when, the installed compile-lint lists an
`entry-points` setting in `--show-settings`; the results say which run had them.

Verdicts are sweep_score.py's (`score`, `summary`: recall over distinct sites in a mode
the finding admits, stack recall, violations on clean lines), with one widening the issue
asks for: a break-kind finding counts for a site when its lines, widened by one line
either side, hold the site's line (recall, "±1"), or a frame of the site's library stack
(recall incl. stack). A *violation* is a break-kind finding whose first line Dynamo traced
in a clean run of a mode the finding applies to and that catches no site, even widened:
the compiler traced that line without a break, so the finding is false there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

import sweep_score  # noqa: E402

DEFAULT_TRUTH = os.path.join(HERE, "results", "reach_ground_truth.json")
SLACK = 1  # lines either side of a finding that still catch a site


def _cli() -> list[str]:
    return [sys.executable, "-m", "compile_lint"]


def knows_entry_points() -> bool:
    """Whether the installed compile-lint has the `entry-points` setting (its --show-settings lists it)."""
    with tempfile.TemporaryDirectory(prefix="reach-score-") as folder:
        completed = subprocess.run(_cli() + ["--show-settings"], cwd=folder, capture_output=True, text=True)
    return any(line.startswith("entry-points") for line in completed.stdout.splitlines())


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def lint_library(package: str, root: str, entry_points: list[str], use_entry_points: bool) -> dict:
    """compile-lint's findings on one installed package linted as a project, and how it ran."""
    with tempfile.TemporaryDirectory(prefix="reach-score-") as project:
        shutil.copytree(root, os.path.join(project, package),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
        config = os.path.join(project, "compile-lint.toml")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write("# Written by benchmarks/reach_score.py\nselect = [\"ALL\"]\n")
        command = _cli() + ["--config", "compile-lint.toml"]
        if use_entry_points and entry_points:
            command += ["--config", f"entry-points = {_toml_list(entry_points)}"]
        command += ["--output-format", "json", "--exit-zero", "--no-cache", package]
        started = time.perf_counter()
        completed = subprocess.run(command, cwd=project, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if completed.returncode not in (0, 1):
            raise SystemExit(f"compile-lint failed on {package} (exit {completed.returncode}): "
                             f"{completed.stderr.strip()[-800:]}")
        findings = json.loads(completed.stdout or "[]")
        for finding in findings:
            path = finding["path"]
            if os.path.isabs(path):
                path = os.path.relpath(path, project)
            finding["path"] = path.replace(os.sep, "/")
        shown = [part if part != command[0] else "python" for part in command]
        return {"findings": findings, "seconds": seconds,
                "command": " ".join(json.dumps(p) if " " in p else p for p in shown)}


def _widened(findings: list[dict]) -> list[dict]:
    return [dict(f, line=max(1, f["line"] - SLACK), end_line=f["end_line"] + SLACK) for f in findings]


def score_all(truth: "sweep_score.Truth", findings: list[dict], rules: dict) -> dict:
    """sweep_score.score twice: widened findings for the sites caught, exact ones for the verdicts."""
    wide = sweep_score.score(truth, _widened(findings), rules)
    exact = sweep_score.score(truth, findings, rules)
    # A widened finding ends SLACK lines after the exact one: that names it among the exact findings.
    widened_true = {(f["path"], f["end_line"] - SLACK, f["code"], f.get("message")) for f in wide["findings"]
                    if f["verdict"].startswith("true-positive")}
    rows = []
    for finding in exact["findings"]:
        verdict = finding["verdict"]
        if not verdict.startswith("true-positive") and (finding["path"], finding["end_line"], finding["code"],
                                                         finding.get("message")) in widened_true:
            verdict = "true-positive (±1)"
        rows.append(dict(finding, verdict=verdict))
    return {"sites": wide["sites"], "findings": rows, "per_code": wide["per_code"]}


def _library(path: str) -> str:
    return path.split("/", 1)[0]


def reached_from(site: dict, whole_module: dict) -> str:
    """"forward" when one of the site's entries compiles a module whole (`torch.compile(model)`:
    its forward or __call__ override), else "non-forward" (reached only through a compiled
    method, a library function or a user's step). `whole_module` maps (unit, entry) to the
    catalog's flag; a pair the catalog lacks counts by its name."""
    for unit in site.get("units", []):
        for entry in site.get("entries", []):
            if whole_module.get((unit, entry), entry == "forward" and (unit, entry) not in whole_module):
                return "forward"
    return "non-forward"


def catalog_whole_module() -> dict:
    """(unit key, entry name) -> whether the entry compiles the module whole, from reach_catalog.py."""
    import reach_catalog

    return {(unit.key, entry.name): entry.whole_module for unit in reach_catalog.units() for entry in unit.entries}


def tables(truth, result: dict, libraries: dict, whole_module: Optional[dict] = None) -> dict:
    """Per library, per gb_type, per way of being reached (forward / non-forward entries) and
    overall: sites, caught (±1), with stack, break findings, violations."""
    def empty():
        return Counter()

    by_library: dict[str, Counter] = defaultdict(empty)
    by_type: dict[str, Counter] = defaultdict(empty)
    by_reach: dict[str, Counter] = defaultdict(empty)
    for site in result["sites"]:
        reach = site["reached_from"] = reached_from(site, whole_module or {})
        rows = (by_library[_library(site["file"])], by_type[site["gb_type"]], by_reach[reach],
                by_reach[f"{_library(site['file'])}: {reach}"])
        for row in rows:
            row["sites"] += 1
            row["caught"] += bool(site["caught_by"])
            row["caught_with_stack"] += bool(site["caught_by"] or site["caught_by_stack"])
            row["fullgraph_only_sites"] += bool(site.get("fullgraph_only"))
    for finding in result["findings"]:
        if finding["kind"] != "break":
            continue
        row = by_library[_library(finding["path"])]
        row["break_findings"] += 1
        row["violations"] += finding["verdict"].startswith("violation")
        row["true_positive"] += finding["verdict"].startswith("true-positive")
    for package in libraries:
        by_library.setdefault(package, empty())
    counts = truth.data["meta"]["counts"].get("by_library", {})
    for package, row in by_library.items():
        info = counts.get(package, {})
        row["clean_lines_eval"] = info.get("clean_lines_eval", 0)
        row["clean_lines_train"] = info.get("clean_lines_train", 0)
        row["runs_ok"] = info.get("runs_ok", 0)
    total = Counter()
    for row in by_library.values():
        total.update(row)
    return {"by_library": {k: dict(v) for k, v in sorted(by_library.items())},
            "by_reach": {k: dict(v) for k, v in sorted(by_reach.items())},
            "by_gb_type": {k: dict(v) for k, v in sorted(by_type.items(), key=lambda kv: (-kv[1]["sites"], kv[0]))},
            "total": dict(total)}


def _ratio(caught, sites) -> str:
    return f"{caught / sites:.2f}" if sites else "n/a"


def _source(root_of: dict, path: str, line: int) -> str:
    package, _, rest = path.partition("/")
    root = root_of.get(package)
    if not root:
        return ""
    try:
        with open(os.path.join(root, rest), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return ""
    return lines[line - 1].strip()[:120].replace("|", "/") if 0 < line <= len(lines) else ""


def markdown(truth, result, summary, lint_runs, environment, label, command, root_of) -> str:
    meta = truth.data["meta"]
    libraries = meta.get("libraries", {})
    dist_of = {package: dist for dist, package in _packages(libraries).items()}
    total = summary["total"]
    out = [
        f"# compile-lint against the reach corpus ({label})",
        "",
        f"Command: `{command}`. compile-lint {environment['compile_lint']} "
        f"(commit {environment['commit']}), torch {environment['torch']}, Python {environment['python']}, "
        f"{environment['machine']}, {environment['cpus']} cores. "
        f"`entry-points` passed: **{'yes' if environment['entry_points_passed'] else 'no'}** "
        f"(the installed compile-lint has {'the' if environment['entry_points_known'] else 'no entry-points'} "
        "setting).",
        "",
        "Ground truth: `benchmarks/results/reach_ground_truth.json` (benchmarks/README.md, \"Reach corpus\"), "
        "made on torch " + ", ".join(sorted({(s.get('environment') or {}).get('torch', '?')
                                              for s in meta.get('sources', {}).values()})) + ". "
        "Verdicts: benchmarks/reach_score.py's docstring.",
        "",
        *measured_section(truth),
        "## Summary",
        "",
        f"Recall (a break-kind finding on the site's line ±{SLACK}): "
        f"**{total.get('caught', 0)}/{total.get('sites', 0)} = "
        f"{_ratio(total.get('caught', 0), total.get('sites', 0))}**; incl. a finding on a frame of the site's stack: "
        f"{total.get('caught_with_stack', 0)}/{total.get('sites', 0)} = "
        f"{_ratio(total.get('caught_with_stack', 0), total.get('sites', 0))}. "
        f"Break findings on clean traced lines (violations): **{total.get('violations', 0)}** "
        f"of {total.get('break_findings', 0)} break findings.",
        "",
        "| library | version | runs | break sites (fullgraph-only) | caught ±1 | recall | recall incl. stack | "
        "clean traced lines eval / train | break findings | violations | lint s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for package, row in summary["by_library"].items():
        dist = dist_of.get(package, package)
        out.append(f"| {package} | {dist} {libraries.get(dist, '?')} | {row.get('runs_ok', 0)} | "
                   f"{row.get('sites', 0)} ({row.get('fullgraph_only_sites', 0)}) | {row.get('caught', 0)} | "
                   f"{_ratio(row.get('caught', 0), row.get('sites', 0))} | "
                   f"{_ratio(row.get('caught_with_stack', 0), row.get('sites', 0))} | "
                   f"{row.get('clean_lines_eval', 0)} / {row.get('clean_lines_train', 0)} | "
                   f"{row.get('break_findings', 0)} | {row.get('violations', 0)} | "
                   f"{lint_runs.get(package, {}).get('seconds', 0):.1f} |")
    out += ["", "## Break sites by how they are reached", "",
            "*forward*: one of the site's entries is `torch.compile(model)` (the module's forward or its `__call__` "
            "override); *non-forward*: reached only through a compiled method, a library function compiled in a "
            "closure, or a user's compiled step (benchmarks/reach_score.py `reached_from`).", "",
            "| reached from | sites | caught ±1 | recall | caught incl. stack |", "| --- | ---: | ---: | ---: | ---: |"]
    for reach, row in summary["by_reach"].items():
        out.append(f"| {reach} | {row['sites']} | {row['caught']} | {_ratio(row['caught'], row['sites'])} | "
                   f"{row['caught_with_stack']} |")
    out += ["", "## Break sites by gb_type", "", "| gb_type | sites | caught ±1 | caught incl. stack |",
            "| --- | ---: | ---: | ---: |"]
    for gb_type, row in summary["by_gb_type"].items():
        out.append(f"| {gb_type[:110].replace('|', '/')} | {row['sites']} | {row['caught']} | "
                   f"{row['caught_with_stack']} |")
    missed = [s for s in result["sites"] if not s["caught_by"]]
    out += ["", f"## Missed break sites ({len(missed)})", "",
            "The site is the innermost frame of the break's user stack in the library; *stack* is the library's "
            "frames, outermost first (the entry's frame first). Full user stacks (torch frames too) are in the "
            "ground truth's `user_stacks`.", "",
            "| gb_type | site | source | modes | configs | reached from | entries (units) | stack | stack hit by |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for site in sorted(missed, key=lambda s: (s["file"], s["line"])):
        units = ", ".join(u.split("/", 1)[1] for u in site.get("units", [])[:3])
        out.append(f"| {site['gb_type'][:70].replace('|', '/')} | {site['file']}:{site['line']} | "
                   f"`{_source(root_of, site['file'], site['line'])}` | {','.join(site['modes'])} | "
                   f"{','.join(site.get('configs', []))} | {site['reached_from']} | "
                   f"{','.join(site.get('entries', []))} ({units}) | "
                   f"{' > '.join(site.get('stack') or [])} | {', '.join(site['caught_by_stack']) or '-'} |")
    violations = [f for f in result["findings"] if f["verdict"].startswith("violation")]
    out += ["", f"## Break findings on clean traced lines ({len(violations)})", ""]
    if violations:
        out += ["| code | location | mode | source |", "| --- | --- | --- | --- |"]
        for finding in sorted(violations, key=lambda f: (f["path"], f["line"], f["code"])):
            out.append(f"| {finding['code']} | {finding['path']}:{finding['line']} | {finding.get('mode') or 'both'} | "
                       f"`{_source(root_of, finding['path'], finding['line'])}` |")
    caught = [s for s in result["sites"] if s["caught_by"]]
    if caught:
        out += ["", f"## Caught break sites ({len(caught)})", "",
                "| gb_type | site | caught by |", "| --- | --- | --- |"]
        for site in sorted(caught, key=lambda s: (s["file"], s["line"])):
            out.append(f"| {site['gb_type'][:70]} | {site['file']}:{site['line']} | {', '.join(site['caught_by'])} |")
    out += ["", "## Lint commands (run in a temporary copy of each package)", ""]
    for package, run in lint_runs.items():
        out.append(f"- {package}: `{run['command']}`")
    return "\n".join(out) + "\n"


def measured_section(truth) -> list[str]:
    """How the ground truth was made: each raw file's machine, torch, arguments and time."""
    out = ["## How the ground truth was measured", "",
           "1. `python benchmarks/reach_run.py --out DIR ...` (benchmarks/reach_catalog.py's units, probed by "
           "benchmarks/sweep_probe.py's code), one raw file per row:", "",
           "| raw file | machine | torch | Python | runs | seconds | arguments |",
           "| --- | --- | --- | --- | ---: | ---: | --- |"]
    runs = Counter()
    for run in truth.data.get("runs", []):
        runs[run["run"].split("/", 1)[0]] += run.get("status") == "ok"
    for name, info in sorted(truth.data["meta"].get("sources", {}).items()):
        env = info.get("environment", {})
        library = name.split("/", 1)[0]
        out.append(f"| {name} | {env.get('machine', '?')}, {env.get('cpus', '?')} cores | {env.get('torch', '?')} | "
                   f"{env.get('python', '?')} | {runs.get(library, '?')} | {info.get('seconds', '?')} | "
                   f"`{' '.join(info.get('argv', []))}` |")
    out += ["", "2. `python benchmarks/reach_run.py --truth " + " ".join(
        "benchmarks/results/reach_raw/" + name for name in sorted(truth.data["meta"].get("sources", {})))
        + "` -> `benchmarks/results/reach_ground_truth.json`.", ""]
    return out


def _packages(libraries: dict) -> dict:
    import reach_catalog

    return {dist: reach_catalog.LIBRARIES[dist][1] for dist in libraries if dist in reach_catalog.LIBRARIES}


def _environment(entry_points_known: bool, entry_points_passed: bool) -> dict:
    import importlib.metadata

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    branch = subprocess.run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=REPO, capture_output=True, text=True)
    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = "?"
    try:
        version = importlib.metadata.version("compile-lint")
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    return {"compile_lint": version, "commit": f"{commit.stdout.strip()} on {branch.stdout.strip()}",
            "torch": torch_version, "python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "entry_points_known": entry_points_known,
            "entry_points_passed": entry_points_passed}


def _rules() -> dict:
    try:
        return sweep_score.rule_table()
    except Exception:  # another layout of compile-lint: the findings' own kinds and gb types do
        return {}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--truth", default=DEFAULT_TRUTH)
    parser.add_argument("--libraries", help="comma-separated import packages (default: every library of the truth)")
    parser.add_argument("--no-entry-points", action="store_true",
                        help="do not pass the catalog's entry points even when compile-lint knows the setting")
    parser.add_argument("--label", help="what this run is, in the results' title (default: from the settings)")
    parser.add_argument("--out", help="write PREFIX.md and PREFIX.json")
    parser.add_argument("--user-projects", action="store_true",
                        help="lint the user projects of benchmarks/reach_users/ (the libraries installed) and count "
                             "the library sites reached from the user's calls (benchmarks/reach_library_score.py)")
    args = parser.parse_args(argv)
    import reach_catalog

    truth = sweep_score.Truth(args.truth)
    if args.user_projects:
        import reach_library_score

        command = "python benchmarks/reach_score.py " + shlex.join(argv if argv is not None else sys.argv[1:])
        return reach_library_score.main(args, truth, _rules(), score_all, _environment(False, False), command.strip())
    present = sorted({_library(s["file"]) for s in truth.sites}
                     | {_library(p) for m in truth.data.get("clean", {}).values() for p in m})
    packages = args.libraries.split(",") if args.libraries else present
    truth.sites = [s for s in truth.sites if _library(s["file"]) in packages]
    known = knows_entry_points()
    passed = known and not args.no_entry_points
    findings, lint_runs, root_of = [], {}, {}
    for package in packages:
        root_of[package] = root = reach_catalog.package_root(package)
        run = lint_library(package, root, truth.data["meta"].get("entry_points", {}).get(package, []), passed)
        lint_runs[package] = {k: v for k, v in run.items() if k != "findings"}
        findings.extend(run["findings"])
        print(f"{package}: {len(run['findings'])} findings in {run['seconds']:.1f} s", file=sys.stderr)
    result = score_all(truth, findings, _rules())
    summary = tables(truth, result, packages, catalog_whole_module())
    environment = _environment(known, passed)
    label = args.label or ("with entry-points" if passed else "no entry-points")
    total = summary["total"]
    print(f"recall ±{SLACK}: {total.get('caught', 0)}/{total.get('sites', 0)} "
          f"({_ratio(total.get('caught', 0), total.get('sites', 0))}), incl. stack "
          f"{total.get('caught_with_stack', 0)} ({_ratio(total.get('caught_with_stack', 0), total.get('sites', 0))}); "
          f"violations on clean traced lines: {total.get('violations', 0)} of {total.get('break_findings', 0)} "
          f"break findings; entry-points passed: {passed}")
    for reach in ("forward", "non-forward"):
        row = summary["by_reach"].get(reach, {})
        print(f"  reached from {reach}: {row.get('caught', 0)}/{row.get('sites', 0)} "
              f"({_ratio(row.get('caught', 0), row.get('sites', 0))})")
    for package, row in summary["by_library"].items():
        print(f"  {package:30} sites {row.get('sites', 0):3}  caught {row.get('caught', 0):3}  "
              f"stack {row.get('caught_with_stack', 0):3}  violations {row.get('violations', 0):3}")
    if args.out:
        command = "python benchmarks/reach_score.py " + shlex.join(argv if argv is not None else sys.argv[1:])
        with open(args.out + ".md", "w", encoding="utf-8") as handle:
            handle.write(markdown(truth, result, summary, lint_runs, environment, label, command.strip(), root_of))
        with open(args.out + ".json", "w", encoding="utf-8") as handle:
            json.dump({"label": label, "environment": environment, "summary": summary, "lint": lint_runs,
                       "sites": result["sites"],
                       "findings": [f for f in result["findings"] if f["kind"] == "break"
                                    and f["verdict"] != "undecided (not reached)"]},
                      handle, indent=0)
        print(f"wrote {args.out}.md and {args.out}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

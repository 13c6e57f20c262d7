"""Score compile-lint against the sweep's ground truth, without running any model.

    python benchmarks/sweep_score.py                          # lint the sources, print the table
    python benchmarks/sweep_score.py --out benchmarks/results/sweep_score   # also write .md and .json
    python benchmarks/sweep_score.py --codes JIT101,JIT201    # only these rules' rows and lists

It lints the library files the ground truth names (benchmarks/results/sweep_ground_truth.json,
made by benchmarks/sweep_truth.py from benchmarks/sweep_run.py's measurements) with the
compile-lint CLI of this checkout (`--select ALL --output-format json`), in the unpacked
sources of the measured versions (`--sources`, default /work/scratch/rw when it exists,
else the installed packages), and matches findings to what the compiler did:

- **recall** over distinct break sites (file, line; a site lists every gb_type logged there).
  Sites only an older torch logged, which the newest torch's default compile of the same
  runs does not hit (`reproduced_on_newest_torch: false`), are listed, not counted. A site is *caught* when a
  break-kind finding in the same file spans the site's line (finding line <= site line <=
  finding end line), and the finding's mode (JSON field `mode`: "training" / "inference",
  absent or null = both) admits one of the modes the site broke in. The site is where
  Dynamo reports the break in library code, else the innermost library frame that called
  into the untraceable torch code; both are the line a user must change. *Stack recall*
  also accepts a finding on an outer library frame of the break's user stack (the call
  that leads to it): reported, never the headline.
- **precision** is judged only where the compiler is certain. A break-kind finding is a
  *violation* (a certain false positive) when its first line was traced by Dynamo in a run
  whose default compile (fullgraph=False) logged no graph break (*default-clean*), in a mode
  the finding applies to, and it catches no site (strict or stack). For runs whose default
  compile was not measured, a line traced by a successful `fullgraph=True` compile
  (*fullgraph-clean*) counts too, unless the finding predicts a break type fullgraph=True
  captures as an unbacked value (`.item()`, data-dependent shapes: "undecided"). The first line is
  where the flagged expression or
  statement starts; Python's line table attributes its first instructions there, so the
  `trace_source` log names that line whenever Dynamo evaluated it. A finding that catches
  a site is a *true positive* (counted as "context-dependent" when its line was also traced
  cleanly by another run: the same code breaks in one model and not in another).
  Everything else is *undecided*: reached (ran eagerly, or traced in a breaking run) or
  not reached. precision = true positives / (true positives + violations).
- recompile-kind and perf-kind findings are listed per code, not scored: the sweep varies
  only batch and length, so a run without recompiles does not clear them.

The default selection's numbers are the subset of findings whose rule is on by default.
Lint results are cached under benchmarks/.cache/sweep-lint (keyed by file content and the
linter's own code, so a rule change re-lints); `--no-cache` lints afresh.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

from sweep_probe import from_ranges  # noqa: E402

DEFAULT_TRUTH = os.path.join(HERE, "results", "sweep_ground_truth.json")
SCRATCH_SOURCES = "/work/scratch/rw"
CACHE_DIR = os.path.join(HERE, ".cache", "sweep-lint")
MODE_OF_FINDING = {"training": ("train",), "inference": ("eval",)}


def default_sources() -> str:
    """The unpacked library sources when present, else the installed packages' folder."""
    if os.path.isdir(os.path.join(SCRATCH_SOURCES, "transformers")):
        return SCRATCH_SOURCES
    import importlib.util

    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.origin:
        raise SystemExit("no sources: pass --sources DIR (a folder holding transformers/, timm/, diffusers/)")
    return os.path.dirname(os.path.dirname(spec.origin))


class Truth:
    """The ground truth file, with line sets parsed lazily."""

    def __init__(self, path_or_data):
        """Read the truth from a path, or take an already built document (sweep_truth.build_truth)."""
        if isinstance(path_or_data, dict):
            self.data = path_or_data
        else:
            with open(path_or_data, encoding="utf-8") as handle:
                self.data = json.load(handle)
        # Sites an older torch logged that torch 2.13 (compile-lint's calibration) traces
        # cleanly in the same runs are listed, not counted.
        self.sites = [s for s in self.data["sites"] if s.get("reproduced_on_newest_torch") is not False]
        self.older_only = [s for s in self.data["sites"] if s.get("reproduced_on_newest_torch") is False]
        self._cache: dict[tuple, set[int]] = {}

    def lines(self, kind: str, mode: str, path: str) -> set[int]:
        key = (kind, mode, path)
        if key not in self._cache:
            self._cache[key] = from_ranges(self.data.get(kind, {}).get(mode, {}).get(path, ""))
        return self._cache[key]

    @property
    def lenient(self) -> set[str]:
        """Break types fullgraph=True captures where the default compile breaks."""
        return set(self.data["meta"].get("fullgraph_lenient_gb_types", ()))

    def files(self) -> list[str]:
        names = {site["file"] for site in self.sites}
        for kind in ("clean", "fullgraph_clean", "executed", "traced_in_breaking_runs"):
            for mode_files in self.data.get(kind, {}).values():
                names.update(mode_files)
        return sorted(names)


def lint(files: list[str], sources: str, jobs: int, use_cache: bool) -> tuple[list[dict], float, list[str]]:
    """compile-lint's JSON findings on `files` (paths relative to `sources`), the seconds it took."""
    present = [f for f in files if os.path.isfile(os.path.join(sources, f))]
    missing = sorted(set(files) - set(present))
    command = [sys.executable, "-m", "compile_lint", "--select", "ALL", "--output-format", "json", "--exit-zero",
               "--jobs", str(jobs)]
    if use_cache:
        os.makedirs(CACHE_DIR, exist_ok=True)
        config = os.path.join(CACHE_DIR, "compile-lint.toml")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write("# Written by benchmarks/sweep_score.py: puts the lint cache in this folder.\n"
                         "select = [\"ALL\"]\n")
        command += ["--config", config]
    else:
        command.append("--no-cache")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    started = time.perf_counter()
    completed = subprocess.run(command + present, cwd=sources, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        raise SystemExit(f"compile-lint failed (exit {completed.returncode}): {completed.stderr.strip()[-500:]}")
    return json.loads(completed.stdout or "[]"), seconds, missing


def rule_table() -> dict[str, dict]:
    """code -> name, kind, gb types and default state, from this checkout's rules."""
    from compile_lint.rules import ALL_RULES
    from compile_lint.settings.config import Config
    from compile_lint.settings.selection import rule_enabled

    table = {}
    for rule in ALL_RULES:
        gb_types = set(getattr(rule, "gb_types", None) or ())
        if getattr(rule, "gb_type", None):
            gb_types.add(rule.gb_type)
        table[rule.code] = {"name": rule.name, "kind": rule.kind, "gb_types": sorted(gb_types),
                            "default": rule_enabled(rule.code, rule.default_enabled, Config())}
    return table


def finding_modes(finding: dict) -> tuple[str, ...]:
    """The sweep modes a finding applies to (its `mode` field, when the linter gives one)."""
    return MODE_OF_FINDING.get(finding.get("mode") or "", ("eval", "train"))


def score(truth: Truth, findings: list[dict], rules: dict[str, dict], codes: Optional[set[str]] = None) -> dict:
    """Match findings to sites and clean lines; per-code and overall numbers (module docstring)."""
    by_file: dict[str, list[dict]] = defaultdict(list)
    for finding in findings:
        if codes and finding["code"] not in codes:
            continue
        by_file[finding["path"].replace(os.sep, "/")].append(finding)
    site_rows = []
    stack_lines: dict[str, set[int]] = defaultdict(set)
    for site in truth.sites:
        for frame in site.get("stack") or []:
            path, _, line = frame.rpartition(":")
            stack_lines[path].add(int(line))
    verdicts: dict[int, str] = {}
    context_dependent: set[int] = set()
    caught_strict: dict[int, set[str]] = defaultdict(set)
    caught_stack: dict[int, set[str]] = defaultdict(set)
    for index, site in enumerate(truth.sites):
        modes = set(site["modes"])
        for finding in by_file.get(site["file"], ()):
            if finding["kind"] != "break" or not modes & set(finding_modes(finding)):
                continue
            if finding["line"] <= site["line"] <= finding["end_line"]:
                caught_strict[index].add(finding["code"])
                verdicts[id(finding)] = "true-positive"
        for frame in site.get("stack") or []:
            path, _, line = frame.rpartition(":")
            for finding in by_file.get(path, ()):
                if finding["kind"] == "break" and finding["line"] <= int(line) <= finding["end_line"] \
                        and modes & set(finding_modes(finding)):
                    caught_stack[index].add(finding["code"])
                    verdicts.setdefault(id(finding), "true-positive (stack)")
    lenient = truth.lenient
    for path, items in by_file.items():
        for finding in items:
            if finding["kind"] != "break":
                continue
            modes = finding_modes(finding)
            clean = any(finding["line"] in truth.lines("clean", m, path) for m in modes)
            fullgraph_clean = any(finding["line"] in truth.lines("fullgraph_clean", m, path) for m in modes)
            predicted = set(rules.get(finding["code"], {}).get("gb_types", ())) | {finding.get("gb_type")} - {None}
            if id(finding) in verdicts:
                if clean or fullgraph_clean:
                    context_dependent.add(id(finding))
                continue
            if clean:
                verdicts[id(finding)] = "violation"
            elif fullgraph_clean and not predicted & lenient:
                verdicts[id(finding)] = "violation (fullgraph-clean)"
            elif fullgraph_clean:
                verdicts[id(finding)] = "undecided (fullgraph-clean, unbacked type)"
            elif any(finding["line"] in truth.lines(kind, m, path)
                     for kind in ("executed", "traced_in_breaking_runs") for m in modes):
                verdicts[id(finding)] = "undecided (reached)"
            else:
                verdicts[id(finding)] = "undecided (not reached)"
    for index, site in enumerate(truth.sites):
        site_rows.append(dict(site, caught_by=sorted(caught_strict.get(index, ())),
                              caught_by_stack=sorted(caught_stack.get(index, set()) - caught_strict.get(index, set()))))
    per_code = _per_code(truth, by_file, verdicts, context_dependent, site_rows, rules, codes)
    return {"sites": site_rows, "per_code": per_code,
            "findings": [dict(_short_finding(f), verdict=verdicts.get(id(f), "not judged"),
                              context_dependent=id(f) in context_dependent)
                         for items in by_file.values() for f in items]}


def _short_finding(finding: dict) -> dict:
    return {k: finding.get(k) for k in ("path", "line", "end_line", "code", "name", "kind", "mode", "message")}


def _per_code(truth, by_file, verdicts, context_dependent, site_rows, rules, codes=None) -> dict[str, dict]:
    # Every break rule gets a row, with or without findings: a rule that finds nothing here
    # is a result too (its gb types' sites are what it would have to catch).
    rows: dict[str, Counter] = {code: Counter() for code, meta in rules.items()
                                if meta["kind"] == "break" and (not codes or code in codes)}
    for items in by_file.values():
        for finding in items:
            row = rows.setdefault(finding["code"], Counter())
            row["findings"] += 1
            row[verdicts.get(id(finding), "not judged")] += 1
            row["context-dependent"] += id(finding) in context_dependent
    result = {}
    for code, counts in sorted(rows.items()):
        meta = rules.get(code, {"name": "?", "kind": "?", "gb_types": [], "default": False})
        true_positive = counts["true-positive"] + counts["true-positive (stack)"]
        violations = counts["violation"] + counts["violation (fullgraph-clean)"]
        judged = true_positive + violations
        own_sites = [s for s in site_rows if set(s.get("gb_types") or [s["gb_type"]]) & set(meta["gb_types"])]
        result[code] = dict(
            meta, findings=counts["findings"], true_positive=counts["true-positive"],
            true_positive_stack=counts["true-positive (stack)"], violations=violations,
            violations_default_clean=counts["violation"],
            violations_fullgraph_clean=counts["violation (fullgraph-clean)"],
            context_dependent=counts["context-dependent"], reached=counts["undecided (reached)"],
            fullgraph_clean_unbacked=counts["undecided (fullgraph-clean, unbacked type)"],
            not_reached=counts["undecided (not reached)"],
            precision=round(true_positive / judged, 3) if judged else None,
            sites_caught=sum(1 for s in site_rows if code in s["caught_by"]),
            own_gb_sites=len(own_sites),
            own_gb_caught=sum(1 for s in own_sites if code in s["caught_by"]),
        )
    return result


def summary(result: dict, rules: dict, default_only: bool) -> dict:
    """Headline numbers over all rules or over the default selection."""
    allowed = {code for code, meta in rules.items() if meta["default"]} if default_only else None
    sites = result["sites"]

    def keep(codes):
        return [c for c in codes if allowed is None or c in allowed]

    caught = sum(1 for s in sites if keep(s["caught_by"]))
    stack = sum(1 for s in sites if keep(s["caught_by"]) or keep(s["caught_by_stack"]))
    findings = [f for f in result["findings"] if f["kind"] == "break" and (allowed is None or f["code"] in allowed)]
    verdicts = Counter(f["verdict"] for f in findings)
    true_positive = verdicts["true-positive"] + verdicts["true-positive (stack)"]
    violations = verdicts["violation"] + verdicts["violation (fullgraph-clean)"]
    judged = true_positive + violations
    by_mode = {}
    for mode in ("eval", "train"):
        mode_sites = [s for s in sites if mode in s["modes"]]
        by_mode[mode] = {"sites": len(mode_sites), "caught": sum(1 for s in mode_sites if keep(s["caught_by"]))}
    return {
        "sites": len(sites), "caught": caught, "recall": round(caught / len(sites), 3) if sites else None,
        "caught_with_stack": stack, "recall_with_stack": round(stack / len(sites), 3) if sites else None,
        "by_mode": by_mode, "break_findings": len(findings), "true_positive": true_positive,
        "violations": violations, "violations_default_clean": verdicts["violation"],
        "violations_fullgraph_clean": verdicts["violation (fullgraph-clean)"],
        "precision": round(true_positive / judged, 3) if judged else None,
        "precision_default_clean_only": round(true_positive / (true_positive + verdicts["violation"]), 3)
        if true_positive + verdicts["violation"] else None,
        "undecided_reached": verdicts["undecided (reached)"],
        "undecided_fullgraph_clean_unbacked": verdicts["undecided (fullgraph-clean, unbacked type)"],
        "not_reached": verdicts["undecided (not reached)"],
    }


def _source(sources: str, path: str, line: int, cache: dict) -> str:
    if path not in cache:
        try:
            with open(os.path.join(sources, path), encoding="utf-8") as handle:
                cache[path] = handle.read().splitlines()
        except OSError:
            cache[path] = []
    lines = cache[path]
    return lines[line - 1].strip()[:140].replace("|", "/") if 0 < line <= len(lines) else ""


def _pct(value) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def method_section(truth: Truth) -> list[str]:
    """How the ground truth was measured: the chain's commands and each source's machine and versions."""
    out = [
        "## How it was measured",
        "",
        "1. Catalog and probe: `benchmarks/sweep_catalog.py` (the units and their variants) and "
        "`benchmarks/sweep_probe.py` (one run: eager lines, default compile with the graph-break and "
        "`trace_source` logs, fullgraph=True verdict, recompiles), CPU, backend \"eager\"; both are driven by:",
        "2. Run: `python benchmarks/sweep_run.py --out DIR ...` (on the device machine: "
        "`bash benchmarks/sweep_device.sh`), one source per row below, with its arguments:",
        "",
        "| raw file | machine | torch | Python | runs | arguments |",
        "| --- | --- | --- | --- | ---: | --- |",
    ]
    for name, info in sorted(truth.data["meta"].get("sources", {}).items()):
        env, stats = info.get("environment", {}), info.get("stats", {})
        out.append(f"| {name} | {env.get('machine', '?')}, {env.get('cpus', '?')} cores | {env.get('torch', '?')} | "
                   f"{env.get('python', '?')} | {stats.get('variants', '?')} | `{' '.join(info.get('argv', []))}` |")
    out += [
        "",
        "16 cores: the `device` machine (an H200 host; the sweep uses its CPU only). 2 cores: the development "
        "machine, re-measuring on torch 2.13 the default compile of runs the H200 saw pass fullgraph=True "
        "(the `--variants-file` lists are committed as `benchmarks/results/sweep_local213_*_runs.tsv`).",
        "",
        "3. Truth: `python benchmarks/sweep_truth.py " + " ".join(
            "benchmarks/results/" + name for name in sorted(truth.data["meta"].get("sources", {})))
        + "` -> `benchmarks/results/sweep_ground_truth.json`.",
        "4. Score (this file): `python benchmarks/sweep_score.py --out benchmarks/results/sweep_score` "
        "(`make sweep-score`), which lints the truth's files of transformers 5.23.0, timm 1.0.31 and "
        "diffusers 0.42.1 with this checkout's compile-lint and runs no model.",
        "",
        "A *violation* is a break-kind finding on a line Dynamo traced in a run whose default compile "
        "(fullgraph=False) logged no graph break, in that run's mode (eval or train) and a mode the finding "
        "applies to, that catches no break site: the compiler traced that line cleanly, so the finding is "
        "certainly false there. For runs whose default compile only torch 2.11 measured (fullgraph=True "
        "first), a line traced by a successful fullgraph=True compile counts too, unless the finding predicts "
        "a break type fullgraph=True captures as an unbacked value (Summary). A *true positive* spans a break "
        "site's line (or a frame of its stack).",
        "",
    ]
    return out


def markdown(truth: Truth, result: dict, totals: dict, rules: dict, sources: str, lint_seconds: float,
             command: str) -> str:
    """The results file: summary, per-code table, per gb_type, misses, violations."""
    counts = truth.data["meta"]["counts"]
    text_cache: dict = {}
    out = [
        "# compile-lint against the architecture sweep's ground truth",
        "",
        f"Command: `{command}` (lint {lint_seconds:.0f} s). Ground truth: "
        f"`benchmarks/results/sweep_ground_truth.json` ({counts['runs']} runs of {counts['units_measured']} "
        f"architectures, {counts['sites']} distinct break sites, {counts['files']} library files). "
        "How it is made: benchmarks/README.md, \"Architecture sweep\"; every verdict is defined in "
        "benchmarks/sweep_score.py's docstring.",
        "",
        *method_section(truth),
        "## Summary",
        "",
        "Violations: break findings on a line Dynamo traced in a run whose default compile logged no break "
        "(*default-clean*, torch 2.13) or, for runs whose default compile was not re-measured, whose "
        "fullgraph=True compile succeeded (*fullgraph-clean*, torch 2.11) when the finding predicts a break type "
        "fullgraph=True does not capture as an unbacked value.",
        "",
        "| selection | break sites | caught | recall | recall incl. stack | eval sites caught | train sites caught | "
        "break findings | true pos. | violations (default-clean + fullgraph-clean) | precision | "
        "undecided: reached / fullgraph-clean unbacked type / not reached |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, t in totals.items():
        out.append(f"| {label} | {t['sites']} | {t['caught']} | {_pct(t['recall'])} | {_pct(t['recall_with_stack'])} | "
                   f"{t['by_mode']['eval']['caught']}/{t['by_mode']['eval']['sites']} | "
                   f"{t['by_mode']['train']['caught']}/{t['by_mode']['train']['sites']} | {t['break_findings']} | "
                   f"{t['true_positive']} | {t['violations']} ({t['violations_default_clean']} + "
                   f"{t['violations_fullgraph_clean']}) | {_pct(t['precision'])} | {t['undecided_reached']} / "
                   f"{t['undecided_fullgraph_clean_unbacked']} / {t['not_reached']} |")
    out += ["", "## Per code", "",
            "true pos.: the finding's lines hold a break site (line) or a frame of a break's stack (stack); "
            "precision = true positives / (true positives + violations); recall (own gb types) = sites of the "
            "gb types the rule predicts that it catches / all such sites.", "",
            "| code | name | kind | default | findings | true pos. (line) | true pos. (stack) | violations | "
            "context-dep. | undecided reached | fullgraph-clean, unbacked type | not reached | precision | "
            "sites caught | recall (own gb types) | gb types the rule predicts |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for code, row in result["per_code"].items():
        own = f"{row['own_gb_caught']}/{row['own_gb_sites']}" if row["own_gb_sites"] else "-"
        state = "on" if row["default"] else "off"
        out.append(f"| {code} | {row['name']} | {row['kind']} | {state} | {row['findings']} | "
                   f"{row['true_positive']} | {row['true_positive_stack']} | {row['violations']} | "
                   f"{row['context_dependent']} | {row['reached']} | {row['fullgraph_clean_unbacked']} | "
                   f"{row['not_reached']} | {_pct(row['precision'])} | {row['sites_caught']} | {own} | "
                   f"{'; '.join(row['gb_types']).replace('|', '/') or '-'} |")
    by_type: dict[str, list] = defaultdict(lambda: [0, 0, 0])
    for site in result["sites"]:
        by_type[site["gb_type"]][0] += 1
        by_type[site["gb_type"]][1] += bool(site["caught_by"])
        by_type[site["gb_type"]][2] += bool(site["caught_by"] or site["caught_by_stack"])
    out += ["", "## Break sites by gb_type", "", "| gb_type | sites | caught | caught incl. stack |",
            "| --- | --- | --- | --- |"]
    for gb_type, (count, caught, stack) in sorted(by_type.items(), key=lambda kv: (-(kv[1][0] - kv[1][1]), kv[0])):
        out.append(f"| {gb_type[:110]} | {count} | {caught} | {stack} |")
    if truth.older_only:
        out += ["", f"Not counted: {len(truth.older_only)} sites torch 2.11 logged that torch 2.13 traces cleanly in "
                "the same runs: " + ", ".join(f"{s['file']}:{s['line']} ({s['gb_type']})" for s in truth.older_only)
                + "."]
    missed = [s for s in result["sites"] if not s["caught_by"]]
    out += ["", f"## Missed break sites ({len(missed)})", "",
            "| gb_type | site | modes | torch | runs | source | stack hit by |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for site in sorted(missed, key=lambda s: (s["gb_type"], s["file"], s["line"])):
        runs = site["runs"]
        shown = ", ".join(r.split("/", 1)[1] for r in runs[:2]) + (f" +{len(runs) - 2}" if len(runs) > 2 else "")
        versions = ", ".join(v.split("+")[0] for v in site.get("torch", []))
        out.append(f"| {site['gb_type'][:80]} | {site['file']}:{site['line']} | {','.join(site['modes'])} | "
                   f"{versions} | "
                   f"{shown} | `{_source(sources, site['file'], site['line'], text_cache)}` | "
                   f"{', '.join(site['caught_by_stack']) or '-'} |")
    for verdict, title in (("violation", "default-clean line (certain, torch 2.13)"),
                           ("violation (fullgraph-clean)", "fullgraph-clean line (torch 2.11)")):
        rows = [f for f in result["findings"] if f["verdict"] == verdict]
        out += ["", f"## Violations on a {title}: {len(rows)}", ""]
        if rows:
            out += ["| code | location | mode | source |", "| --- | --- | --- | --- |"]
            for finding in sorted(rows, key=lambda f: (f["code"], f["path"], f["line"])):
                out.append(f"| {finding['code']} | {finding['path']}:{finding['line']} | "
                           f"{finding.get('mode') or 'both'} | "
                           f"`{_source(sources, finding['path'], finding['line'], text_cache)}` |")
    other = Counter((f["code"], f["kind"]) for f in result["findings"] if f["kind"] != "break")
    if other:
        out += ["", "## Recompile and perf findings (not scored)", "",
                "| code | kind | findings |", "| --- | --- | --- |"]
        out += [f"| {code} | {kind} | {n} |" for (code, kind), n in sorted(other.items())]
    return "\n".join(out) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    """Lint, score, print the summary and per-code table; write --out files when asked."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--truth", default=DEFAULT_TRUTH, help="ground truth JSON (default: the committed one)")
    parser.add_argument("--sources", help=f"folder holding transformers/, timm/, diffusers/ (default {SCRATCH_SOURCES} "
                                          "when present, else the installed packages)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="lint processes (default: all cores)")
    parser.add_argument("--no-cache", action="store_true", help="lint every file afresh")
    parser.add_argument("--codes", help="comma-separated codes: score only these rules' findings")
    parser.add_argument("--out", help="write PREFIX.md and PREFIX.json")
    args = parser.parse_args(argv)
    sources = os.path.abspath(args.sources or default_sources())
    truth = Truth(args.truth)
    files = truth.files()
    findings, lint_seconds, missing = lint(files, sources, args.jobs, not args.no_cache)
    if missing:
        print(f"warning: {len(missing)} ground-truth files are not under {sources} (e.g. {missing[0]}): "
              "other library versions?", file=sys.stderr)
    rules = rule_table()
    codes = {c.strip() for c in args.codes.split(",")} if args.codes else None
    result = score(truth, findings, rules, codes)
    totals = {"select ALL": summary(result, rules, default_only=False),
              "default selection": summary(result, rules, default_only=True)}
    for label, t in totals.items():
        print(f"{label}: recall {_pct(t['recall'])} ({t['caught']}/{t['sites']} sites; with stack "
              f"{_pct(t['recall_with_stack'])}), precision {_pct(t['precision'])} ({t['true_positive']} true, "
              f"{t['violations']} violations: {t['violations_default_clean']} on default-clean lines, "
              f"{t['violations_fullgraph_clean']} on fullgraph-clean lines; undecided: "
              f"{t['undecided_reached']} reached, {t['undecided_fullgraph_clean_unbacked']} fullgraph-clean of an "
              f"unbacked type, {t['not_reached']} not reached)")
    print(f"{len(files)} files linted in {lint_seconds:.0f} s")
    print()
    print(f"{'code':8} {'findings':>8} {'TP':>5} {'TPstk':>5} {'viol':>5} {'prec':>5} {'sites':>5} {'own gb':>9}")
    for code, row in result["per_code"].items():
        own = f"{row['own_gb_caught']}/{row['own_gb_sites']}" if row["own_gb_sites"] else "-"
        print(f"{code:8} {row['findings']:8} {row['true_positive']:5} {row['true_positive_stack']:5} "
              f"{row['violations']:5} {_pct(row['precision']):>5} {row['sites_caught']:5} {own:>9}")
    if args.out:
        command = "python benchmarks/sweep_score.py " + " ".join(argv if argv is not None else sys.argv[1:])
        with open(args.out + ".md", "w", encoding="utf-8") as handle:
            handle.write(markdown(truth, result, totals, rules, sources, lint_seconds, command.strip()))
        with open(args.out + ".json", "w", encoding="utf-8") as handle:
            json.dump({"totals": totals, "per_code": result["per_code"], "sites": result["sites"],
                       "findings": [f for f in result["findings"] if f["verdict"] != "undecided (not reached)"]},
                      handle, indent=0)
        print(f"wrote {args.out}.md and {args.out}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

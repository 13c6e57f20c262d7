"""`reach_score.py --user-projects`: the breaks inside installed libraries, found from a user's project.

Each user project of benchmarks/reach_users/<package>/ (a file or two that compile library
code the way its users do: a training step, a closure over a solver, a module built from the
library's layers) is copied into a temporary folder with a `compile-lint.toml` (`select =
["ALL"]`) and linted there by this environment's compile-lint, with the library installed
in the same environment (`make .venv/.reach-installed`):

    python -m compile_lint --config compile-lint.toml --show-library-findings --output-format json \
        --exit-zero --no-cache .

Its findings are of two sorts: the user's own (at the user's call into the library, with
`inside`: the library path, line, function and the break there) and, from
`--show-library-findings`, the library's (at their place in the library file, with
`library.called_from`: the user's calls that reach them). The library's are scored against
the ground truth (sweep_score's verdicts, a finding's lines widened by one either side, as
reach_score.py does) over the sites a user project reaches: those with an entry whose
`user_site` names a function of the user project. A site *caught* has a break-kind library
finding on its line (±1); *caught from the entry's function* when one of that finding's
user calls is made in the function the entry's `user_site` names (the call Dynamo's user
stack starts from). Violations: library break findings on lines Dynamo traced in a clean
run that catch no site.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
USERS = os.path.join(HERE, "reach_users")
SLACK = 1


def user_projects() -> list[str]:
    """The import packages that have a user project under benchmarks/reach_users/."""
    return sorted(name for name in os.listdir(USERS) if os.path.isdir(os.path.join(USERS, name)))


def lint_user_project(package: str) -> dict:
    """compile-lint's findings on the user project of `package` (linted in a temporary copy), and how it ran."""
    with tempfile.TemporaryDirectory(prefix="reach-users-") as project:
        shutil.copytree(os.path.join(USERS, package), project, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        with open(os.path.join(project, "compile-lint.toml"), "w", encoding="utf-8") as handle:
            handle.write("# Written by benchmarks/reach_score.py --user-projects\nselect = [\"ALL\"]\n")
        command = [sys.executable, "-m", "compile_lint", "--config", "compile-lint.toml", "--show-library-findings",
                   "--output-format", "json", "--exit-zero", "--no-cache", "."]
        started = time.perf_counter()
        completed = subprocess.run(command, cwd=project, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if completed.returncode not in (0, 1):
            raise SystemExit(f"compile-lint failed on the {package} user project (exit {completed.returncode}): "
                             f"{completed.stderr.strip()[-800:]}")
        findings = json.loads(completed.stdout or "[]")
    shown = ["python", *command[1:]]
    return {"findings": findings, "seconds": seconds, "notes": completed.stderr.strip().splitlines(),
            "command": f"(in a copy of benchmarks/reach_users/{package}) " + " ".join(shown)}


def site_relative(findings: list[dict], site_dir: str) -> list[dict]:
    """The library's findings with paths relative to the folder the packages are installed in (the truth's keys)."""
    found = []
    for finding in findings:
        if "library" not in finding:
            continue
        path = os.path.relpath(finding["path"], site_dir).replace(os.sep, "/")
        found.append(dict(finding, path=path))
    return found


def user_sites(catalog_units) -> dict[tuple[str, str], str]:
    """(unit key, entry name) -> the entry's `user_site` ("reach_users/lib/train.py:train_step")."""
    return {(unit.key, entry.name): entry.user_site for unit in catalog_units for entry in unit.entries
            if entry.user_site}


def site_user_functions(site: dict, sites_of: dict[tuple[str, str], str]) -> set[tuple[str, str]]:
    """(file in the user project, function) of each entry of the site that a user project compiles."""
    found = set()
    for unit in site.get("units", []):
        for entry in site.get("entries", []):
            user_site = sites_of.get((unit, entry))
            if user_site:
                file, _, function = user_site.partition(":")
                found.add((file.split("/", 2)[2], function))
    return found


def scored(truth, findings: list[dict], rules: dict, sites_of: dict, score_all) -> dict:
    """reach_score's verdicts over the sites user projects reach, and which are caught from the entry's function."""
    truth.sites = [site for site in truth.sites if site_user_functions(site, sites_of)]
    result = score_all(truth, findings, rules)
    for site in result["sites"]:
        functions = site_user_functions(site, sites_of)
        catching = [f for f in findings if f["path"] == site["file"] and f["kind"] == "break"
                    and f["line"] - SLACK <= site["line"] <= f["end_line"] + SLACK]
        site["caught_from_entry_function"] = any(
            (link["path"], link["function"]) in functions for f in catching for link in f["library"]["called_from"])
    return result


def tables(result: dict, runs: dict, packages: list[str]) -> dict:
    """Per library and overall: user-reachable sites, caught, caught from the entry's function, findings."""
    rows: dict[str, Counter] = defaultdict(Counter)
    for site in result["sites"]:
        row = rows[site["file"].split("/", 1)[0]]
        row["sites"] += 1
        row["caught"] += bool(site["caught_by"])
        row["caught_from_entry_function"] += bool(site["caught_by"]) and site["caught_from_entry_function"]
    for finding in result["findings"]:
        if finding["kind"] == "break":
            row = rows[finding["path"].split("/", 1)[0]]
            row["library_break_findings"] += 1
            row["violations"] += finding["verdict"].startswith("violation")
    for package in packages:
        own = [f for f in runs[package]["findings"] if "library" not in f]
        rows[package]["call_site_findings"] = sum(1 for f in own if "inside" in f)
        rows[package]["seconds"] = round(runs[package]["seconds"], 1)
    total = Counter()
    for row in rows.values():
        total.update({key: value for key, value in row.items() if key != "seconds"})
    return {"by_library": {key: dict(value) for key, value in sorted(rows.items())}, "total": dict(total)}


def markdown(summary: dict, result: dict, runs: dict, environment: dict, command: str) -> str:
    """The results page: the command, the totals, a table per library, every site and every call-site finding."""
    total = summary["total"]

    def ratio(a, b):
        return f"{a / b:.2f}" if b else "n/a"

    out = [
        "# Breaks inside installed libraries, found from users' projects (reach_score.py --user-projects)", "",
        f"Command: `{command}`. compile-lint {environment['compile_lint']} (commit {environment['commit']}), "
        f"torch {environment['torch']}, Python {environment['python']}, {environment['machine']}, "
        f"{environment['cpus']} cores. Each user project of benchmarks/reach_users/ linted in a temporary copy:", "",
        *[f"- {package}: `{run['command']}`" for package, run in runs.items()], "",
        "Scored: the sites of `benchmarks/results/reach_ground_truth.json` with an entry whose `user_site` is in the "
        "user project (Dynamo's user stack starts at the user's call), against the library's findings that "
        "`--show-library-findings` lists (each reached from a call of the user project). Verdicts: "
        "benchmarks/reach_library_score.py's docstring.", "",
        "## Summary", "",
        f"Sites reached from a user project: **{total.get('sites', 0)}**; caught (a library break finding on the "
        f"line ±{SLACK}, reached from the user's call): **{total.get('caught', 0)} = "
        f"{ratio(total.get('caught', 0), total.get('sites', 0))}**, of them from a call in the entry's own "
        f"function: {total.get('caught_from_entry_function', 0)}. Violations (library break findings on lines "
        f"Dynamo traced cleanly): **{total.get('violations', 0)}** of {total.get('library_break_findings', 0)}. "
        f"Findings at the users' call sites (`inside`): {total.get('call_site_findings', 0)}.", "",
        "| library | sites | caught ±1 | recall | from the entry's function | library break findings | violations | "
        "call-site findings | lint s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for package, row in summary["by_library"].items():
        out.append(f"| {package} | {row.get('sites', 0)} | {row.get('caught', 0)} | "
                   f"{ratio(row.get('caught', 0), row.get('sites', 0))} | {row.get('caught_from_entry_function', 0)} | "
                   f"{row.get('library_break_findings', 0)} | {row.get('violations', 0)} | "
                   f"{row.get('call_site_findings', 0)} | {row.get('seconds', '')} |")
    out += ["", "## Sites", "", "| site | gb_type | caught by | from the entry's function | user functions |",
            "| --- | --- | --- | --- | --- |"]
    for site in sorted(result["sites"], key=lambda s: (s["file"], s["line"])):
        out.append(f"| {site['file']}:{site['line']} | {site['gb_type'][:60].replace('|', '/')} | "
                   f"{', '.join(site['caught_by']) or '-'} | {'yes' if site['caught_from_entry_function'] else '-'} | "
                   f"{', '.join(sorted(site.get('user_functions', [])))} |")
    violations = [f for f in result["findings"] if f["verdict"].startswith("violation")]
    out += ["", f"## Library break findings on clean traced lines ({len(violations)})", ""]
    out += [f"- {f['code']} {f['path']}:{f['line']}" for f in violations] or ["None."]
    out += ["", "## Findings at the users' call sites", "", "| user project | call | code | inside |",
            "| --- | --- | --- | --- |"]
    for package, run in runs.items():
        for finding in run["findings"]:
            inside = finding.get("inside")
            if inside is not None:
                out.append(f"| {package} | {finding['path']}:{finding['line']} | {finding['code']} | "
                           f"{inside['package_path']}:{inside['line']} in `{inside['function']}` "
                           f"({inside['count']} site{'s' if inside['count'] > 1 else ''}) |")
    return "\n".join(out) + "\n"


def main(args, truth, rules, score_all, environment, command) -> int:
    """Lint every user project (or `args.libraries`), score, print the summary, write `args.out` .md/.json."""
    import reach_catalog

    packages = args.libraries.split(",") if args.libraries else user_projects()
    sites_of = user_sites(reach_catalog.units())
    runs, findings = {}, []
    for package in packages:
        site_dir = os.path.dirname(reach_catalog.package_root(package))
        runs[package] = run = lint_user_project(package)
        findings.extend(site_relative(run["findings"], site_dir))
        print(f"{package}: {len(run['findings'])} findings in {run['seconds']:.1f} s", file=sys.stderr)
    truth.sites = [site for site in truth.sites if site["file"].split("/", 1)[0] in packages]
    result = scored(truth, findings, rules, sites_of, score_all)
    for site in result["sites"]:
        site["user_functions"] = sorted(f"{file}:{function}" for file, function in site_user_functions(site, sites_of))
    summary = tables(result, runs, packages)
    total = summary["total"]
    print(f"user-reachable sites {total.get('sites', 0)}, caught ±{SLACK} {total.get('caught', 0)} "
          f"(from the entry's function {total.get('caught_from_entry_function', 0)}); violations "
          f"{total.get('violations', 0)} of {total.get('library_break_findings', 0)} library break findings; "
          f"call-site findings {total.get('call_site_findings', 0)}")
    for package, row in summary["by_library"].items():
        print(f"  {package:30} sites {row.get('sites', 0):3}  caught {row.get('caught', 0):3}  "
              f"violations {row.get('violations', 0):3}  call sites {row.get('call_site_findings', 0):3}")
    if args.out:
        with open(args.out + ".md", "w", encoding="utf-8") as handle:
            handle.write(markdown(summary, result, runs, environment, command))
        with open(args.out + ".json", "w", encoding="utf-8") as handle:
            json.dump({"environment": environment, "summary": summary, "sites": result["sites"],
                       "library_findings": [f for f in result["findings"] if f["kind"] == "break"],
                       "runs": runs}, handle, indent=0)
        print(f"wrote {args.out}.md and {args.out}.json")
    return 0

"""`compile-lint explain-log` on real libraries: the reach corpus's runs, read back from their TORCH_TRACE.

    python benchmarks/explain_log_reach.py --libraries torchdiffeq,monai,gpytorch \
        --out benchmarks/results/explain_log_reach

For each library, `reach_run.py` runs its units again (the probe that made
results/reach_ground_truth.json: CPU, backend "eager", the default compile and fullgraph=True
per entry and mode) with TORCH_TRACE set, so every unit's process writes its structured trace.
explain-log then reads that trace twice:

- with `--project` the installed package: each graph break must come out at the innermost
  frame of its stack in the library, which is how the ground truth defines a site (the file
  relative to the folder holding the package, and the line). Compared with the truth's sites
  of the default compile on torch 2.13 (fullgraph=True raises instead of logging a break);
- with `--project` the library's user project under reach_users/ (where the corpus compiles it
  that way): each break must come out at the user's call into the library, with the truth's
  site among the library frames it names.

Needs the `reach` and `reach-run` extras (`make reach-run-deps`). Writes OUT.md and OUT.json.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TRUTH = os.path.join(HERE, "results", "reach_ground_truth.json")
USERS = os.path.join(HERE, "reach_users")


def package_folder(name: str) -> str:
    """The folder holding an installed import package (truth paths are relative to it)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is not installed: make reach-run-deps")
    return os.path.dirname(os.path.abspath(list(spec.submodule_search_locations)[0]))


def truth_sites(library: str) -> dict[tuple[str, int], dict]:
    """The ground truth's sites of one library that the default compile hit on torch 2.13."""
    with open(TRUTH, encoding="utf-8") as handle:
        truth = json.load(handle)
    top = {site["file"].split("/", 1)[0]: site["library"] for site in truth["sites"]}
    distribution = top.get(library)
    return {(site["file"], site["line"]): site for site in truth["sites"]
            if site["library"] == distribution and "default" in site["configs"]
            and any(version.startswith("2.13") for version in site["torch"])}


def run_units(library: str, work: str, unit_timeout: int) -> tuple[str, float]:
    """reach_run.py over the library's units with TORCH_TRACE set; the trace directory and seconds."""
    trace = os.path.join(work, f"trace-{library}")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("TORCH_LOGS", "TORCH_TRACE"))}
    env["TORCH_TRACE"] = trace
    started = time.time()
    done = subprocess.run([sys.executable, os.path.join(HERE, "reach_run.py"), "--out", os.path.join(work, library),
                           "--libraries", library, "--unit-timeout", str(unit_timeout), "--budget", "150"],
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"reach_run.py failed for {library}:\n{done.stderr[-2000:]}")
    return trace, time.time() - started


def explain(trace: str, project: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "compile_lint", "explain-log", "--output-format", "json",
                           "--project", project, trace], cwd=REPO, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"explain-log failed on {trace}: {done.stderr}")
    return json.loads(done.stdout)


def _relative(path: str, folder: str) -> str:
    return os.path.relpath(os.path.abspath(os.path.join(REPO, path)), folder).replace(os.sep, "/")


def compare_library_view(findings: list[dict], folder: str, truth: dict) -> dict:
    """explain-log with the library as the project, against the truth's sites."""
    breaks = [f for f in findings if f["code"] == "JIT900"]
    inside = [f for f in breaks if not f["message"].endswith("no frame of its stack lies in the project")]
    sites = {(_relative(f["path"], folder), f["line"]): f for f in inside}
    found = sorted(set(sites) & set(truth))
    same_type = [key for key in found
                 if sites[key]["gb_type"] == truth[key]["gb_type"] or sites[key]["gb_type"] in truth[key]["gb_types"]]
    def described(key: tuple[str, int]) -> str:
        finding = sites[key]
        return f"{key[0]}:{key[1]} ({finding['gb_type']}, {finding['count']}x)"

    return {"truth_sites": len(truth), "explain_log_sites": len(sites), "found": len(found),
            "same_gb_type": len(same_type), "missed": sorted(f"{a}:{b}" for a, b in set(truth) - set(sites)),
            "extra": sorted(described(key) for key in set(sites) - set(truth)),
            "other_gb_type": sorted(f"{described(key)}, truth: {truth[key]['gb_type']}"
                                    for key in found if key not in same_type),
            "outside_the_library": len(breaks) - len(inside),
            "logged_breaks": sum(f["count"] for f in breaks)}


def compare_user_view(findings: list[dict], folder: str, library: str, library_sites: set[str]) -> dict:
    """explain-log with the user project as the project: breaks at the user's lines, each naming, as its
    innermost frame in the library, a site the library view found."""
    breaks = [f for f in findings if f["code"] == "JIT900"]
    at_user_lines = [f for f in breaks if not f["message"].endswith("no frame of its stack lies in the project")]
    through_library = agreeing = 0
    for finding in at_user_lines:
        inside = [f"{_relative(frame['path'], folder)}:{frame['line']}" for frame in finding.get("library_frames", [])]
        inside = [site for site in inside if site.startswith(library + "/")]
        through_library += bool(inside)  # else a break in torch itself (`loss.backward()`): no library site
        agreeing += bool(inside) and inside[-1] in library_sites
    return {"user_sites": len(at_user_lines), "through_the_library": through_library,
            "naming_a_library_view_site": agreeing,
            "user_lines": sorted(f"{f['path']}:{f['line']}" for f in at_user_lines)}


def report(results: dict, out: str) -> None:
    lines = ["# explain-log on the reach corpus's runs", "",
             f"`python benchmarks/explain_log_reach.py --libraries {','.join(results['libraries'])} --out {out}`, "
             f"torch {results['torch']}, CPU, {results['cpus']} cores, {results['date']}.", "",
             "Each library's units ran again under `reach_run.py` with `TORCH_TRACE` set; explain-log read the "
             "traces. Library view: `--project` the installed package, compared with "
             "results/reach_ground_truth.json's sites of the default compile on torch 2.13 (the innermost frame "
             "of the user stack in the library). User view: `--project` the library's user project under "
             "benchmarks/reach_users/: breaks at the user's calls, naming library frames.", "",
             "| library | run s | logged breaks | truth sites | explain-log sites | found | same gb_type | missed "
             "| extra | user-view sites | through the library | naming a library-view site |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, result in results["by_library"].items():
        lib, user = result["library_view"], result.get("user_view") or {}
        lines.append(f"| {name} | {result['seconds']:.0f} | {lib['logged_breaks']} | {lib['truth_sites']} | "
                     f"{lib['explain_log_sites']} | {lib['found']} | {lib['same_gb_type']} | {len(lib['missed'])} | "
                     f"{len(lib['extra'])} | {user.get('user_sites', '-')} | {user.get('through_the_library', '-')} | "
                     f"{user.get('naming_a_library_view_site', '-')} |")
    for name, result in results["by_library"].items():
        lib = result["library_view"]
        for label in ("missed", "extra", "other_gb_type"):
            if lib[label]:
                lines += ["", f"{name} {label}: " + ", ".join(lib[label])]
    with open(out + ".md", "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    with open(out + ".json", "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libraries", required=True, help="comma-separated import packages")
    parser.add_argument("--out", required=True, help="path prefix of the .md and .json results")
    parser.add_argument("--unit-timeout", type=int, default=600)
    parser.add_argument("--keep", metavar="DIR", help="keep the runs and traces in DIR (default: a temp dir, removed)")
    args = parser.parse_args(argv)
    import torch

    libraries = args.libraries.split(",")
    results = {"libraries": libraries, "torch": torch.__version__, "cpus": os.cpu_count(),
               "date": time.strftime("%Y-%m-%d"), "by_library": {}}
    keep = contextlib.nullcontext(args.keep) if args.keep else None
    with keep or tempfile.TemporaryDirectory(prefix="explain-log-reach-") as work:
        for library in libraries:
            folder = package_folder(library)
            truth = truth_sites(library)
            trace, seconds = run_units(library, work, args.unit_timeout)
            library_findings = explain(trace, os.path.join(folder, library))
            result = {"seconds": seconds, "library_view": compare_library_view(library_findings, folder, truth)}
            users = os.path.join(USERS, library)
            if os.path.isdir(users):
                sites = {f"{_relative(f['path'], folder)}:{f['line']}" for f in library_findings}
                result["user_view"] = compare_user_view(explain(trace, users), folder, library, sites)
            results["by_library"][library] = result
            print(library, json.dumps(result["library_view"], indent=None)[:400], flush=True)
    report(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

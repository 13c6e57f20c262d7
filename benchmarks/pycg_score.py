"""Score a call-graph generator against PyCG's micro-benchmark (ground truth in PyCG's JSON).

    python benchmarks/pycg_score.py PYCG/micro-benchmark                  # compile-lint, summary only
    python benchmarks/pycg_score.py PYCG --md OUT.md --json OUT.json      # also write the results
    python benchmarks/pycg_score.py PYCG --categories args,lambdas
    python benchmarks/pycg_score.py PYCG --command "VENV/bin/python -m pycg --package . main.py" \\
        --version-command "VENV/bin/python -m pip show pycg"              # PyCG itself, the baseline

PYCG is a checkout of github.com/vitsalis/PyCG (its root, `micro-benchmark/` or
`micro-benchmark/snippets/`), read in place: every case is a folder
`snippets/<category>/<case>/` holding `main.py` (and the modules it imports) and the expected
call graph `callgraph.json`. For each case the command (default
`compile-lint graph --output-format pycg main.py`, run by the shell, in the case's folder, that
folder being the package root; this interpreter's bin folder is put first on PATH so that
`compile-lint` is this environment's) must print one JSON object on stdout: node -> list of
callees, in PyCG's names (`main`, `main.f`, `main.A.__init__`, `main.<lambda1>`,
`<builtin>.len`, `ext.Cls.fun`, ...).

How edges are counted (as PyCG's evaluation artifact, github.com/vitsalis/pycg-evaluation,
scripts/compare_macro_benchmark_cg.py and scripts/micro_benchmark.py, counts them):

- An *edge* is a pair (node, callee) for each callee string listed under a node. A node with
  an empty list has no edge. Edges are compared as sets: a callee listed twice under one node
  is one edge (PyCG never lists one twice; its own script would count the repeat).
- *Found* edges: in both the output and the truth. Precision = found / output edges, recall =
  found / truth edges, pooled over the cases of a category (and over all cases for the
  overall row), not averaged per case. Every output edge counts, including edges from nodes
  the truth does not have. A ratio whose denominator is 0 is reported as n/a (null in JSON).
- Per case, PyCG's paper (Table 3) counts *complete* and *sound* cases, with the artifact's
  exact tests: *sound* when every node of the truth is a node of the output and every truth
  edge is an output edge (nothing missed); *complete* when every output edge whose node is a
  node of the truth is a truth edge (nothing extra; the artifact skips output nodes absent
  from the truth, and so does this score, though precision counts their edges). *Exact* is
  PyCG's own repository test (micro-benchmark/base.py): the same nodes with the same callees.
- A case whose command fails (non-zero exit, time-out, output that is not such a JSON object)
  has no output edges: all its truth edges are missed and it is neither complete, sound nor
  exact (the artifact's `do_test` returns False on any exception); the error is shown.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Optional

DEFAULT_COMMAND = "compile-lint graph --output-format pycg main.py"
DEFAULT_VERSION_COMMAND = "compile-lint --version"
TRUTH_FILE = "callgraph.json"
Graph = dict[str, list[str]]
Edge = tuple[str, str]


@dataclass
class CaseScore:
    """One case's verdict: its edge counts, the edges that differ and the error, if any."""

    category: str
    case: str
    truth_edges: int
    output_edges: int
    found: int
    complete: bool
    sound: bool
    exact: bool
    missing: list[Edge] = field(default_factory=list)
    extra: list[Edge] = field(default_factory=list)
    error: Optional[str] = None
    seconds: float = 0.0


def snippets_folder(path: str) -> str:
    """The `snippets/` folder under a PyCG checkout, its `micro-benchmark/`, or `snippets/` itself."""
    for candidate in (os.path.join(path, "micro-benchmark", "snippets"), os.path.join(path, "snippets"), path):
        if os.path.isdir(candidate) and any(
            os.path.isfile(os.path.join(candidate, category, case, TRUTH_FILE))
            for category in _subfolders(candidate) for case in _subfolders(os.path.join(candidate, category))
        ):
            return candidate
    raise SystemExit(f"error: no snippets/<category>/<case>/{TRUTH_FILE} under {path}: give PyCG's checkout")


def _subfolders(path: str) -> list[str]:
    return sorted(name for name in os.listdir(path) if os.path.isdir(os.path.join(path, name)))


def list_cases(snippets: str, categories: Optional[list[str]]) -> list[tuple[str, str]]:
    """(category, case) of every case folder with a ground truth, in the named categories if any."""
    known = _subfolders(snippets)
    unknown = sorted(set(categories or []) - set(known))
    if unknown:
        raise SystemExit(f"error: unknown categories {', '.join(unknown)}; known: {', '.join(known)}")
    return [(category, case) for category in known if not categories or category in categories
            for case in _subfolders(os.path.join(snippets, category))
            if os.path.isfile(os.path.join(snippets, category, case, TRUTH_FILE))]


def parse_graph(text: str) -> Graph:
    """A call graph from PyCG's JSON (an object of node -> list of callee names); ValueError if not."""
    graph = json.loads(text)
    if not isinstance(graph, dict) or not all(
        isinstance(callees, list) and all(isinstance(callee, str) for callee in callees)
        for callees in graph.values()
    ):
        raise ValueError("not a JSON object of node -> list of callee names")
    return graph


def edges(graph: Graph) -> set[Edge]:
    """The (node, callee) pairs of a graph, each once."""
    return {(node, callee) for node, callees in graph.items() for callee in callees}


def score_case(category: str, case: str, truth: Graph, output: Optional[Graph],
               error: Optional[str] = None, seconds: float = 0.0) -> CaseScore:
    """Compare one case's output with its truth (output None: the command failed, see the module doc)."""
    ran, graph = output is not None, output or {}
    truth_edges, output_edges = edges(truth), edges(graph)
    missing, extra = truth_edges - output_edges, output_edges - truth_edges
    sound = ran and not missing and all(node in graph for node in truth)
    complete = ran and not any(node in truth for node, _ in extra)
    exact = ran and {node: set(callees) for node, callees in graph.items()} == {
        node: set(callees) for node, callees in truth.items()}
    return CaseScore(category, case, len(truth_edges), len(output_edges), len(truth_edges & output_edges),
                     complete, sound, exact, sorted(missing), sorted(extra), error, round(seconds, 3))


def run_case(folder: str, command: str, timeout: float, path_env: str) -> tuple[Optional[Graph], Optional[str]]:
    """Run the command in the case's folder: its call graph, or None and why it failed."""
    env = dict(os.environ, PATH=path_env, PYTHONDONTWRITEBYTECODE="1")
    try:
        completed = subprocess.run(command, shell=True, cwd=folder, env=env, capture_output=True, text=True,
                                   timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:g} s"
    if completed.returncode != 0:
        lines = (completed.stderr.strip() or completed.stdout.strip()).splitlines() or ["no output"]
        # argparse and tracebacks end with a hint or a frame; the line naming the error says more
        named = [line for line in lines if "error" in line.lower()]
        return None, f"exit {completed.returncode}: {(named or lines)[-1].strip()}"
    try:
        return parse_graph(completed.stdout), None
    except ValueError as problem:  # json.JSONDecodeError is a ValueError
        return None, f"output is not PyCG's JSON ({problem}): {completed.stdout.strip()[:200]!r}"


def score_benchmark(snippets: str, cases: list[tuple[str, str]], command: str, timeout: float) -> list[CaseScore]:
    """Run and score every case, saying on stderr which ones failed or left files in the benchmark."""
    path_env = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    scores = []
    for category, case in cases:
        folder = os.path.join(snippets, category, case)
        with open(os.path.join(folder, TRUTH_FILE), encoding="utf-8") as handle:
            truth = parse_graph(handle.read())
        before = set(os.listdir(folder))
        started = time.monotonic()
        output, error = run_case(folder, command, timeout, path_env)
        scores.append(score_case(category, case, truth, output, error, time.monotonic() - started))
        if error:
            print(f"{category}/{case}: {error}", file=sys.stderr)
        left = sorted(set(os.listdir(folder)) - before)
        if left:  # the benchmark is read in place: a tool writing there changes the next run's input
            print(f"{category}/{case}: the command left {', '.join(left)} in {folder}", file=sys.stderr)
    return scores


def _ratio(part: int, whole: int) -> Optional[float]:
    return round(part / whole, 4) if whole else None


def summarise(scores: list[CaseScore]) -> dict:
    """Counts, precision and recall per category and overall (key "overall")."""
    groups: dict[str, list[CaseScore]] = {}
    for score in scores:
        groups.setdefault(score.category, []).append(score)
    summary = {}
    for name, group in [*sorted(groups.items()), ("overall", scores)]:
        truth = sum(s.truth_edges for s in group)
        output = sum(s.output_edges for s in group)
        found = sum(s.found for s in group)
        summary[name] = {
            "cases": len(group), "truth_edges": truth, "output_edges": output, "found": found,
            "precision": _ratio(found, output), "recall": _ratio(found, truth),
            "complete": sum(s.complete for s in group), "sound": sum(s.sound for s in group),
            "exact": sum(s.exact for s in group), "failed": sum(s.error is not None for s in group),
        }
    return summary


def _shown(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def summary_table(summary: dict) -> list[str]:
    """The per-category table in Markdown, the overall row last."""
    rows = ["| category | cases | truth edges | output edges | found | precision | recall "
            "| complete | sound | exact | failed |", "| --- |" + " ---: |" * 10]
    for name, row in summary.items():
        label = "**overall**" if name == "overall" else name
        rows.append(f"| {label} | {row['cases']} | {row['truth_edges']} | {row['output_edges']} | {row['found']} "
                    f"| {_shown(row['precision'])} | {_shown(row['recall'])} | {row['complete']} "
                    f"| {row['sound']} | {row['exact']} | {row['failed']} |")
    return rows


def _edge_list(pairs: list[Edge]) -> str:
    return "<br>".join(f"`{node}` -> `{callee}`" for node, callee in pairs) or "-"


def render_markdown(meta: dict, summary: dict, scores: list[CaseScore]) -> str:
    """The results file: how it was made, the table, and every case that is not exact."""
    lines = [
        f"# PyCG micro-benchmark: {meta['tool_version']}", "",
        f"- Command (per case, in its folder): `{meta['command']}`",
        f"- Made by: `{meta['invocation']}`",
        f"- Benchmark: PyCG `micro-benchmark/snippets` at commit {meta['snapshot']} ({meta['cases']} cases)",
        f"- Date: {meta['date']}; tool: {meta['tool_version']}", "",
        "Edges are (node, callee) pairs, precision and recall pooled over a category's cases; "
        "complete: no extra edge from a truth node; sound: no missed edge or node; exact: the same "
        "graph (benchmarks/pycg_score.py's docstring defines each).", "",
        *summary_table(summary), "",
    ]
    inexact = [s for s in scores if not s.exact]
    if inexact:
        lines += ["## Cases not exact", "", "| case | missed | extra | error |", "| --- | --- | --- | --- |"]
        lines += [f"| {s.category}/{s.case} | {_edge_list(s.missing)} | {_edge_list(s.extra)} "
                  f"| {(s.error or '-').replace('|', '/')} |" for s in inexact]
    return "\n".join(lines) + "\n"


def tool_version(command: str) -> str:
    """The first line the version command prints (or why it printed none)."""
    path_env = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    try:
        completed = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=60,
                                   env=dict(os.environ, PATH=path_env))
    except subprocess.TimeoutExpired:
        return f"unknown (`{command}` timed out)"
    lines = [line.strip() for line in completed.stdout.splitlines() if line.strip()]
    version_lines = [line for line in lines if line.lower().startswith(("version:", "name:"))]
    if len(version_lines) == 2:  # `pip show`: "Name: X" and "Version: V"
        return " ".join(line.split(":", 1)[1].strip() for line in version_lines)
    return lines[0] if completed.returncode == 0 and lines else f"unknown (`{command}` failed)"


def snapshot_commit(snippets: str, given: Optional[str]) -> str:
    """The benchmark's commit: the one given, else the git checkout's HEAD, else "unknown"."""
    if given:
        return given
    completed = subprocess.run(["git", "-C", snippets, "rev-parse", "HEAD"], capture_output=True, text=True)
    return completed.stdout.strip() if completed.returncode == 0 else "unknown (pass --snapshot)"


def _write(path: str, text: str) -> None:
    """Write a results file whole: a temporary beside it, then renamed over it."""
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(partial, path)


def main(argv: Optional[list[str]] = None) -> int:
    """Score the command on the benchmark, print the table, write the results asked for."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("benchmark", help="PyCG's checkout, its micro-benchmark/ or micro-benchmark/snippets/")
    parser.add_argument("--command", default=DEFAULT_COMMAND, help="shell command run in each case's folder, "
                        f"printing the graph (default: {DEFAULT_COMMAND})")
    parser.add_argument("--categories", help="comma-separated categories to run (default: all)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per case (default 120)")
    parser.add_argument("--version-command", default=DEFAULT_VERSION_COMMAND,
                        help=f"prints the tool's version for the results (default: {DEFAULT_VERSION_COMMAND})")
    parser.add_argument("--snapshot", help="the benchmark's commit, when its folder is not a git checkout")
    parser.add_argument("--json", metavar="OUT", help="write every case's score and the summary as JSON")
    parser.add_argument("--md", metavar="OUT", help="write the results table as Markdown")
    args = parser.parse_args(argv)

    snippets = snippets_folder(args.benchmark)
    categories = [name.strip() for name in args.categories.split(",") if name.strip()] if args.categories else None
    cases = list_cases(snippets, categories)
    scores = score_benchmark(snippets, cases, args.command, args.timeout)
    summary = summarise(scores)
    meta = {
        "command": args.command, "tool_version": tool_version(args.version_command),
        "snapshot": snapshot_commit(snippets, args.snapshot), "cases": len(scores),
        "date": datetime.date.today().isoformat(),
        "invocation": shlex.join(["python", "benchmarks/pycg_score.py", *(argv if argv is not None else sys.argv[1:])]),
    }
    print("\n".join(summary_table(summary)))
    if args.json:
        _write(args.json, json.dumps({"meta": meta, "summary": summary, "cases": [asdict(s) for s in scores]},
                                     indent=1) + "\n")
    if args.md:
        _write(args.md, render_markdown(meta, summary, scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())

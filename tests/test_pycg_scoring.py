"""benchmarks/pycg_score.py's arithmetic, on two hand-written cases and a stand-in tool.

The tool is a tiny script that prints a fixed call graph per case folder, so what is pinned
is the scorer: edges counted as (node, callee) pairs, precision and recall pooled over the
cases, PyCG's complete/sound verdicts, exactness, and a failing command counted as all missed.
"""

from __future__ import annotations

import json
import shlex
import sys

import pycg_score

TRUTHS = {
    "exact": {"main": ["main.f"], "main.f": []},
    "off": {"main": ["main.f", "main.g"], "main.f": [], "main.g": []},
}
# What the stand-in tool prints in each case folder: "off" misses main -> main.g and adds main -> main.h.
OUTPUTS = {
    "exact": {"main.f": [], "main": ["main.f"]},
    "off": {"main": ["main.h", "main.f"], "main.f": [], "main.g": [], "main.h": []},
}
TOOL = f"""import json, os, sys
outputs = {OUTPUTS!r}
case = os.path.basename(os.getcwd())
if case not in outputs:
    sys.exit("error: no graph for " + case)
print(json.dumps(outputs[case]))
"""


def write_benchmark(root, cases) -> str:
    """snippets/calls/<case>/ with a main.py and the case's callgraph.json; the stand-in tool beside them."""
    for case, truth in cases.items():
        folder = root / "micro-benchmark" / "snippets" / "calls" / case
        folder.mkdir(parents=True)
        (folder / "main.py").write_text("def f():\n    pass\n\nf()\n")
        (folder / "callgraph.json").write_text(json.dumps(truth))
    tool = root / "tool.py"
    tool.write_text(TOOL)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(tool))}"


def score(tmp_path, cases) -> dict:
    command = write_benchmark(tmp_path, cases)
    out = tmp_path / "scores.json"
    assert pycg_score.main([str(tmp_path), "--command", command, "--version-command", "echo stand-in 1.0",
                            "--snapshot", "abc123", "--json", str(out), "--md", str(tmp_path / "scores.md")]) == 0
    return json.loads(out.read_text())


def test_exact_case_and_a_case_with_a_missed_and_an_extra_edge(tmp_path):
    results = score(tmp_path, TRUTHS)
    by_case = {case["case"]: case for case in results["cases"]}
    exact, off = by_case["exact"], by_case["off"]
    assert (exact["truth_edges"], exact["output_edges"], exact["found"]) == (1, 1, 1)
    assert exact["complete"] and exact["sound"] and exact["exact"]
    assert (off["truth_edges"], off["output_edges"], off["found"]) == (2, 2, 1)
    assert off["missing"] == [["main", "main.g"]] and off["extra"] == [["main", "main.h"]]
    assert not off["complete"] and not off["sound"] and not off["exact"]
    overall = results["summary"]["overall"]
    assert overall == results["summary"]["calls"]
    assert (overall["truth_edges"], overall["output_edges"], overall["found"]) == (3, 3, 2)
    assert (overall["precision"], overall["recall"]) == (0.6667, 0.6667)
    assert (overall["complete"], overall["sound"], overall["exact"], overall["failed"]) == (1, 1, 1, 0)
    assert results["meta"]["tool_version"] == "stand-in 1.0" and results["meta"]["snapshot"] == "abc123"
    table = (tmp_path / "scores.md").read_text()
    assert "| **overall** | 2 | 3 | 3 | 2 | 0.667 | 0.667 | 1 | 1 | 1 | 0 |" in table
    assert "| calls/off | `main` -> `main.g` | `main` -> `main.h` | - |" in table


def test_a_failing_command_misses_every_edge_and_says_why(tmp_path):
    results = score(tmp_path, {"exact": TRUTHS["exact"], "broken": {"main": ["main.f", "main.g"]}})
    broken = next(case for case in results["cases"] if case["case"] == "broken")
    assert (broken["truth_edges"], broken["output_edges"], broken["found"]) == (2, 0, 0)
    assert not (broken["complete"] or broken["sound"] or broken["exact"])
    assert broken["error"] == "exit 1: error: no graph for broken"
    overall = results["summary"]["overall"]
    assert (overall["precision"], overall["recall"], overall["failed"]) == (1.0, 0.3333, 1)


def test_complete_ignores_extra_edges_from_nodes_the_truth_lacks_as_pycg_does():
    truth = {"main": ["main.f"], "main.f": []}
    output = {"main": ["main.f"], "main.f": [], "main.unlisted": ["main.f"]}
    verdict = pycg_score.score_case("calls", "case", truth, output)
    assert verdict.complete and verdict.sound and not verdict.exact
    assert (verdict.output_edges, verdict.found) == (2, 1)


def test_sound_needs_every_node_of_the_truth_even_one_without_callees():
    truth = {"main": ["main.f"], "main.f": []}
    verdict = pycg_score.score_case("calls", "case", truth, {"main": ["main.f"]})
    assert verdict.found == verdict.truth_edges == 1 and not verdict.sound and verdict.complete

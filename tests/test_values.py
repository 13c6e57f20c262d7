"""Values across calls (issue 31): the least fixed point of the hints, and the messages that name their callers.

The breaks themselves are calibrated against Dynamo in tests/fixtures/reach/caller_values/
(tests/test_reach_fixtures.py); these tests pin what the fixed point guarantees and what a
finding says about the caller it rests on.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

from compile_lint.analysis.project.reach import ProjectReach, project_reach
from compile_lint.analysis.project.symbols import SymbolIndex
from compile_lint.analysis.project.values import BOTTOM, FixedPoint, join
from tests.helpers import assert_findings_json, run_cli

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "reach" / "caller_values"


def test_join_is_unknown_on_disagreement_and_ignores_bottom():
    assert join(["tensor", "tensor"]) == "tensor"
    assert join(["tensor", "py"]) is None
    assert join(["tensor", BOTTOM]) == "tensor"
    assert join([BOTTOM]) is BOTTOM
    assert join([]) is None
    assert join(["tensor", None]) is None


def test_a_cycle_gets_its_least_solution_whatever_is_asked_first():
    """h = tensor | gate(h); gate returns its parameter: every node of the cycle is a tensor."""
    equations = {
        "local h": lambda get: join(["tensor", get("return gate")]),
        "return gate": lambda get: get("param gate.h"),
        "param gate.h": lambda get: get("local h"),
        "other": lambda get: join(["py", get("return gate")]),
    }
    for order in itertools.permutations(equations):
        solver = FixedPoint(lambda node: equations[node](solver.get))
        answers = {node: solver.get(node) for node in order}
        assert answers == {"local h": "tensor", "return gate": "tensor", "param gate.h": "tensor", "other": None}


def test_a_cycle_with_no_value_from_outside_stays_without_one():
    equations = {"a": lambda get: get("b"), "b": lambda get: get("a")}
    solver = FixedPoint(lambda node: equations[node](solver.get))
    assert solver.get("a") is BOTTOM and solver.get("b") is BOTTOM


def _reach(root: Path) -> ProjectReach:
    return project_reach(str(root), True, SymbolIndex([str(root)]))  # type: ignore[return-value]


def test_hints_do_not_depend_on_the_order_of_the_questions(tmp_path):
    root = tmp_path / "caller_values"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__"))
    commons = str(root / "tts" / "commons.py")
    questions = [(commons, "gate", "h"), (commons, "frame_norms", "h"), (commons, "slice_segments", "x"),
                 (commons, "slice_segments", "ids_str"), (commons, "shift", "start"), (commons, "halve", "limit")]
    answers = []
    for order in (questions, list(reversed(questions))):
        reach = ProjectReach(_reach(root).graph, _reach(root).entries)  # a fresh answer each time
        answers.append({question: reach.hint((question[0], question[1]), question[2]) for question in order})
    assert answers[0] == answers[1]
    assert answers[0][(commons, "frame_norms", "h")] == "tensor"  # h = self.proj(x); h = commons.gate(h, ...)
    assert answers[0][(commons, "slice_segments", "ids_str")] == "tensor"  # item 1 of rand_starts' tuple
    assert answers[0][(commons, "shift", "start")] == "tensor"  # offsets[0] of a forward parameter
    assert answers[0][(commons, "halve", "limit")] == "py"  # len(x)


def test_a_finding_names_the_call_of_another_file_its_parameter_rests_on(tmp_path):
    root = tmp_path / "caller_values"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__"))
    result = run_cli("--no-cache", "--output-format", "json", ".", cwd=root)
    assert result.returncode == 1, result.stderr
    messages = {(os.path.relpath(f["path"], root) if os.path.isabs(f["path"]) else f["path"], f["line"]): f["message"]
                for f in assert_findings_json(result.stdout)}
    gate = messages[(os.path.join("tts", "commons.py"), 20)]
    ending = "(`scale` is a tensor: tts/model.py:19 passes `scale`) (reached from tts/model.py:19 in Synth.forward)"
    assert gate.endswith(ending), gate
    shift = messages[(os.path.join("tts", "commons.py"), 26)]
    assert "`start` is a tensor: tts/model.py:20 passes a tensor" in shift, shift

"""The bundled examples: the linter finds their traps, and --fix makes the fixable models
compile as one graph with equal outputs, as the verifier confirms."""

import json
import os
import shutil

import pytest

from tests.helpers import assert_findings_json, run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

# (file, code) for every trap the examples carry; their clean look-alikes must stay silent.
EXPECTED = {
    ("detection_head.py", "JIT502"),  # a float reaching interpolate(scale_factor=)
    ("detection_head.py", "JIT103"),  # ternary on a tensor
    ("detection_head.py", "JIT601"),  # print
    ("moe_router.py", "JIT201"),      # .item()
    ("moe_router.py", "JIT207"),      # bincount: data-dependent size
    ("moe_router.py", "JIT203"),      # .tolist() as split sizes
    ("transformer_block.py", "JIT101"),  # if on a tensor
    ("transformer_block.py", "JIT501"),  # self.calls += 1
    ("transformer_block.py", "JIT602"),  # logger.debug
}
# Models whose every finding has a fix; after --fix they must be one clean graph.
FIXABLE_TARGETS = ("transformer_block", "score_filter", "moe_router_fixed_temperature", "clean_score_filter")


@pytest.mark.slow
def test_linter_finds_every_trap_and_nothing_else():
    result = run_cli("--output-format", "json", EXAMPLES)
    assert result.returncode == 1, result.stderr
    found = {(os.path.basename(d["path"]), d["code"]) for d in assert_findings_json(result.stdout)}
    assert found == EXPECTED


@pytest.mark.slow
def test_fix_makes_fixable_models_compile_as_one_graph_with_equal_outputs(tmp_path):
    pytest.importorskip("torch")
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.compile-lint.verify]\ntargets = [" +
        ", ".join(f'"examples/targets.py:{name}"' for name in FIXABLE_TARGETS) + "]\n"
    )
    fixed = run_cli("--fix", "--unsafe-fixes", "--verify", "--show-fixes", "examples", cwd=str(tmp_path))
    assert fixed.returncode == 1, fixed.stderr  # the unfixable findings remain
    assert "rolled back" not in fixed.stdout + fixed.stderr
    assert fixed.stdout.count("Fixed examples/") >= 6

    report = tmp_path / "report.json"
    targets = [f"examples/targets.py:{name}" for name in FIXABLE_TARGETS]
    verify = run_cli("verify", "--backend", "eager", "--output-format", "json", "--report", str(report),
                     *targets, cwd=str(tmp_path))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert assert_findings_json(verify.stdout) == []
    for result in json.loads(report.read_text())["results"]:
        analysis = result["analysis"]
        assert analysis["fullgraph_error"] is None, result["target"]
        assert analysis["graph_breaks"] == [] and analysis["recompiles"] == [], result["target"]
        assert analysis["comparison"]["equal"], result["target"]

"""The architecture sweep's measuring chain on a small library of its own (CI never runs the sweep).

A two-file package stands in for a model library: the probe compiles its model for real
(eval and train, backend eager), the truth builder turns the records into sites and clean
lines, and the scorer lints the package with the real compile-lint CLI and judges the
findings. The model breaks only in training (`if self.training:` guards a data-dependent
branch), so eval's clean lines and train's break site are both known.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

import sweep_probe  # noqa: E402
import sweep_score  # noqa: E402
import sweep_truth  # noqa: E402
from sweep_catalog import Variant  # noqa: E402

MODEL = textwrap.dedent("""\
    import torch
    from torch import nn

    from toylib.helpers import scale


    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x):
            y = self.proj(x)
            if self.training:
                if y.sum() > 0:
                    y = y + 1
            return scale(y)
""")
HELPERS = "def scale(x):\n    return x * 2\n"
FORWARD_LINE = MODEL.splitlines().index("        y = self.proj(x)") + 1
BRANCH_LINE = MODEL.splitlines().index("            if y.sum() > 0:") + 1


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("sources")
    package = root / "toylib"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(MODEL)
    (package / "helpers.py").write_text(HELPERS)
    sys.path.insert(0, str(root))
    try:
        from toylib.model import Gate
    finally:
        sys.path.remove(str(root))

    def build():
        return Gate(), lambda batch, length: {"x": torch.ones(batch, 4)}

    paths = sweep_probe.PathMap({"toylib": str(package)})
    records = []
    for mode in ("eval", "train"):
        variant = Variant("toylib/gate", f"base/{mode}", mode, build, recompiles=False)
        record = sweep_probe.probe_variant(variant, paths)
        record["source"], record["torch"] = "test", torch.__version__
        records.append(record)
    yield root, records, sweep_truth.build_truth(records)
    for name in [n for n in sys.modules if n == "toylib" or n.startswith("toylib.")]:
        del sys.modules[name]


def test_line_ranges_round_trip():
    assert sweep_probe.to_ranges([9, 1, 2, 3, 7, 10]) == "1-3,7,9-10"
    assert sweep_probe.from_ranges("1-3,7,9-10") == {1, 2, 3, 7, 9, 10}
    assert sweep_probe.from_ranges("") == set()


def test_probe_records_the_break_and_the_clean_lines(toy):
    _, records, _ = toy
    evaluation, training = records
    assert evaluation["status"] == "ok" and evaluation["default_clean"] is True
    assert evaluation["fullgraph"]["ok"] is True
    assert FORWARD_LINE in sweep_probe.from_ranges(evaluation["traced_clean"]["toylib/model.py"])
    assert "toylib/helpers.py" in evaluation["traced_clean"]  # inlined helpers are traced lines too
    assert training["default_clean"] is False and training["fullgraph"]["ok"] is False
    [branch] = [b for b in training["breaks"] if b["site"]["line"] == BRANCH_LINE]
    assert branch["gb_type"] == "Data-dependent branching"
    assert branch["site"]["file"] == "toylib/model.py"


def test_truth_keeps_sites_and_clean_lines_per_mode(toy):
    _, _, truth = toy
    [site] = [s for s in truth["sites"] if s["line"] == BRANCH_LINE]
    assert site["modes"] == ["train"] and site["runs"] == ["toylib/gate/base/train"]
    eval_clean = sweep_probe.from_ranges(truth["clean"]["eval"]["toylib/model.py"])
    assert FORWARD_LINE in eval_clean and BRANCH_LINE not in eval_clean
    assert truth["clean"]["train"] == {}  # the training run broke: none of its lines is certain
    assert BRANCH_LINE in sweep_probe.from_ranges(truth["traced_in_breaking_runs"]["train"]["toylib/model.py"])


def test_score_with_the_real_linter(toy, tmp_path):
    root, _, truth_data = toy
    truth_path = tmp_path / "truth.json"
    truth_path.write_text(sweep_truth.json.dumps(truth_data))
    truth = sweep_score.Truth(str(truth_path))
    findings, _, missing = sweep_score.lint(truth.files(), str(root), jobs=1, use_cache=False)
    assert missing == []
    rules = sweep_score.rule_table()
    result = sweep_score.score(truth, findings, rules)
    [site] = [s for s in result["sites"] if s["line"] == BRANCH_LINE]
    assert "JIT101" in site["caught_by"]
    totals = sweep_score.summary(result, rules, default_only=False)
    assert totals["recall"] == 1.0 and totals["violations"] == 0
    # A break finding on a line the clean eval run traced is a violation; one on a line no
    # run reached is undecided; one restricted to training is not judged against eval lines.
    extra = [
        {"path": "toylib/model.py", "line": FORWARD_LINE, "end_line": FORWARD_LINE, "code": "JIT101",
         "name": "tensor-valued-if", "kind": "break", "message": "planted", "mode": None},
        {"path": "toylib/model.py", "line": FORWARD_LINE, "end_line": FORWARD_LINE, "code": "JIT602",
         "name": "logging", "kind": "break", "message": "planted", "mode": "training"},
        {"path": "toylib/model.py", "line": 1, "end_line": 1, "code": "JIT201", "name": "tensor-item",
         "kind": "break", "message": "planted", "mode": None},
    ]
    verdicts = {f["code"]: f["verdict"] for f in sweep_score.score(truth, extra, rules)["findings"]}
    assert verdicts == {"JIT101": "violation", "JIT602": "undecided (reached)", "JIT201": "undecided (not reached)"}

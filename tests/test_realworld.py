"""The real-world calibration harness on two real models (skipped without the `realworld` extra).

Runs benchmarks/realworld.py end to end: a subprocess per model on the real compiler, the
linter over the library files, and the scoring. Longformer is the small transformers model
with known graph breaks in transformers 5.23 (a `.item()` and a `logger.warning_once`);
timm's resnet18 compiles cleanly.
"""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

for _library in ("transformers", "timm", "diffusers"):
    if importlib.util.find_spec(_library) is None:
        pytest.skip(f"{_library} not installed (pip install -e '.[realworld]')", allow_module_level=True)

import realworld  # noqa: E402
from realworld_probe import parse_graph_break  # noqa: E402


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("realworld") / "results")
    assert realworld.main(["--models", "transformers/longformer,timm/resnet18", "--out", out, "--timeout", "500"]) == 0
    with open(out + ".json", encoding="utf-8") as handle:
        data = json.load(handle)
    with open(out + ".md", encoding="utf-8") as handle:
        data["markdown"] = handle.read()
    return data


def _model(data, name):
    return next(m for m in data["models"] if m["model"] == name)


def test_clean_model_has_no_break_and_no_recompile(sweep):
    resnet = _model(sweep, "timm/resnet18")
    assert resnet["status"] == "ok"
    assert resnet["breaks"] == [] and resnet["graph_break_counter"] == 0
    assert resnet["fullgraph"]["ok"] is True
    assert resnet["recompiles"] == []


def test_breaks_are_located_in_library_code_and_scored(sweep):
    longformer = _model(sweep, "transformers/longformer")
    assert longformer["status"] == "ok" and longformer["fullgraph"]["ok"] is False
    kinds = {b["gb_type"] for b in longformer["breaks"]}
    assert "Unsupported Tensor.item() call with capture_scalar_outputs=False" in kinds
    rows = sweep["scores"]["default selection"]["breaks"]
    item_row = next(r for r in rows if r["gb_type"].startswith("Unsupported Tensor.item()"))
    assert item_row["file"].endswith(os.path.join("longformer", "modeling_longformer.py"))
    assert "JIT201" in item_row["caught_by"]
    assert ".item()" in item_row["source"]
    recall = sweep["scores"]["default selection"]["recall"]
    caught = sum(1 for r in rows if r["caught_by"])
    assert recall == pytest.approx(caught / len(rows))
    assert "## Every break location" in sweep["markdown"]


def test_parse_graph_break_reads_type_id_location_and_frames():
    message = (
        "Graph break in user code at /lib/m.py:9\n"
        "Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):\n"
        "\n"
        "Data-dependent branching\n"
        "  Explanation: Detected data-dependent branching.\n"
        " For more details about this graph break, please visit: https://x/gb/gb0170.html\n"
        "\n"
        "User code traceback:\n"
        '  File "/lib/m.py", line 15, in forward\n'
        "    y = helper(y)\n"
        '  File "/lib/m.py", line 9, in helper\n'
        "    if x.sum() > 0:\n"
    )
    parsed = parse_graph_break(message)
    assert parsed["file"] == "/lib/m.py" and parsed["line"] == 9
    assert parsed["gb_type"] == "Data-dependent branching" and parsed["gb_id"] == "gb0170"
    assert [(f["line"], f["function"]) for f in parsed["frames"]] == [(15, "forward"), (9, "helper")]
    assert parse_graph_break("not a graph break") is None

"""The sweep's ground truth and scoring rules, on small synthetic measurements.

tests/test_sweep.py runs the whole chain with the real compiler on a toy package; here the
records are written by hand so that each verdict the committed numbers rest on is pinned
alone: what counts as a violation, a true positive, and which sites are not counted. No
model library is needed and nothing is written to disk.
"""

from __future__ import annotations

import pytest

import sweep_score
import sweep_truth

FILE = "lib/models/net/modeling_net.py"
OLD, NEW = "2.11.0", "2.13.0+cpu"


def record(variant: str, torch_version: str, *, mode: str = "eval", traced: str = "", breaks=(),
           protocol: str = "default-first") -> dict:
    """One probe record of unit lib/net as sweep_run.py writes it (only the fields the truth reads)."""
    clean = protocol == "default-first" and not breaks
    return {
        "unit": "lib/net", "variant": variant, "mode": mode, "status": "ok", "torch": torch_version,
        "source": f"raw-{torch_version}", "protocol": protocol, "default_clean": clean,
        "executed": {FILE: traced}, "traced_clean" if clean else "traced_breaking_run": {FILE: traced},
        "fullgraph": {"ok": not breaks}, "breaks": [
            {"gb_type": gb_type, "site": {"file": FILE, "line": line}, "location": f"{FILE}:{line}",
             "frames": [{"file": FILE, "line": line}], "call": 1}
            for gb_type, line in breaks],
        "recompiles": [],
    }


def finding(code: str, line: int, mode=None) -> dict:
    """A compile-lint JSON finding in FILE (the fields the scorer reads)."""
    return {"path": FILE, "line": line, "end_line": line, "code": code, "name": code, "kind": "break",
            "mode": mode, "message": ""}


@pytest.fixture(scope="module")
def rules():
    return sweep_score.rule_table()


@pytest.fixture(scope="module")
def truth():
    """Eval traces lines 10-20 cleanly on the newest torch; train breaks at line 30 on both
    torches; the older torch also broke at line 40 in eval, which the newest traces cleanly."""
    records = [
        record("base/eval", NEW, traced="10-20,40"),
        record("base/train", NEW, mode="train", traced="10-30", breaks=[("Data-dependent branching", 30)]),
        record("base/train", OLD, mode="train", traced="10-30", protocol="fullgraph-first",
               breaks=[("Data-dependent branching", 30)]),
        record("base/eval", OLD, traced="10-20,40", protocol="fullgraph-first",
               breaks=[("copy.deepcopy()", 40)]),
    ]
    return sweep_score.Truth(sweep_truth.build_truth(records))


def verdicts(truth, rules, findings) -> dict[tuple, str]:
    result = sweep_score.score(truth, findings, rules)
    return {(f["code"], f["line"], f["mode"]): f["verdict"] for f in result["findings"]}


def test_a_break_finding_on_a_line_a_clean_run_traced_is_a_violation(truth, rules):
    assert verdicts(truth, rules, [finding("JIT201", 15)]) == {("JIT201", 15, None): "violation"}


def test_a_finding_limited_to_training_is_not_judged_by_clean_eval_lines(truth, rules):
    # Line 15 is clean in eval; in train it was traced only by a run that broke: undecided.
    assert verdicts(truth, rules, [finding("JIT201", 15, mode="training")]) == {
        ("JIT201", 15, "training"): "undecided (reached)"}


def test_a_finding_on_a_break_site_is_a_true_positive_and_catches_the_site(truth, rules):
    result = sweep_score.score(truth, [finding("JIT101", 30)], rules)
    assert [f["verdict"] for f in result["findings"]] == ["true-positive"]
    [site] = result["sites"]
    assert (site["line"], site["caught_by"], site["gb_types"]) == (
        30, ["JIT101"], {"Data-dependent branching": [OLD, NEW]})
    totals = sweep_score.summary(result, rules, default_only=False)
    assert (totals["sites"], totals["caught"], totals["recall"], totals["violations"], totals["precision"]) == (
        1, 1, 1.0, 0, 1.0)


def test_a_site_only_the_older_torch_logged_is_listed_not_counted(truth, rules):
    assert [(s["line"], s["reproduced_on_newest_torch"]) for s in truth.data["sites"]] == [(30, True), (40, False)]
    assert [s["line"] for s in truth.sites] == [30]
    assert [s["line"] for s in truth.older_only] == [40]
    result = sweep_score.score(truth, [], rules)
    totals = sweep_score.summary(result, rules, default_only=False)
    assert (totals["sites"], totals["caught"], totals["recall"]) == (1, 0, 0.0)
    # The newest torch traced line 40 cleanly in eval, so a finding there is a violation.
    assert verdicts(truth, rules, [finding("JIT406", 40)]) == {("JIT406", 40, None): "violation"}


def test_every_break_rule_has_a_row_with_its_gb_types_even_without_findings(truth, rules):
    per_code = sweep_score.score(truth, [], rules)["per_code"]
    break_rules = {code for code, meta in rules.items() if meta["kind"] == "break"}
    assert set(per_code) == break_rules
    assert per_code["JIT101"]["findings"] == 0 and "Data-dependent branching" in per_code["JIT101"]["gb_types"]
    assert (per_code["JIT101"]["own_gb_sites"], per_code["JIT101"]["own_gb_caught"]) == (1, 0)

"""The reach corpus's ground truth and verdicts, on hand-written records (no model library).

benchmarks/reach_run.py labels real libraries on the compiler; here its records are written
by hand so that what the committed numbers rest on is pinned alone: a fullgraph=True break
becomes a site of its own config, whole user stacks are kept, a finding one line off a site
catches it (±1) and is no violation, a finding on a clean traced line is one.
"""

from __future__ import annotations

import reach_run
import reach_score
import sweep_score

MODEL, COMMONS = "kokoro/model.py", "kokoro/modules.py"


def record(variant: str, *, breaks=(), fullgraph_break=None, traced: dict | None = None) -> dict:
    clean = not breaks
    entry, mode = variant.rsplit("-", 1)
    return {
        "unit": "kokoro/KModel", "variant": variant, "entry": entry, "mode": mode, "status": "ok",
        "protocol": "default-first", "calls": 1, "torch": "2.13.0+cpu", "source": "raw", "recompiles": [],
        "default_clean": clean, "executed": traced or {},
        "traced_clean" if clean else "traced_breaking_run": traced or {},
        "breaks": [{"gb_type": gb, "site": {"file": COMMONS, "line": line}, "location": f"torch/x.py:{line}",
                    "frames": [{"file": MODEL, "line": 10}, {"file": COMMONS, "line": line}], "call": 1,
                    "user_stack": [f"{MODEL}:10", f"{COMMONS}:{line}", "<outside>torch/x.py:3"]}
                   for gb, line in breaks],
        "fullgraph": {"ok": fullgraph_break is None, "break": fullgraph_break},
    }


def truth() -> sweep_score.Truth:
    records = [
        record("forward_with_tokens-eval", breaks=[("Data-dependent branching", 20)],
               fullgraph_break={"gb_type": "Attempted to wrap RNN", "gb_id": None,
                                "site": {"file": COMMONS, "line": 40},
                                "frames": [{"file": MODEL, "line": 11}, {"file": COMMONS, "line": 40}],
                                "user_stack": [f"{MODEL}:11", f"{COMMONS}:40"]}),
        record("forward-eval", traced={COMMONS: "30-32", MODEL: "5"}),
    ]
    return sweep_score.Truth(reach_run.reach_truth(records, {}))


def finding(path: str, line: int, code: str = "JIT101") -> dict:
    return {"path": path, "line": line, "end_line": line, "code": code, "name": "x", "kind": "break",
            "mode": None, "message": f"m{line}"}


def test_sites_keep_configs_entries_and_whole_stacks():
    sites = {(s["file"], s["line"]): s for s in truth().sites}
    default, fullgraph = sites[(COMMONS, 20)], sites[(COMMONS, 40)]
    assert default["configs"] == ["default"] and default["entries"] == ["forward_with_tokens"]
    assert default["user_stacks"] == [[f"{MODEL}:10", f"{COMMONS}:20", "<outside>torch/x.py:3"]]
    assert fullgraph["configs"] == ["fullgraph"] and fullgraph["fullgraph_only"] and fullgraph["modes"] == ["eval"]
    assert default["library"] == "kokoro"


def test_one_line_off_catches_and_clean_line_is_a_violation():
    result = reach_score.score_all(truth(), [finding(COMMONS, 21), finding(COMMONS, 31), finding(COMMONS, 50)], {})
    caught = {(s["file"], s["line"]): s["caught_by"] for s in result["sites"]}
    assert caught[(COMMONS, 20)] == ["JIT101"] and caught[(COMMONS, 40)] == []
    verdicts = {f["line"]: f["verdict"] for f in result["findings"]}
    assert verdicts[21].startswith("true-positive")
    assert verdicts[31] == "violation"
    assert verdicts[50] == "undecided (not reached)"


def test_a_finding_on_an_outer_frame_counts_for_stack_recall_only():
    result = reach_score.score_all(truth(), [finding(MODEL, 10)], {})
    site = next(s for s in result["sites"] if s["line"] == 20)
    assert site["caught_by"] == [] and site["caught_by_stack"] == ["JIT101"]


def test_sites_split_by_whether_a_whole_module_entry_reaches_them():
    whole_module = {("kokoro/KModel", "forward_with_tokens"): False, ("kokoro/KModel", "forward"): True}
    result = reach_score.score_all(truth(), [finding(COMMONS, 20)], {})
    summary = reach_score.tables(truth(), result, ["kokoro"], whole_module)
    assert {s["line"]: s["reached_from"] for s in result["sites"]} == {20: "non-forward", 40: "non-forward"}
    assert summary["by_reach"]["non-forward"]["sites"] == 2 and summary["by_reach"]["non-forward"]["caught"] == 1
    site = {"units": ["kokoro/KModel"], "entries": ["forward", "forward_with_tokens"]}
    assert reach_score.reached_from(site, whole_module) == "forward"


def test_a_deduplicated_break_is_recovered_from_its_own_library_records():
    # Dynamo logs a repeated break without its user stack; the same location in another
    # library's full record must not make the recovery ambiguous.
    shared = {"gb_type": "Data-dependent branching", "location": "<string>:1"}
    full = record("forward_with_tokens-eval", breaks=[("Data-dependent branching", 20)])
    full["breaks"][0]["location"] = "<string>:1"
    other = dict(record("forward-eval", breaks=[("Data-dependent branching", 7)]), unit="whisper/Whisper")
    other["breaks"][0].update(location="<string>:1", site={"file": "whisper/model.py", "line": 7})
    repeated = dict(record("forward-train"), default_clean=False, breaks=[dict(shared, call=1)])
    rows = reach_run.reach_truth([full, other, repeated], {})["sites"]
    site = next(s for s in rows if s["file"] == COMMONS and s["line"] == 20)
    assert site["modes"] == ["eval", "train"]

"""Ruff's output formats for CI and people: `full`, `junit` (JUnit XML) and `gitlab` (GitLab Code Quality)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree

from compile_lint.engine.lint import lint_text
from compile_lint.reporters.formats import render
from compile_lint.settings.config import Config
from tests.helpers import BREAKING_GATE, run_cli

PERF = "import torch\n\n\n@torch.compile\ndef f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n"


def _findings(text: str, path: str):
    return lint_text(text, path, Config(select=("ALL",)))


def test_junit_is_xml_with_a_suite_per_file_and_a_failing_case_per_finding():
    findings = _findings(BREAKING_GATE, "pkg/gate.py") + _findings(PERF, "pkg/f.py")
    root = ElementTree.fromstring(render("junit", findings, {}))
    assert root.tag == "testsuites" and root.get("tests") == str(len(findings)) == root.get("failures")
    suites = {suite.get("name"): suite for suite in root.findall("testsuite")}
    assert set(suites) == {"pkg/gate.py", "pkg/f.py"}
    [case] = suites["pkg/gate.py"].findall("testcase")
    assert case.get("name") == "org.compile-lint.JIT101" and case.get("classname") == "pkg/gate"
    assert (case.get("line"), case.get("column")) == ("7", "12")
    failure = case.find("failure")
    assert failure.get("message").startswith("`if` on a tensor value")
    assert failure.text.startswith("line 7, col 12, `if` on a tensor value")
    assert ElementTree.fromstring(render("junit", [], {})).get("tests") == "0"


def test_gitlab_has_the_code_quality_fields_and_stable_fingerprints():
    findings = _findings(BREAKING_GATE, "gate.py")
    issues = json.loads(render("gitlab", findings, {"gate.py": BREAKING_GATE}))
    [issue] = issues
    assert issue["check_name"] == "JIT101" and issue["description"].startswith("JIT101: `if` on a tensor")
    assert issue["severity"] == "major"
    assert issue["location"] == {"path": "gate.py", "lines": {"begin": 7, "end": 7}}
    # The same finding after lines are added above it: the same fingerprint (GitLab: not new, not fixed).
    moved_text = "# a comment\n# another\n" + BREAKING_GATE
    [moved] = json.loads(render("gitlab", _findings(moved_text, "gate.py"), {"gate.py": moved_text}))
    assert moved["location"]["lines"]["begin"] == 9 and moved["fingerprint"] == issue["fingerprint"]
    # Another file, or two equal findings in one file: fingerprints apart.
    [other] = json.loads(render("gitlab", _findings(BREAKING_GATE, "other.py"), {"other.py": BREAKING_GATE}))
    assert other["fingerprint"] != issue["fingerprint"]
    twice = findings + findings
    prints = [entry["fingerprint"] for entry in json.loads(render("gitlab", twice, {"gate.py": BREAKING_GATE}))]
    assert len(set(prints)) == 2


def test_full_shows_the_context_the_carets_and_the_fix():
    findings = _findings(BREAKING_GATE, "gate.py")
    text = render("full", findings, {"gate.py": BREAKING_GATE})
    assert text.endswith("\n\n")  # a blank line after each finding
    lines = text.rstrip("\n").splitlines()
    assert lines[0].startswith("gate.py:7:12: JIT101 [unsafe fix] ")
    assert "5 | class Gate(nn.Module):" in lines and "9 |         else:" in lines  # two lines either side
    assert "  |            ^^^^^^^^^^^ JIT101" in lines
    assert lines[-1].startswith("  = help: ") and lines[-1].endswith("(--fix --unsafe-fixes)")


def test_the_formats_from_the_command_line(tmp_path):
    (tmp_path / "gate.py").write_text(BREAKING_GATE)
    junit = run_cli("--output-format", "junit", "gate.py", cwd=tmp_path)
    assert junit.returncode == 1 and ElementTree.fromstring(junit.stdout).get("failures") == "1"
    gitlab = run_cli("--output-format", "gitlab", "gate.py", cwd=tmp_path)
    assert gitlab.returncode == 1 and json.loads(gitlab.stdout)[0]["location"]["path"] == "gate.py"
    full = run_cli("--output-format", "full", "gate.py", cwd=tmp_path)
    assert full.returncode == 1 and full.stdout.endswith("Found 1 finding in 1 file. 1 fixable with --unsafe-fixes.\n")
    refused = run_cli("--output-format", "junit", "--statistics", "gate.py", cwd=tmp_path)
    assert refused.returncode == 2


def test_fix_says_how_many_were_found_fixed_and_remain_as_ruff_does(tmp_path):
    from tests.test_cli_conventions import SAFE_EXAMPLE

    (tmp_path / "gate.py").write_text(BREAKING_GATE)  # its fix is unsafe: it remains
    (tmp_path / "safe.py").write_text(SAFE_EXAMPLE.code)
    fixed = run_cli("--fix", ".", cwd=tmp_path)
    assert fixed.returncode == 1
    assert fixed.stdout.splitlines()[-1] == "Found 2 findings (1 fixed, 1 remaining). 1 fixable with --unsafe-fixes."


def test_add_noqa_exits_0_as_ruff_does_when_some_findings_keep_no_directive(tmp_path):
    (tmp_path / "gate.py").write_text(BREAKING_GATE.replace("if x.sum() > 0:", "if x.sum() > \\\n                0:"))
    result = run_cli("--add-noqa", "gate.py", cwd=tmp_path)
    assert result.returncode == 0 and "no `# noqa` added" in result.stderr

"""Output formats: SARIF against the official 2.1.0 schema, GitHub escaping, text carets."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from compile_lint.core.diagnostics import Diagnostic
from compile_lint.engine.lint import lint_text
from compile_lint.reporters.formats import render
from compile_lint.rules import RULES_BY_CODE
from compile_lint.settings.config import Config
from tests.helpers import sarif_validator

jsonschema = pytest.importorskip("jsonschema")

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "ecosystem", "gated.py")
_validator = sarif_validator


def _cli(*args: str, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compile_lint", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def project(tmp_path):
    """A directory with findings with and without fixes, a syntax error and a file name needing escapes."""
    with open(FIXTURE) as handle:
        (tmp_path / "gated model.py").write_text(handle.read())
    (tmp_path / "fixable.py").write_text(RULES_BY_CODE["JIT101"].invalid[0].code)
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n")
    return tmp_path


def test_sarif_output_is_valid_sarif_2_1_0_and_matches_json(project):
    sarif = _cli("--output-format", "sarif", ".", cwd=str(project))
    plain = _cli("--output-format", "json", ".", cwd=str(project))
    assert sarif.returncode == plain.returncode == 1  # JIT000 (the syntax error) is a finding too
    log = json.loads(sarif.stdout)
    errors = sorted(_validator().iter_errors(log), key=str)
    assert not errors, "\n".join(error.message for error in errors[:5])
    findings = json.loads(plain.stdout)
    results = log["runs"][0]["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == \
        [(f["code"], f["line"]) for f in findings]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {"broken.py", "fixable.py", "gated%20model.py"}
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == ["JIT000", "JIT101"]
    assert rules[1]["helpUri"].endswith("/gb/gb0170.html")
    fixed = [r for r in results if "fixes" in r]
    assert fixed and fixed[0]["fixes"][0]["artifactChanges"][0]["replacements"]


def test_sarif_with_no_findings_and_absolute_paths_is_valid(tmp_path):
    empty = json.loads(render("sarif", []))
    assert not list(_validator().iter_errors(empty))
    assert empty["runs"][0]["results"] == []
    path = str(tmp_path / "model.py")
    with open(FIXTURE) as handle:
        diagnostics = lint_text(handle.read(), path, Config())
    log = json.loads(render("sarif", diagnostics))
    assert not list(_validator().iter_errors(log))
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "file://" + path


def test_sarif_names_no_repository_and_declares_the_base_of_relative_paths(tmp_path):
    """Relative URIs rest on a declared %SRCROOT% (the cwd); a path outside the cwd is an absolute file URI."""
    inside, outside = _finding(path="pkg/m.py"), _finding(path=os.path.join("..", "outside.py"))
    text = render("sarif", [inside, outside])
    assert "github.com" not in text
    log = json.loads(text)
    assert not list(_validator().iter_errors(log))
    run = log["runs"][0]
    assert "informationUri" not in run["tool"]["driver"]
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base == pathlib.Path.cwd().as_uri() + "/"
    locations = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]]
    assert locations[0] == {"uri": "pkg/m.py", "uriBaseId": "%SRCROOT%"}
    assert locations[1] == {"uri": pathlib.Path(os.path.abspath(os.path.join("..", "outside.py"))).as_uri()}


def _finding(path: str = "m.py", message: str = "msg", **changes) -> Diagnostic:
    values = dict(path=path, line=3, column=5, end_line=3, end_column=9, code="JIT101",
                  name="tensor-valued-if", kind="break", message=message)
    values.update(changes)
    return Diagnostic(**values)


def test_github_annotations_escape_data_and_properties():
    finding = _finding(path="src/a,b:c%d.py", message="100% of\nit: breaks, here\r")
    assert render("github", [finding]) == (
        "::error file=src/a%2Cb%3Ac%25d.py,line=3,col=5,endLine=3,endColumn=9,"
        "title=JIT101 tensor-valued-if::JIT101 100%25 of%0Ait: breaks, here%0D\n"
    )
    assert render("github", [_finding(kind="perf")]).startswith("::warning file=m.py,")


def test_text_output_puts_carets_under_the_finding():
    source = ("import torch\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
              "        if x.sum() > 0:\n            return x\n        return -x\n")
    diagnostics = lint_text(source, "m.py", Config())
    text = render("text", diagnostics, {"m.py": source})
    [diagnostic] = diagnostics
    assert text == (
        f"m.py:5:12: JIT101 [unsafe fix] {RULES_BY_CODE['JIT101'].message.split('; ')[0]}\n"
        "    5 |         if x.sum() > 0:\n"
        "      |            ^^^^^^^^^^^\n"
        f"      = help: {diagnostic.fix.message} (--fix --unsafe-fixes)\n"
    )


def test_text_output_for_tabs_and_multi_line_findings():
    source = "x = 1\n\ty = call(a,\n\t         b)\n"
    tabbed = _finding(line=2, column=2, end_line=3, end_column=12)
    assert render("text", [tabbed], {"m.py": source}) == (
        "m.py:2:2: JIT101 msg\n"
        "    2 |  y = call(a,\n"
        "      |  ^^^^^^^^^^^\n"  # to the end of the first line
    )
    # A finding on a line the source no longer has prints no snippet rather than failing.
    assert render("text", [_finding(line=40, end_line=40)], {"m.py": source}) == "m.py:40:5: JIT101 msg\n"


def test_concise_marks_fixes():
    diagnostics = lint_text(RULES_BY_CODE["JIT101"].invalid[0].code, "m.py", Config())
    assert render("concise", diagnostics).splitlines()[0].startswith("m.py:11:12: JIT101 [unsafe fix] ")


def test_sarif_names_the_calls_that_reach_a_helper_in_another_file():
    """A finding reached from another file's entry point lists the chain as related locations."""
    reached = Diagnostic("pkg/commons.py", 5, 8, 5, 19, "JIT101", "tensor-valued-if", "break",
                         "`if` on a tensor value breaks the graph (reached from model.py:14 in Net.forward)",
                         reached_from=(("pkg/model.py", 14, "Net.forward"),))
    log = json.loads(render("sarif", [reached]))
    assert not list(_validator().iter_errors(log))
    related = log["runs"][0]["results"][0]["relatedLocations"]
    assert related == [{"id": 0, "message": {"text": "reached from Net.forward"},
                        "physicalLocation": {"artifactLocation": {"uri": "pkg/model.py", "uriBaseId": "%SRCROOT%"},
                                             "region": {"startLine": 14}}}]

"""Ruff's flags a ruff user reaches for (issue 41.8): --fix-only, --ignore-noqa, --show-files,
--fixable / --extend-fixable / --unfixable (and their config keys), and ruff's json-lines,
pylint, rdjson and azure output formats. In process, through the console script's `main`."""

import json

import pytest

from compile_lint.frontends.arguments import build_parser
from compile_lint.frontends.cli import main
from compile_lint.rules import ALL_RULES
from tests.helpers import BREAKING_GATE
from tests.test_cli_conventions import SAFE_EXAMPLE

# The code of the rule whose safe fix SAFE_EXAMPLE shows (not a JIT1xx).
SAFE_EXAMPLE_CODE = next(rule.code for rule in ALL_RULES if SAFE_EXAMPLE in rule.invalid)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """gate.py: a JIT101 with an unsafe fix; safe.py: a finding with a safe fix."""
    (tmp_path / "pyproject.toml").write_text("[tool.compile-lint]\n")
    (tmp_path / "gate.py").write_text(BREAKING_GATE)
    (tmp_path / "safe.py").write_text(SAFE_EXAMPLE.code)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_fix_only_fixes_reports_nothing_left_and_exits_0(project, capsys):
    code, out, err = run(capsys, "--fix-only", ".")
    assert (code, out, err) == (0, "Fixed 1 finding (1 additional fix available with `--unsafe-fixes`).\n", "")
    assert (project / "safe.py").read_text() == SAFE_EXAMPLE.fixed
    assert (project / "gate.py").read_text() == BREAKING_GATE  # its fix is unsafe: left, and not reported
    # Nothing fixable left without --unsafe-fixes: ruff's line for it; -q and machine formats print nothing.
    assert run(capsys, "--fix-only", ".") == (0, "No findings fixed (1 fix available with `--unsafe-fixes`).\n", "")
    assert run(capsys, "--fix-only", "-q", ".") == (0, "", "")
    assert run(capsys, "--fix-only", "--output-format", "json", ".") == (0, "", "")
    code, out, _ = run(capsys, "--fix-only", "--unsafe-fixes", ".")
    assert (code, out) == (0, "Fixed 1 finding.\n")
    assert run(capsys, "--fix-only", ".") == (0, "", "")  # nothing found, nothing fixable: silent, as ruff
    assert run(capsys, "--fix-only", "missing.py")[0] == 2  # an error still exits 2


def test_ignore_noqa_reports_what_noqa_comments_silence(project, capsys):
    (project / "safe.py").unlink()
    (project / "gate.py").write_text(BREAKING_GATE.replace("if x.sum() > 0:", "if x.sum() > 0:  # noqa: JIT101"))
    (project / "exempt.py").write_text("# compile-lint: noqa\n" + BREAKING_GATE)
    assert run(capsys, ".")[0] == 0
    code, out, _ = run(capsys, "--ignore-noqa", "--output-format", "concise", ".")
    assert code == 1
    assert [line.split(" ")[:2] for line in out.splitlines()[:2]] == [["exempt.py:8:12:", "JIT101"],
                                                                       ["gate.py:7:12:", "JIT101"]]
    # The cache keys on it: a cached run without the flag does not answer a run with it.
    assert main([".", "-q"]) == 0 and main(["--ignore-noqa", "-q", "."]) == 1
    assert "# ignore-noqa: every `# noqa` comment is ignored  # command line" in run(
        capsys, "--ignore-noqa", "--show-settings", ".")[1]


def test_show_files_lists_what_a_run_would_lint_and_lints_nothing(project, capsys):
    (project / "third_party").mkdir()
    (project / "third_party" / "vendored.py").write_text(BREAKING_GATE)
    code, out, err = run(capsys, "--show-files", "--extend-exclude", "third_party", ".")
    assert (code, err) == (0, "")
    assert out.splitlines() == [str(project / "gate.py"), str(project / "safe.py")]
    code, out, err = run(capsys, "--show-files", "missing.py", "gate.py")
    assert code == 2 and "missing.py" in err and out.splitlines() == [str(project / "gate.py")]


def test_unfixable_drops_the_fix_and_fix_leaves_the_finding(project, capsys):
    code, out, _ = run(capsys, "--unfixable", "JIT1", "--output-format", "json", ".")
    by_code = {finding["code"]: finding for finding in json.loads(out)}
    assert by_code["JIT101"]["fix"] is None and by_code[SAFE_EXAMPLE_CODE]["fix"] is not None
    code, out, _ = run(capsys, "--fix", "--unsafe-fixes", "--unfixable", "JIT101", ".")
    assert code == 1 and (project / "gate.py").read_text() == BREAKING_GATE
    assert (project / "safe.py").read_text() == SAFE_EXAMPLE.fixed


def test_fixable_keys_in_the_config_and_extend_fixable_on_top(project, capsys):
    (project / "pyproject.toml").write_text('[tool.compile-lint]\nfixable = []\n')
    code, out, _ = run(capsys, "--output-format", "json", ".")
    assert all(finding["fix"] is None for finding in json.loads(out))
    code, out, _ = run(capsys, "--extend-fixable", "JIT101", "--output-format", "json", ".")
    fixes = {finding["code"]: finding["fix"] is not None for finding in json.loads(out)}
    assert fixes == {"JIT101": True, SAFE_EXAMPLE_CODE: False}
    # unfixable wins over extend-fixable, from the config file too.
    (project / "pyproject.toml").write_text('[tool.compile-lint]\nextend-fixable = ["JIT101"]\nunfixable = ["JIT1"]\n')
    code, out, _ = run(capsys, "--output-format", "json", ".")
    assert {f["code"]: f["fix"] is not None for f in json.loads(out)} == {"JIT101": False, SAFE_EXAMPLE_CODE: True}
    settings = run(capsys, "--show-settings", ".")[1]
    assert 'unfixable = ["JIT1"]  # ' + str(project / "pyproject.toml") in settings
    assert 'extend-fixable = ["JIT101"]' in settings and 'fixable = ["ALL"]  # default' in settings
    (project / "pyproject.toml").write_text('[tool.compile-lint]\nunfixable = ["JIT9999"]\n')
    code, _, err = run(capsys, ".")
    assert code == 2 and "unknown rule code or prefix 'JIT9999'" in err


def test_ruffs_json_lines_pylint_rdjson_and_azure_formats(project, capsys):
    _, json_out, _ = run(capsys, "--output-format", "json", ".")
    findings = json.loads(json_out)
    code, out, _ = run(capsys, "--output-format", "json-lines", ".")
    assert code == 1 and [json.loads(line) for line in out.splitlines()] == findings
    assert all(": " not in line.split('"message"')[0] for line in out.splitlines())  # compact, as ruff's
    code, out, _ = run(capsys, "--output-format", "pylint", ".")
    assert code == 1 and out.splitlines() == [f"{f['path']}:{f['line']}: [{f['code']}] {f['message']}"
                                              for f in findings]
    code, out, _ = run(capsys, "--output-format", "azure", ".")
    assert code == 1 and out.splitlines() == [
        f"##vso[task.logissue type=error;sourcepath={project / f['path']};linenumber={f['line']};"
        f"columnnumber={f['column']};code={f['code']};]{f['message']}" for f in findings]
    code, out, _ = run(capsys, "--output-format", "rdjson", ".")
    report = json.loads(out)
    assert code == 1 and not out.endswith("\n")  # as ruff prints it
    assert (report["severity"], report["source"]) == ("WARNING", {"name": "compile-lint"})
    gate = report["diagnostics"][0]
    assert gate["code"] == {"value": "JIT101"} and gate["message"] == findings[0]["message"]
    assert gate["location"] == {"path": str(project / "gate.py"), "range": {
        "start": {"line": findings[0]["line"], "column": findings[0]["column"]},
        "end": {"line": findings[0]["end_line"], "column": findings[0]["end_column"]}}}
    [edit] = findings[0]["fix"]["edits"]
    assert gate["suggestions"] == [{"text": edit["content"], "range": {
        "start": {"line": edit["line"], "column": edit["column"]},
        "end": {"line": edit["end_line"], "column": edit["end_column"]}}}]
    # None of them is text: --diff refuses them, as it refuses json.
    assert run(capsys, "--diff", "--output-format", "pylint", ".")[0] == 2
    assert json.loads(run(capsys, "--output-format", "rdjson", "--select", "JIT2", ".")[1])["diagnostics"] == []


def test_help_names_the_new_flags_and_formats():
    text = build_parser().format_help()
    for flag in ("--fix-only", "--ignore-noqa", "--show-files", "--fixable", "--extend-fixable", "--unfixable"):
        assert flag in text
    for name in ("json-lines", "pylint", "rdjson", "azure"):
        assert name in text

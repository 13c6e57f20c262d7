"""What a new user (and a ruff user) expects of the command line (issue 16): stdin, output
files, exclude and ignore flags, --quiet, --show-settings, --config overrides, JSON
statistics, refused flag combinations, --explain for every code, and no "All checks passed"
when a file could not be checked."""

import json
import os
import re
import sys

import pytest

from compile_lint.frontends.cli import explain, main
from compile_lint.core.codes import OTHER_CODES
from compile_lint.core.diagnostics import RULES_PAGE
from compile_lint.rules import ALL_RULES
from conftest import BREAKING_GATE, assert_findings_json, run_cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAFE_EXAMPLE = next(example for rule in ALL_RULES if rule.fix_applicability == "safe"
                    for example in rule.invalid if example.fixed is not None)
# Bytes that are not UTF-8 and carry no coding declaration (like `head -c 4096 /dev/urandom`).
UNDECODABLE = b"x = 1\n" + bytes(range(128, 256)) * 16


@pytest.fixture
def project(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "bad.py").write_text(BREAKING_GATE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_bad.py").write_text(BREAKING_GATE)
    (tmp_path / "pyproject.toml").write_text('[tool.compile-lint]\nper-file-ignores = { "tests/*" = ["JIT101"] }\n')
    return tmp_path


def lint(capsys, *args: str) -> tuple[int, str, str]:
    """Run the CLI in this process (the same `main` the console script calls)."""
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_an_undecodable_file_is_named_and_never_all_checks_passed(tmp_path):
    (tmp_path / "blob.py").write_bytes(UNDECODABLE)
    alone = run_cli("blob.py", cwd=tmp_path)
    assert alone.returncode == 2
    assert "All checks passed" not in alone.stdout + alone.stderr
    assert "compile-lint: error: blob.py: cannot decode as utf-8" in alone.stderr
    assert alone.stdout == "1 path could not be checked (see the errors above).\n"
    (tmp_path / "fine.py").write_text("x = 1\n")
    beside = run_cli(".", cwd=tmp_path)
    assert beside.returncode == 2 and "All checks passed" not in beside.stdout
    assert beside.stdout.endswith("1 path could not be checked (see the errors above); "
                                  "no findings in the other 1 file.\n")


@pytest.mark.parametrize("code", ["JIT000"] + [entry.code for entry in OTHER_CODES if entry.code != "JIT000"])
def test_explain_covers_codes_that_are_not_rules(code):
    text = explain(code)
    assert text is not None and text.startswith(code + " (")
    assert "Why:" in text and "Instead:" in text


def test_explain_from_the_command_line():
    result = run_cli("--explain", "JIT904")
    assert result.returncode == 0 and result.stdout.startswith("JIT904 (target-failed)")
    assert run_cli("--explain", "JIT999").returncode == 2


def test_every_finding_url_is_a_section_of_docs_rules_md():
    with open(os.path.join(ROOT, "docs", "rules.md"), encoding="utf-8") as handle:
        headings = re.findall(r"^## (JIT\d{3}) (\S+)$", handle.read(), re.MULTILINE)
    # GitHub's anchor for a heading: lower case, spaces to dashes.
    anchors = {f"{code} {name}".lower().replace(" ", "-") for code, name in headings}
    from compile_lint.core.diagnostics import rule_url

    codes = [(rule.code, rule.name) for rule in ALL_RULES] + [(e.code, e.name) for e in OTHER_CODES]
    for code, name in codes:
        url = rule_url(code, name)
        assert url.startswith(RULES_PAGE + "#") and url.split("#")[1] in anchors, code


def test_statistics_as_json(project, capsys):
    code, out, _ = lint(capsys, "--statistics", "--output-format", "json", "--select", "ALL", str(project / "src"))
    assert code == 1
    assert json.loads(out) == [{"code": "JIT101", "name": "tensor-valued-if", "count": 1, "fixable": True,
                                "fixable_count": 1}]
    code, out, _ = lint(capsys, "--statistics", "--output-format", "json", str(project / "tests"))
    assert code == 0 and json.loads(out) == []


@pytest.mark.parametrize("flags, message", [
    (["--diff", "--output-format", "json"], "--diff prints a unified diff, not findings"),
    (["--diff", "--output-format", "sarif"], "--diff prints a unified diff, not findings"),
    (["--statistics", "--output-format", "github"], "--statistics prints text or JSON"),
    (["--add-noqa", "--fix"], "--add-noqa rewrites files on its own"),
    (["--per-file-ignores", "JIT101"], "expected PATTERN:CODES"),
    (["--per-file-ignores", "tests/*:NOPE1"], "unknown rule code or prefix 'NOPE1'"),
])
def test_combinations_that_cannot_be_honoured_are_refused(project, capsys, flags, message):
    code, out, err = lint(capsys, *flags, str(project / "src"))
    assert code == 2 and out == ""
    assert message in err and len(err.splitlines()) == 1


def test_stdin_is_reported_and_configured_under_its_file_name(project):
    as_source = run_cli("--stdin-filename", "src/model.py", "-", cwd=project, input_text=BREAKING_GATE)
    assert as_source.returncode == 1
    assert as_source.stdout.startswith("src/model.py:7:12: JIT101 ")
    # per-file-ignores from pyproject.toml match the name, as they match a file on disk.
    as_test = run_cli("--stdin-filename", "tests/test_model.py", cwd=project, input_text=BREAKING_GATE)
    assert as_test.returncode == 0 and "All checks passed (1 file)." in as_test.stdout
    # With --force-exclude an excluded name reports nothing; with --fix the text passes through.
    excluded = run_cli("--force-exclude", "--extend-exclude", "legacy", "--fix", "--stdin-filename",
                       "legacy/model.py", "-", cwd=project, input_text=BREAKING_GATE)
    assert excluded.returncode == 0 and excluded.stdout == BREAKING_GATE


def test_stdin_fix_prints_the_fixed_source_and_reports_on_stderr(tmp_path):
    fixed = run_cli("--fix", "--stdin-filename", "model.py", "-", cwd=tmp_path, input_text=SAFE_EXAMPLE.code)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == SAFE_EXAMPLE.fixed
    assert "Fixed 1 finding." in fixed.stderr
    unsafe_left = run_cli("--fix", "-", cwd=tmp_path, input_text=BREAKING_GATE)
    assert unsafe_left.returncode == 1 and unsafe_left.stdout == BREAKING_GATE
    assert "-:7:12: JIT101 [unsafe fix]" in unsafe_left.stderr
    diff = run_cli("--diff", "--unsafe-fixes", "--stdin-filename", "model.py", cwd=tmp_path, input_text=BREAKING_GATE)
    assert diff.returncode == 1 and diff.stdout.startswith("--- model.py\n+++ model.py\n")
    broken = run_cli("--fix", "-", cwd=tmp_path, input_text="def f(:\n")
    assert broken.stdout == "def f(:\n" and broken.returncode == 1  # JIT000, and the text is kept
    assert not os.listdir(tmp_path)  # stdin runs write nothing, not even a cache


def test_output_file_gets_the_report(project, capsys):
    target = project / "reports" / "findings.json"
    code, out, _ = lint(capsys, "--output-format", "json", "--output-file", str(target), str(project / "src"))
    assert code == 1 and out == ""
    [finding] = assert_findings_json(target.read_text())
    assert finding["code"] == "JIT101"


def _fails_in_one_line(result, path: str, reason: str) -> None:
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"compile-lint: error: cannot write the report to {path}: {reason}")
    assert result.stderr.count("\n") == 1 and "report was not written" in result.stderr


@pytest.mark.parametrize("where, reason", [
    ("reports", "Is a directory"),  # an existing directory
    ("src/bad.py/findings.json", "Not a directory"),  # a directory that cannot be created
])
def test_an_output_file_that_cannot_be_written_stops_the_run_before_it_fixes(project, where, reason):
    (project / "reports").mkdir()
    result = run_cli("--fix", "--unsafe-fixes", "--output-file", where, "src", cwd=project)
    _fails_in_one_line(result, where, reason)
    assert (project / "src" / "bad.py").read_text() == BREAKING_GATE  # nothing was fixed without its report


def test_an_output_file_in_an_unwritable_directory_is_one_line(project, unprivileged_cli):
    (project / "locked").mkdir(mode=0o555)
    result = unprivileged_cli("--no-cache", "--output-file", "locked/findings.json", "src", cwd=project)
    _fails_in_one_line(result, "locked/findings.json", "Permission denied")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_report_that_fails_to_write_is_one_line_and_exit_2(project):
    result = run_cli("--no-cache", "--output-file", "/dev/full", "src", cwd=project)
    _fails_in_one_line(result, "/dev/full", "No space left on device")


def test_exclude_and_ignore_flags(project, capsys):
    src, tests = str(project / "src"), str(project / "tests")
    assert lint(capsys, "--exclude", "bad.py", src)[0] == 0
    assert lint(capsys, "--extend-exclude", "other.py,bad.py", src)[0] == 0
    # A file named on the command line is linted anyway, unless --force-exclude.
    assert lint(capsys, "--extend-exclude", "bad.py", str(project / "src" / "bad.py"))[0] == 1
    assert lint(capsys, "--extend-exclude", "bad.py", "--force-exclude", str(project / "src" / "bad.py"))[0] == 0
    assert lint(capsys, "--extend-ignore", "JIT101", src)[0] == 0
    assert lint(capsys, "--per-file-ignores", "src/*:JIT1", src)[0] == 0
    # --per-file-ignores replaces the configured table; --extend-per-file-ignores adds to it.
    assert lint(capsys, "--per-file-ignores", "src/*:JIT1", tests)[0] == 1
    assert lint(capsys, "--extend-per-file-ignores", "src/*:JIT1", tests, src)[0] == 0


def test_quiet_prints_findings_only(project, capsys):
    code, out, _ = lint(capsys, "-q", "--output-format", "concise", str(project / "src"))
    assert code == 1 and len(out.splitlines()) == 1 and ": JIT101 " in out
    assert lint(capsys, "--quiet", str(project / "tests")) == (0, "", "")


def test_show_settings_names_where_each_value_came_from(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    code, out, _ = lint(capsys, "--show-settings", "--extend-select", "JIT8", "--config", 'exclude = ["gen"]')
    assert code == 0
    lines = {line.split(" = ")[0]: line for line in out.splitlines() if " = " in line and not line.startswith("#")}
    assert lines["per-file-ignores"].endswith(f"# {project / 'pyproject.toml'}")
    assert lines["extend-select"] == 'extend-select = ["JIT8"]  # command line'
    assert lines["exclude"] == 'exclude = ["gen"]  # --config'
    assert lines["select"] == 'select = ["JIT"]  # default'
    assert f"# cache: {project / '.compile-lint-cache'}" in out
    # The output is the [tool.compile-lint] table itself: it parses back to the same values.
    table = tomllib.loads(out)["tool"]["compile-lint"]
    assert table["per-file-ignores"] == {"tests/*": ["JIT101"]} and table["exclude"] == ["gen"]


def test_config_takes_a_file_or_inline_overrides(project, capsys):
    src = str(project / "src")
    assert lint(capsys, "--config", 'select = ["JIT102"]', src)[0] == 0
    assert lint(capsys, "--config", "ignore=['JIT1']", "--config", 'extend-select = ["JIT8"]', src)[0] == 0
    other = project / "strict.toml"
    other.write_text('select = ["JIT1"]\n')
    assert lint(capsys, "--config", str(other), "--config", 'ignore = ["JIT101"]', src)[0] == 0
    for override, message in [("select = JIT1", "neither a config file nor a TOML `key = value`"),
                              ("bogus = 1", "unknown key 'bogus'"),
                              ('select = ["NOPE1"]', "unknown rule code or prefix 'NOPE1'")]:
        code, _, err = lint(capsys, "--config", override, src)
        assert code == 2 and message in err and len(err.splitlines()) == 1, err


def test_help_lists_the_new_flags():
    text = run_cli("--help").stdout
    for flag in ("--stdin-filename", "--output-file", "--add-noqa", "--exclude", "--extend-exclude",
                 "--force-exclude", "--extend-ignore", "--per-file-ignores", "-q, --quiet", "--show-settings",
                 "--config PATH | 'KEY = VALUE'", "--watch"):
        assert flag in text, flag

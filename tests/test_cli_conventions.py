"""What a new user (and a ruff user) expects of the command line (issue 16): stdin, output
files, exclude and ignore flags, --quiet, --show-settings, --config overrides, JSON
statistics, refused flag combinations, --explain for every code, and no "All checks passed"
when a file could not be checked."""

import json
import os
import re
import sys

import pytest

from compile_lint.core.codes import OTHER_CODES
from compile_lint.core.diagnostics import RULES_PAGE
from compile_lint.frontends.cli import main
from compile_lint.frontends.rule_command import explain
from compile_lint.rules import ALL_RULES
from tests.helpers import BREAKING_GATE, assert_findings_json, run_cli

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
    assert json.loads(out) == [{"code": "JIT101", "name": "tensor-valued-if", "count": 1, "fixable": False,
                                "fixable_count": 0}]  # its fix is unsafe
    code, out, _ = lint(capsys, "--statistics", "--output-format", "json", "--unsafe-fixes", str(project / "src"))
    assert json.loads(out)[0]["fixable"] is True and json.loads(out)[0]["fixable_count"] == 1
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
    assert "Found 1 finding (1 fixed, 0 remaining)." in fixed.stderr
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


@pytest.mark.parametrize("flag", ["--select", "--extend-select", "--ignore", "--extend-ignore"])
def test_an_empty_code_list_is_a_usage_error(project, flag):
    # Issue 25.10: `--select ""` selected nothing and passed. ruff refuses an empty selector too.
    result = run_cli(flag, "", "src", cwd=project)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"compile-lint: error: {flag} '': no rule code or prefix given "
                             "(e.g. JIT1, JIT101, or ALL)\n")
    assert run_cli(flag, " , ", "src", cwd=project).returncode == 2


def test_explain_explains_every_code_given():
    both = run_cli("--explain", "JIT101", "JIT201")
    assert both.returncode == 0, both.stderr
    assert both.stdout.startswith(explain("JIT101")) and both.stdout.endswith(explain("JIT201"))
    assert both.stdout == explain("JIT101") + "\n" + explain("JIT201")
    assert run_cli("--explain", "JIT101,JIT904").stdout == explain("JIT101") + "\n" + explain("JIT904")
    unknown = run_cli("--explain", "JIT101", "JIT999")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr == "compile-lint: error: unknown rule code 'JIT999'\n"


@pytest.mark.parametrize("flags, message", [
    (["--explain", "JIT101", "src"],
     "--explain explains rule codes and lints nothing: 'src' is not a code (JIT101, or ALL)"),
    (["src", "--explain", "JIT101"],
     "--explain explains rule codes and lints nothing: 'src' is not a code (JIT101, or ALL)"),
    (["--explain", "JIT101", "--fix"], "--explain explains rule codes and lints nothing: drop --fix"),
    (["--statistics", "--diff", "src"], "--statistics counts findings and --diff prints a diff: use one of them"),
])
def test_meaningless_combinations_are_refused(project, flags, message):
    result = run_cli(*flags, cwd=project)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == f"compile-lint: error: {message}\n"


@pytest.mark.parametrize("flags", [["--show-fixes"], ["--show-fixes", "--diff"]])
def test_show_fixes_without_fix_is_warned(project, flags):
    result = run_cli(*flags, "--no-cache", "src", cwd=project)
    assert result.returncode == (0 if "--diff" in flags else 1)  # JIT101's fix is unsafe: no diff
    assert result.stderr.startswith(
        "compile-lint: warning: --show-fixes lists the fixes --fix applies: without --fix it shows nothing\n")
    assert run_cli("--show-fixes", "--fix", "--no-cache", "tests", cwd=project).stderr == ""


def test_the_summary_counts_unsafe_fixes_as_fixable_not_as_more_findings(project):
    # Issue 25.11: "1 more with --unsafe-fixes" read as one more finding.
    result = run_cli("--no-cache", "src", cwd=project)
    assert result.stdout.endswith("Found 1 finding in 1 file. 1 fixable with --unsafe-fixes.\n")


def test_statistics_mark_fixable_only_what_fix_would_apply(project):
    # JIT101's fix is unsafe: fixable only with --unsafe-fixes, as ruff counts it.
    plain = run_cli("--no-cache", "--statistics", "--output-format", "json", "src", cwd=project)
    assert json.loads(plain.stdout) == [{"code": "JIT101", "name": "tensor-valued-if", "count": 1,
                                         "fixable": False, "fixable_count": 0}]
    assert run_cli("--no-cache", "--statistics", "src", cwd=project).stdout == "    1  JIT101      tensor-valued-if\n"
    unsafe = run_cli("--no-cache", "--statistics", "--unsafe-fixes", "src", cwd=project)
    assert unsafe.stdout == "    1  JIT101  [*] tensor-valued-if\n"


def test_a_fix_that_cannot_be_written_says_so(project, unprivileged_cli):
    os.chmod(project / "src", 0o555)
    try:
        result = unprivileged_cli("--no-cache", "--fix", "--unsafe-fixes", "src", cwd=project)
    finally:
        os.chmod(project / "src", 0o755)
    assert result.returncode == 2
    assert "cannot write fixed file, left unchanged: Permission denied" in result.stderr
    assert result.stdout.endswith("1 file could not be written (see the errors above).\n"), result.stdout
    assert "could not be checked" not in result.stdout


@pytest.mark.parametrize("call, words", [
    ("time.sleep(0.1)", "sleeping breaks the graph"),
    ("time.perf_counter()", "reading the clock breaks the graph"),
])
def test_jit403_says_what_the_call_does(tmp_path, call, words):
    (tmp_path / "m.py").write_text(f"import time\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
                                   f"    def forward(self, x):\n        {call}\n        return x\n")
    result = run_cli("--no-cache", "--output-format", "concise", "m.py", cwd=tmp_path)
    assert f": JIT403 {words}" in result.stdout


def test_jit201_on_a_returned_item_gives_the_real_reason(tmp_path):
    (tmp_path / "m.py").write_text("from torch import nn\n\n\nclass M(nn.Module):\n"
                                   "    def forward(self, x):\n        return x.sum().item()\n")
    result = run_cli("--no-cache", "--output-format", "concise", "m.py", cwd=tmp_path)
    assert ("no automatic fix: the number is returned (a tensor would change what the caller gets); "
            "by hand: return the tensor (`t.detach()`) and read the number in the caller" in result.stdout), \
        result.stdout


@pytest.mark.parametrize("layout", [{}, {"notes.txt": "no python\n"}, {"legacy/old.py": "x = 1\n"}])
def test_no_python_files_is_a_warning(tmp_path, layout):
    # Issue 25.13: as ruff, which says "No Python files found under the given path(s)".
    for name, text in layout.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    result = run_cli("--no-cache", "--extend-exclude", "legacy", ".", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr == "compile-lint: warning: No Python files found under the given path(s)\n"
    assert result.stdout == "All checks passed (0 files).\n"
    assert run_cli("--no-cache", "-q", ".", cwd=tmp_path).stderr == ""
    (tmp_path / "model.py").write_text("x = 1\n")
    assert run_cli("--no-cache", ".", cwd=tmp_path).stderr == ""


@pytest.mark.slow
def test_command_line_patterns_are_relative_to_the_working_directory_without_a_config(tmp_path):
    # Issue 25.8: with no config file, patterns were relative to the first path argument, so a
    # path copied from the report ("proj/tests/test_bad.py") did not match. Relative to the cwd, as ruff.
    (tmp_path / "proj" / "tests").mkdir(parents=True)
    (tmp_path / "proj" / "tests" / "test_bad.py").write_text(BREAKING_GATE)
    (tmp_path / "proj" / "model.py").write_text(BREAKING_GATE)
    reported = run_cli("--no-cache", "--output-format", "concise", "proj", cwd=tmp_path)
    assert "proj/tests/test_bad.py:7:12: JIT101" in reported.stdout
    ignored = run_cli("--no-cache", "--output-format", "concise", "--per-file-ignores", "proj/tests/*:JIT101",
                      "proj", cwd=tmp_path)
    assert "test_bad.py" not in ignored.stdout and "proj/model.py:7:12: JIT101" in ignored.stdout
    excluded = run_cli("--no-cache", "--output-format", "concise", "--extend-exclude", "proj/tests", "proj",
                       cwd=tmp_path)
    assert "test_bad.py" not in excluded.stdout and "proj/model.py:7:12: JIT101" in excluded.stdout
    # A pattern relative to the first path no longer matches from here; a basename still does.
    assert "test_bad.py" in run_cli("--no-cache", "--extend-exclude", "tests/test_bad.py", "proj",
                                    cwd=tmp_path).stdout
    assert "test_bad.py" not in run_cli("--no-cache", "--extend-exclude", "test_bad.py", "proj",
                                        cwd=tmp_path).stdout
    settings = run_cli("--show-settings", "proj", cwd=tmp_path).stdout
    assert f"# config file: none; paths are relative to {tmp_path}\n" in settings


@pytest.mark.parametrize("directive, left", [
    ("# compile-lint: noqa", []),
    ("# flake8: noqa", []),
    ("# compile-lint: noqa: JIT1", []),
    ("# compile-lint: noqa: JIT2", ["JIT101"]),
    ("    # compile-lint: noqa", ["JIT101"]),  # indented: not an own-line file directive at column 1, as flake8
    ("x = 1  # compile-lint: noqa", ["JIT101"]),  # after code: not a file directive
])
def test_a_file_level_noqa_exempts_the_file(tmp_path, directive, left):
    # Issue 25.9: as ruff's and flake8's file-wide noqa comments (which flake8 already honoured).
    (tmp_path / "m.py").write_text(directive + "\n" + BREAKING_GATE)
    result = run_cli("--no-cache", "--output-format", "json", "m.py", cwd=tmp_path)
    assert [finding["code"] for finding in assert_findings_json(result.stdout)] == left


@pytest.mark.parametrize("exemption, warned", [
    ("# compile-lint: noqa", False),
    ("# flake8: noqa", False),
    ("# compile-lint: noqa: JIT1", True),  # exempts some codes: a directive for the others still counts
])
def test_no_malformed_noqa_warning_in_a_file_exempted_as_a_whole(tmp_path, exemption, warned):
    # Issue 35 item 10: nothing in an exempted file is reported, so its malformed `# noqa` changes nothing.
    (tmp_path / "m.py").write_text(exemption + "\n" + BREAKING_GATE.replace("if x.sum() > 0:",
                                                                            "if x.sum() > 0:  # noqa: JIT1O1"))
    result = run_cli("--no-cache", "m.py", cwd=tmp_path)
    assert ("malformed # noqa" in result.stderr) == warned, result.stderr

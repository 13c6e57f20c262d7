"""The command line, as users run it: flags, exit codes, the JSON contract, bad input."""

import json
import os
import stat

import pytest

from tests.helpers import BREAKING_GATE, assert_findings_json, run_cli

BREAKING = BREAKING_GATE
CLEAN = """import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x, mask=None):
        if mask is not None:
            x = x * mask
        return torch.where(x.sum() > 0, x * 2, x / 2)
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "bad.py").write_text(BREAKING)
    (tmp_path / "good.py").write_text(CLEAN)
    return tmp_path


def test_exit_codes(project):
    assert run_cli(str(project)).returncode == 1
    assert run_cli(str(project / "good.py")).returncode == 0
    assert run_cli("--select", "NOPE1", str(project)).returncode == 2
    assert run_cli("--bogus-flag").returncode == 2
    assert run_cli("--exit-zero", str(project)).returncode == 0


def test_json_output_is_the_contract(project):
    result = run_cli("--output-format", "json", str(project))
    assert result.returncode == 1
    findings = assert_findings_json(result.stdout)
    assert len(findings) == 1
    finding = findings[0]
    assert list(finding) == ["path", "line", "column", "end_line", "end_column", "code", "name", "url",
                             "kind", "message", "gb_type", "fix", "mode", "condition", "help"]
    # A relative reference into the distribution's docs: there is no public repository to name.
    assert finding["url"] == "docs/rules.md#jit101-tensor-valued-if"
    assert "github.com" not in result.stdout
    assert finding["mode"] is None  # the finding happens in training and in eval() alike
    assert finding["condition"] is None  # and needs no static test to hold
    assert finding["message"].endswith("; " + finding["help"])  # what breaks, then what to do
    assert finding["path"] == str(project / "bad.py")
    assert (finding["line"], finding["column"], finding["end_line"], finding["end_column"]) == (7, 12, 7, 23)
    assert finding["code"] == "JIT101" and finding["name"] == "tensor-valued-if"
    assert finding["kind"] == "break" and finding["gb_type"] == "Data-dependent branching"
    fix = finding["fix"]
    assert fix["applicability"] == "unsafe"
    assert fix["edits"] == [{"line": 7, "column": 9, "end_line": 10, "end_column": 22,
                             "content": "y = torch.where(x.sum() > 0, x * 2, x / 2)"}]
    clean = run_cli("--output-format", "json", str(project / "good.py"))
    assert assert_findings_json(clean.stdout) == [] and clean.returncode == 0


def test_text_concise_and_github_formats(project):
    text = run_cli(str(project)).stdout
    assert f"{project / 'bad.py'}:7:12: JIT101 [unsafe fix]" in text
    assert "    7 |         if x.sum() > 0:" in text and "^^^^^^^^^^^" in text
    assert "Found 1 finding in 1 of 2 files. 1 fixable with --unsafe-fixes." in text
    concise = run_cli("--output-format", "concise", str(project)).stdout.splitlines()
    assert concise[0].startswith(f"{project / 'bad.py'}:7:12: JIT101 ")
    github = run_cli("--output-format", "github", str(project)).stdout
    assert github.startswith(f"::error file={project / 'bad.py'},line=7,col=12,endLine=7,endColumn=23,")


def test_select_ignore_extend_select(project):
    assert run_cli("--select", "JIT102", str(project)).returncode == 0
    assert run_cli("--ignore", "JIT101", str(project)).returncode == 0
    assert run_cli("--select", "JIT1", "--ignore", "JIT10", "--extend-select", "JIT101", str(project)).returncode == 1


def test_statistics(project):
    result = run_cli("--statistics", str(project))
    assert result.stdout.split() == ["1", "JIT101", "tensor-valued-if"]  # its fix is unsafe
    result = run_cli("--statistics", "--unsafe-fixes", str(project))
    assert result.stdout.split() == ["1", "JIT101", "[*]", "tensor-valued-if"]


def test_explain():
    result = run_cli("--explain", "JIT101")
    assert result.returncode == 0
    assert "JIT101 (tensor-valued-if)" in result.stdout
    assert "GB0170" in result.stdout and "gb0170.html" in result.stdout
    assert "Fixed:" in result.stdout
    assert run_cli("--explain", "JIT999").returncode == 2


@pytest.mark.slow
def test_diff_writes_nothing_and_fix_applies(project):
    before = (project / "bad.py").read_bytes()
    diff = run_cli("--diff", "--unsafe-fixes", str(project))
    assert diff.returncode == 1
    assert "+        y = torch.where(x.sum() > 0, x * 2, x / 2)" in diff.stdout
    assert (project / "bad.py").read_bytes() == before
    safe_only = run_cli("--fix", str(project))
    assert safe_only.returncode == 1 and (project / "bad.py").read_bytes() == before
    fixed = run_cli("--fix", "--unsafe-fixes", "--show-fixes", str(project))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Fixed" in fixed.stdout
    assert "torch.where" in (project / "bad.py").read_text()
    assert run_cli(str(project)).returncode == 0


def test_config_flag_and_pyproject(project):
    (project / "pyproject.toml").write_text('[tool.compile-lint]\nignore = ["JIT101"]\n')
    assert run_cli(str(project)).returncode == 0
    other = project / "strict.toml"
    other.write_text('select = ["JIT"]\n')
    assert run_cli("--config", str(other), str(project)).returncode == 1
    (project / "pyproject.toml").write_text('[tool.compile-lint]\nbogus = 1\n')
    result = run_cli(str(project))
    assert result.returncode == 2
    assert "unknown key 'bogus'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_noqa_from_cli(project):
    text = BREAKING.replace("if x.sum() > 0:", "if x.sum() > 0:  # noqa: JIT101")
    (project / "bad.py").write_text(text)
    assert run_cli(str(project)).returncode == 0


def test_bad_input_is_reported_and_other_files_still_linted(project):
    (project / "syntax.py").write_text("def broken(:\n    pass\n")
    (project / "latin.py").write_bytes(b"x = '\xff\xfe'\n")
    result = run_cli("--output-format", "concise", str(project), str(project / "missing.py"))
    assert result.returncode == 2
    assert f"{project / 'bad.py'}:7:12: JIT101" in result.stdout
    assert f"{project / 'syntax.py'}:1:12: JIT000 SyntaxError: invalid syntax" in result.stdout
    assert f"{project / 'latin.py'}: cannot decode: not valid utf-8" in result.stderr
    assert f"{project / 'missing.py'}: no such file or directory" in result.stderr


def test_unreadable_file(project, unprivileged_cli):
    os.chmod(project / "bad.py", 0)
    try:
        result = unprivileged_cli("--no-cache", str(project))
    finally:
        os.chmod(project / "bad.py", stat.S_IRUSR | stat.S_IWUSR)
    assert result.returncode == 2
    assert result.stderr == f"compile-lint: error: {project / 'bad.py'}: cannot read: Permission denied\n"
    assert result.stdout.endswith("1 path could not be checked (see the errors above); "
                                  "no findings in the other 1 file.\n")


def test_empty_tree_and_coding_cookie(tmp_path):
    assert run_cli(str(tmp_path)).returncode == 0
    (tmp_path / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nname = '\xe9'\n")
    assert run_cli(str(tmp_path)).returncode == 0


def test_parallel_run_matches_serial_order(tmp_path):
    for index in range(12):
        (tmp_path / f"m{index:02d}.py").write_text(BREAKING)
    serial = run_cli("-j", "1", "--output-format", "json", str(tmp_path))
    parallel = run_cli("-j", "2", "--output-format", "json", str(tmp_path))
    assert serial.stdout == parallel.stdout
    assert len(assert_findings_json(parallel.stdout)) == 12
    assert run_cli("-j", "0", str(tmp_path)).returncode == 2


def test_explain_names_each_code_once():
    result = run_cli("--explain", "JIT101", "JIT001", "jit101")
    assert result.returncode == 0
    assert result.stdout.count("JIT101 (tensor-valued-if)") == 1
    assert result.stdout.index("JIT101 (") < result.stdout.index("JIT001 (")


@pytest.mark.parametrize("argv", [["--bogus-flag"], ["--output-format", "nope"], ["clean", "--bogus"]])
def test_a_usage_error_is_one_line_and_a_pointer_to_help(argv):
    result = run_cli(*argv)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("compile-lint: error: "), result.stderr
    assert "--help" in lines[1] and "usage:" not in result.stderr


def test_diff_points_to_unsafe_fixes_when_only_those_exist(project):
    result = run_cli("--diff", str(project / "bad.py"))  # its one fix (torch.where) is unsafe
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr == "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"
    assert run_cli("--diff", str(project / "good.py")).stderr == "No fixes available.\n"


def test_rule_explains_one_code_or_all_as_ruff_does():
    from compile_lint.frontends.rule_command import all_codes, explain

    one = run_cli("rule", "JIT101")
    assert one.returncode == 0 and one.stdout == explain("JIT101")
    every = run_cli("rule", "--all")
    assert every.returncode == 0 and every.stdout == "\n".join(explain(code) for code in all_codes())
    assert run_cli("--explain", "ALL").stdout == every.stdout  # not "drop the paths"
    assert {"JIT101", "JIT000", "JIT900"} <= set(all_codes())
    listed = json.loads(run_cli("rule", "--all", "--output-format", "json").stdout)
    assert [entry["code"] for entry in listed] == all_codes()
    described = json.loads(run_cli("rule", "JIT101", "--output-format", "json").stdout)
    assert described["name"] == "tensor-valued-if" and described["fix"] == "unsafe"
    assert described["explanation"] == explain("JIT101")
    assert run_cli("rule").returncode == 2 and run_cli("rule", "JIT999").returncode == 2

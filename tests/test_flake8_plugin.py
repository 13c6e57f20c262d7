"""The flake8 plugin, driven through the real `flake8` executable."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from compile_lint.frontends.flake8_plugin import selection_from_flake8
from compile_lint.rules import ALL_RULES
from compile_lint.settings.selection import rule_enabled

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "ecosystem")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IF_MESSAGE = next(rule.message for rule in ALL_RULES if rule.code == "JIT101")
WHILE_MESSAGE = next(rule.message for rule in ALL_RULES if rule.code == "JIT102")
FINDING = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<column>\d+): (?P<code>[A-Z]+\d+)")


def flake8(*args: str, cwd: str = FIXTURES) -> subprocess.CompletedProcess:
    """Run the real flake8, isolated from any config file, in `cwd`."""
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def compile_lint(*args: str, cwd: str) -> subprocess.CompletedProcess:
    """Run the compile-lint CLI in `cwd`."""
    return subprocess.run([sys.executable, "-m", "compile_lint", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def findings(output: str) -> list[tuple[str, int, int, str]]:
    """(path, line, column, code) of every finding line in flake8 or concise output."""
    found = []
    for line in output.splitlines():
        match = FINDING.match(line)
        if match:
            found.append((os.path.normpath(match["path"]), int(match["line"]), int(match["column"]), match["code"]))
    return sorted(found)


def test_plugin_reports_findings_with_flake8_columns_and_noqa():
    result = flake8("--select", "JIT", "gated.py")
    assert result.stdout == f"gated.py:8:12: JIT101 {IF_MESSAGE}\n"
    assert result.returncode == 1
    assert result.stderr == ""


def test_noqa_is_left_to_flake8():
    result = flake8("--select", "JIT", "--disable-noqa", "gated.py")
    assert result.stdout == (
        f"gated.py:8:12: JIT101 {IF_MESSAGE}\n"
        f"gated.py:15:15: JIT102 {WHILE_MESSAGE}\n"
    )


def test_ignore_and_select_are_flake8s():
    assert flake8("--select", "JIT", "--ignore", "JIT101", "gated.py").stdout == ""
    expected = f"gated.py:15:15: JIT102 {WHILE_MESSAGE}\n"
    assert flake8("--select", "JIT102", "--disable-noqa", "gated.py").stdout == expected


def test_default_flake8_run_includes_the_plugin(tmp_path):
    (tmp_path / "model.py").write_text(open(os.path.join(FIXTURES, "gated.py")).read())
    result = flake8("model.py", cwd=str(tmp_path))
    assert f"model.py:8:12: JIT101 {IF_MESSAGE}" in result.stdout.splitlines()


def test_syntax_error_is_flake8s_e999_and_never_a_crash(tmp_path):
    (tmp_path / "broken.py").write_text("import torch\n\n\nclass Broken(torch.nn.Module:\n    pass\n")
    result = flake8("--select", "JIT,E999", "broken.py", cwd=str(tmp_path))
    assert result.stdout == "broken.py:4:30: E999 SyntaxError: invalid syntax\n"
    assert result.returncode == 1
    assert "Traceback" not in result.stderr


def test_off_by_default_rules_need_a_specific_selector():
    # compile-lint's rule: the bare prefix (flake8's `--select JIT` too) keeps perf hints off.
    assert not rule_enabled("JIT801", False, selection_from_flake8(["JIT"], None))
    assert not rule_enabled("JIT801", False, selection_from_flake8(None, None))
    assert rule_enabled("JIT801", False, selection_from_flake8(["E", "JIT"], ["JIT8"]))
    assert rule_enabled("JIT801", False, selection_from_flake8(["JIT801"], None))
    assert rule_enabled("JIT101", True, selection_from_flake8(None, None))


OFF_BY_DEFAULT = [rule for rule in ALL_RULES if not rule.default_enabled and rule.invalid]


@pytest.mark.skipif(not OFF_BY_DEFAULT, reason="no off-by-default rule with an example exists yet")
def test_extend_select_turns_on_off_by_default_rules(tmp_path):
    rule = OFF_BY_DEFAULT[0]
    (tmp_path / "model.py").write_text(rule.invalid[0].code)
    assert rule.code not in {f[3] for f in findings(flake8("model.py", cwd=str(tmp_path)).stdout)}
    assert rule.code not in {f[3] for f in findings(flake8("--select", "JIT", "model.py", cwd=str(tmp_path)).stdout)}
    selected = flake8("--extend-select", rule.code, "model.py", cwd=str(tmp_path)).stdout
    assert rule.code in {f[3] for f in findings(selected)}


def _same_findings(directory: str, extra: tuple[str, ...] = ()) -> list:
    ours = compile_lint("--output-format", "concise", *extra, ".", cwd=directory)
    theirs = flake8("--select", "JIT", *extra, ".", cwd=directory)
    assert ours.returncode in (0, 1), ours.stderr
    assert "Traceback" not in theirs.stderr, theirs.stderr
    assert findings(theirs.stdout) == findings(ours.stdout)
    return findings(ours.stdout)


@pytest.mark.slow
def test_flake8_matches_compile_lint_on_every_rule_example(tmp_path):
    for rule in ALL_RULES:
        for number, example in enumerate(rule.invalid + rule.valid):
            (tmp_path / f"{rule.code.lower()}_{number}.py").write_text(example.code)
    # flake8 keeps only the last --extend-select, so all codes go in one comma-separated value.
    off = ",".join(rule.code for rule in ALL_RULES if not rule.default_enabled)
    extra = ("--extend-select", off) if off else ()
    assert len(_same_findings(str(tmp_path), extra)) >= sum(len(rule.invalid) for rule in ALL_RULES)
    assert _same_findings(str(tmp_path))


@pytest.mark.skipif(not os.path.isdir(os.path.join(ROOT, "examples")), reason="examples/ not written yet")
def test_flake8_matches_compile_lint_on_examples():
    _same_findings(os.path.join(ROOT, "examples"))


@pytest.mark.parametrize("directive", ["# compile-lint: noqa: JIT101", "# compile-lint: noqa", "# flake8: noqa"])
def test_file_level_noqa_gives_the_clis_findings(tmp_path, directive):
    # Issue 25.9: flake8 honours its own file-wide noqa comment itself; compile-lint's is the plugin's.
    with open(os.path.join(FIXTURES, "gated.py"), encoding="utf-8") as handle:
        (tmp_path / "gated.py").write_text(directive + "\n" + handle.read().replace("  # noqa: JIT102", ""))
    ours = findings(compile_lint("--no-cache", "--output-format", "concise", "gated.py", cwd=str(tmp_path)).stdout)
    assert findings(flake8("--select", "JIT", "gated.py", cwd=str(tmp_path)).stdout) == ours
    assert [code for *_, code in ours] == (["JIT102"] if directive.endswith("JIT101") else [])

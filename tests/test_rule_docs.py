"""docs/rules.md is generated from the rules and never stale; `--explain` prints a rule."""

from __future__ import annotations

import subprocess
import sys

from compile_lint.reporters.docs import DOCS_PATH, GRAPH_BREAK_PAGE, generate
from compile_lint.rules import ALL_RULES

REGENERATE = "docs/rules.md is stale: run `python -m compile_lint.reporters.docs --write` and commit it"


def test_docs_rules_md_is_up_to_date():
    with open(DOCS_PATH, encoding="utf-8") as handle:
        assert handle.read() == generate(), REGENERATE


def test_every_rule_is_documented_with_its_graph_break_page_and_examples():
    text = generate()
    for rule in ALL_RULES:
        assert f"\n## {rule.code} {rule.name}\n" in text
        assert f"| [{rule.code}](#{rule.code.lower()}-{rule.name}) |" in text
        if rule.gb_id:
            assert GRAPH_BREAK_PAGE.format(gb=rule.gb_id.lower()) in text
        for example in rule.invalid:
            assert example.code.rstrip() in text
            if example.fixed is not None:
                assert example.fixed.rstrip() in text


def _docs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compile_lint.reporters.docs", *args],
                          capture_output=True, text=True, timeout=120)


def test_check_flags_a_stale_file_and_write_fixes_it(tmp_path):
    target = tmp_path / "rules.md"
    target.write_text("# Rules\n\nout of date\n")
    stale = _docs("--check", "--path", str(target))
    assert stale.returncode == 1
    assert "is stale" in stale.stderr
    assert _docs("--write", "--path", str(target)).returncode == 0
    assert _docs("--check", "--path", str(target)).returncode == 0
    assert target.read_text() == generate()


def test_explain_prints_the_rule_and_rejects_unknown_codes():
    rule = next(rule for rule in ALL_RULES if rule.gb_id)
    result = subprocess.run([sys.executable, "-m", "compile_lint", "--explain", rule.code.lower()],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    assert result.stdout.startswith(f"{rule.code} ({rule.name})\n")
    assert GRAPH_BREAK_PAGE.format(gb=rule.gb_id.lower()) in result.stdout
    assert rule.invalid[0].code.splitlines()[0] in result.stdout
    unknown = subprocess.run([sys.executable, "-m", "compile_lint", "--explain", "JIT999"],
                             capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2
    assert unknown.stderr == "compile-lint: error: unknown rule code 'JIT999'\n"

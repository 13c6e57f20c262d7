"""Bad input never crashes, never loses a byte, and never stops the other files."""

import os
import signal
import subprocess
import sys
import time

import pytest

from compile_lint.engine.api import fix_file, fix_text, lint_file
from compile_lint.engine.lint import lint_text
from compile_lint.settings.config import Config
from tests.helpers import run_cli

BREAKING = """import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        return x * 2 if x.sum() > 0 else x / 2
"""
FIXED = BREAKING.replace("x * 2 if x.sum() > 0 else x / 2", "torch.where(x.sum() > 0, x * 2, x / 2)")


def test_null_bytes_are_a_syntax_finding():
    findings = lint_text("import torch\nx = 1\x00\n", "m.py", Config())
    assert [d.code for d in findings] == ["JIT000"]
    assert "null bytes" in findings[0].message


def test_bom_crlf_mixed_newlines_and_tabs_lint_at_the_right_place():
    variants = {
        "bom": "\ufeff" + BREAKING,
        "crlf": BREAKING.replace("\n", "\r\n"),
        "mixed": BREAKING.replace("\n", "\r\n", 3),
        "tabs": BREAKING.replace("    ", "\t"),
    }
    for name, text in variants.items():
        findings = lint_text(text.lstrip("\ufeff"), f"{name}.py", Config())
        assert [(d.code, d.line) for d in findings] == [("JIT103", 7)], name


def test_mixed_newlines_survive_a_fix_byte_for_byte(tmp_path):
    path = tmp_path / "m.py"
    text = BREAKING.replace("\n", "\r\n", 3)
    path.write_bytes(text.encode())
    fix_file(str(path), Config(), unsafe=True)
    assert path.read_bytes() == text.replace("x * 2 if x.sum() > 0 else x / 2",
                                             "torch.where(x.sum() > 0, x * 2, x / 2)").encode()


@pytest.mark.slow
def test_hundred_thousand_line_file(tmp_path):
    filler = "".join(f"def helper_{i}(a, b):\n    return a + b * {i}\n\n\n" for i in range(25_000))
    text = BREAKING + "\n\n" + filler
    assert text.count("\n") > 100_000
    path = tmp_path / "big.py"
    path.write_text(text)
    result = lint_file(str(path), Config())
    assert result.error is None
    assert [(d.code, d.line) for d in result.diagnostics] == [("JIT103", 7)]


@pytest.mark.slow
def test_deep_nesting_is_linted_or_reported_not_crashed():
    head = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        y = "
    tail = "\n        return y if y.sum() > 0 else x\n"
    # 150 nested calls: Python compiles them, libcst's visitors need the deep stack.
    deep = head + "torch.relu(" * 150 + "x" + ")" * 150 + tail
    assert [d.code for d in lint_text(deep, "deep.py", Config())] == ["JIT103"]
    # 2,500 terms: as deep as Python compiles an expression (about 3,000 under its default limit).
    chain = head + " + ".join(["x"] * 2_500) + tail
    assert [d.code for d in lint_text(chain, "chain.py", Config())] == ["JIT103"]
    indented = "".join("    " * i + "if x:\n" for i in range(120)) + "    " * 120 + "pass\n"
    assert [d.code for d in lint_text("x = 1\n" + indented, "indent.py", Config())] == ["JIT000"]


def test_nesting_python_cannot_compile_costs_no_libcst_parse(monkeypatch):
    """Python refuses 201 nested brackets and a 5,000-term sum: JIT000 from Python's own parse, without
    libcst's (which takes seconds for the sum, and overflows its native stack on 3,000 nested calls)."""
    import compile_lint.engine.lint as engine

    def no_libcst_parse(text):
        raise AssertionError("libcst parsed a file Python cannot compile")

    monkeypatch.setattr(engine, "parse_module", no_libcst_parse)
    head = "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        y = "
    tail = "\n        if y.sum() > 0:\n            print(y)\n        return y\n"
    for depth in (201, 3_000):
        findings = lint_text(head + "torch.relu(" * depth + "x" + ")" * depth + tail, "calls.py", Config())
        assert [(d.code, d.line, d.message) for d in findings] == [
            ("JIT000", 7, "SyntaxError: too many nested parentheses; compile-lint cannot check this file")]
    findings = lint_text(head + " + ".join(["x"] * 5_000) + tail, "sum.py", Config())
    assert [(d.code, d.line, d.message) for d in findings] == [
        ("JIT000", 1, "file is nested too deeply for Python to compile; compile-lint cannot check this file")]


def test_empty_and_whitespace_only_files():
    for text in ("", "\n", "   \n\n", "# just a comment\n"):
        assert lint_text(text, "e.py", Config()) == []
        assert fix_text(text, "e.py", Config(), unsafe=True).text == text


def test_read_only_file_under_fix_is_reported_and_unchanged(tmp_path):
    path = tmp_path / "ro.py"
    path.write_text(BREAKING)
    os.chmod(path, 0o444)
    other = tmp_path / "rw.py"
    other.write_text(BREAKING)
    result = run_cli("--fix", "--unsafe-fixes", str(tmp_path))
    assert result.returncode == 2
    assert f"{path}: cannot write fixed file, left unchanged: file is read-only" in result.stderr
    assert path.read_text() == BREAKING
    assert other.read_text() == FIXED


def test_an_unreadable_directory_is_named_and_the_rest_linted(tmp_path, unprivileged_cli):
    (tmp_path / "unr" / "sub").mkdir(parents=True)
    (tmp_path / "unr" / "sub" / "hidden.py").write_text(BREAKING)
    (tmp_path / "ok.py").write_text(BREAKING)
    os.chmod(tmp_path / "unr" / "sub", 0)
    try:
        alone = unprivileged_cli("--no-cache", "unr/sub", cwd=tmp_path)
        around = unprivileged_cli("--no-cache", ".", cwd=tmp_path)
        inside = unprivileged_cli("--no-cache", "unr/sub/hidden.py", "ok.py", cwd=tmp_path)
    finally:
        os.chmod(tmp_path / "unr" / "sub", 0o755)
    assert alone.returncode == 2
    assert alone.stderr == "compile-lint: error: unr/sub: cannot read directory: Permission denied\n"
    assert alone.stdout == ""  # as for a missing path: the error line is the whole report
    assert around.returncode == 2
    assert around.stderr == "compile-lint: error: unr/sub: cannot read directory: Permission denied\n"
    assert "ok.py:7:25: JIT103" in around.stdout and "All checks passed" not in around.stdout
    assert inside.returncode == 2
    assert inside.stderr == "compile-lint: error: unr/sub/hidden.py: cannot access: Permission denied\n"
    assert "ok.py:7:25: JIT103" in inside.stdout and "All checks passed" not in inside.stdout


def test_path_that_disappears_mid_run(tmp_path):
    path = tmp_path / "gone.py"
    path.write_text(BREAKING)
    os.unlink(path)  # discovered, then deleted before it is read
    assert "cannot read" in lint_file(str(path), Config()).error
    assert "cannot read" in fix_file(str(path), Config()).error


def test_unknown_codes_in_config_and_cli(tmp_path):
    (tmp_path / "m.py").write_text(BREAKING)
    (tmp_path / "pyproject.toml").write_text('[tool.compile-lint]\nignore = ["JIT9999"]\n')
    result = run_cli(str(tmp_path))
    assert result.returncode == 2 and "unknown rule code or prefix 'JIT9999'" in result.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.compile-lint]\n')
    assert run_cli("--extend-select", "FOO1", str(tmp_path)).returncode == 2


def test_killed_fix_run_leaves_every_file_original_or_fully_fixed(tmp_path):
    count = 400
    for index in range(count):
        (tmp_path / f"m{index:03d}.py").write_text(BREAKING)
    process = subprocess.Popen(
        [sys.executable, "-m", "compile_lint", "--fix", "--unsafe-fixes", "-j", "2", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and process.poll() is None:
            fixed = sum(1 for p in tmp_path.glob("*.py") if p.read_text() == FIXED)
            if fixed >= 5:
                break
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    contents = [p.read_text() for p in sorted(tmp_path.glob("*.py"))]
    assert len(contents) == count
    assert all(text in (BREAKING, FIXED) for text in contents)
    # A SIGKILL may strand a `.compile-lint-*.tmp` file; it is never a .py file, so never linted.
    assert all(p.suffix == ".tmp" for p in tmp_path.iterdir() if p.suffix != ".py")
    assert any(text == FIXED for text in contents)

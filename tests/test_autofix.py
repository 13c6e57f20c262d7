"""--fix keeps every byte it does not mean to change and never leaves a broken file."""

import codecs
import os
import stat

import libcst as cst
import pytest

from compile_lint.core.diagnostics import Edit, Fix
from compile_lint.fixes import apply as apply_module
from compile_lint.fixes.apply import fix_file, fix_text
from compile_lint.fixes.edits import apply_fixes
from compile_lint.fixes.rendering import add_imports, diff_edits
from compile_lint.settings.config import Config
from tests.helpers import run_cli

SOURCE = """# leading comment
import torch
from torch import nn


class Gate(nn.Module):  # trailing comment
    def forward(self, x):
        h = x * 2  # keep me
        y = h if h.mean() > 0 else -h
        return y
"""
FIXED_LINE = "        y = torch.where(h.mean() > 0, h, -h)"


def test_fix_keeps_comments_and_layout():
    outcome = fix_text(SOURCE, "m.py", Config(), unsafe=True)
    assert outcome.text == SOURCE.replace("        y = h if h.mean() > 0 else -h", FIXED_LINE)
    assert [d.code for d in outcome.applied] == ["JIT103"]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("bom", [False, True])
def test_newlines_bom_and_permissions_are_kept(tmp_path, newline, bom):
    path = tmp_path / "m.py"
    data = SOURCE.replace("\n", newline).encode()
    path.write_bytes((codecs.BOM_UTF8 if bom else b"") + data)
    os.chmod(path, 0o640)
    result = fix_file(str(path), Config(), unsafe=True)
    assert result.written and result.error is None
    expected = SOURCE.replace("        y = h if h.mean() > 0 else -h", FIXED_LINE).replace("\n", newline).encode()
    assert path.read_bytes() == (codecs.BOM_UTF8 if bom else b"") + expected
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_fix_writes_through_a_symlink_to_its_target(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "real" / "m.py"
    target.write_bytes(codecs.BOM_UTF8 + SOURCE.replace("\n", "\r\n").encode())
    os.chmod(target, 0o640)
    link = tmp_path / "links" / "m.py"
    os.symlink("../real/m.py", link)
    result = run_cli("--fix", "--unsafe-fixes", str(link))
    assert result.returncode == 0, result.stderr
    assert os.readlink(link) == "../real/m.py"
    fixed = SOURCE.replace("        y = h if h.mean() > 0 else -h", FIXED_LINE)
    assert target.read_bytes() == codecs.BOM_UTF8 + fixed.replace("\n", "\r\n").encode()
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert sorted(os.listdir(tmp_path / "real")) == ["m.py"] and os.listdir(tmp_path / "links") == ["m.py"]


def test_latin1_file_keeps_its_encoding(tmp_path):
    path = tmp_path / "m.py"
    text = "# -*- coding: latin-1 -*-\n" + SOURCE.replace("keep me", "caf\xe9")
    path.write_bytes(text.encode("latin-1"))
    fix_file(str(path), Config(), unsafe=True)
    assert path.read_bytes() == text.replace("        y = h if h.mean() > 0 else -h", FIXED_LINE).encode("latin-1")


def test_unsafe_fixes_need_the_flag(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    result = fix_file(str(path), Config(), unsafe=False)
    assert not result.written and path.read_text() == SOURCE


def test_write_only_when_asked(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    result = fix_file(str(path), Config(), unsafe=True, write=False)
    assert result.outcome.changed and path.read_text() == SOURCE


def test_fix_that_raises_leaves_file_byte_for_byte(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(SOURCE)

    def broken_apply(text, fixes):
        raise RuntimeError("boom")

    monkeypatch.setattr(apply_module, "apply_fixes", broken_apply)
    result = fix_file(str(path), Config(), unsafe=True)
    assert not result.written
    assert "fix failed, file left unchanged: boom" in result.error
    assert path.read_text() == SOURCE


def test_fix_producing_invalid_code_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    real = apply_module.apply_fixes

    def garbling_apply(text, fixes):
        new, used = real(text, fixes)
        return new + "def (:\n", used

    monkeypatch.setattr(apply_module, "apply_fixes", garbling_apply)
    result = fix_file(str(path), Config(), unsafe=True)
    assert result.error and not result.written and path.read_text() == SOURCE


def test_read_only_file_is_reported_and_left_alone(tmp_path):
    directory = tmp_path / "ro"
    directory.mkdir()
    path = directory / "m.py"
    path.write_text(SOURCE)
    os.chmod(directory, 0o500)  # the rename into a read-only directory fails even for owners
    try:
        result = fix_file(str(path), Config(), unsafe=True)
    finally:
        os.chmod(directory, 0o700)
    if os.geteuid() != 0:
        assert result.error and "cannot write" in result.error
    assert path.read_text() in (SOURCE, SOURCE.replace("        y = h if h.mean() > 0 else -h", FIXED_LINE))
    assert not [name for name in os.listdir(directory) if name.endswith(".tmp")]


def test_overlapping_fixes_converge_over_rounds():
    nested = SOURCE.replace(
        "        y = h if h.mean() > 0 else -h",
        "        y = (h if h.mean() > 0 else -h) if h.sum() > 1 else h",
    )
    outcome = fix_text(nested, "m.py", Config(), unsafe=True)
    assert outcome.error is None
    assert "if" not in outcome.text.split("def forward")[1].split("return")[0].replace("# keep me", "")
    cst.parse_module(outcome.text)
    assert fix_text(outcome.text, "m.py", Config(), unsafe=True).text == outcome.text


def test_import_is_added_once_in_the_file_style():
    code = '"""Doc."""\nfrom __future__ import annotations\nfrom torch import nn\n\nx = 1\n'
    module = add_imports(cst.parse_module(code), ["torch", "torch"])
    assert module.code == ('"""Doc."""\nfrom __future__ import annotations\nfrom torch import nn\nimport torch\n'
                           '\nx = 1\n')
    assert add_imports(module, ["torch"]).code == module.code


def test_diff_edits_and_apply_round_trip():
    old = "a = 1\nb = 2\nc = 3\n"
    new = "a = 1\nb = 20\nc = 3\nd = 4\n"
    edits = diff_edits(old, new)
    assert edits[0] == Edit(2, 6, 2, 6, "0")
    text, used = apply_fixes(old, [Fix("safe", "m", edits)])
    assert text == new and len(used) == 1


@pytest.mark.parametrize("newline", ["\r", "\r\r\n", "\n\r"])
def test_edit_lines_count_a_lone_carriage_return_like_findings_do(newline):
    old = newline.join(["a = 1", "", "b = 2", ""])
    new = old.replace("b = 2", "b = 3")
    edits = diff_edits(old, new)
    line_of_b = 1 + old[: old.index("b")].count("\n") + old[: old.index("b")].replace("\r\n", "").count("\r")
    assert [(e.line, e.column, e.content) for e in edits] == [(line_of_b, 5, "3")]
    text, used = apply_fixes(old, [Fix("safe", "m", edits)])
    assert text == new and len(used) == 1


def test_overlapping_edits_are_deferred():
    old = "a = 1\n"
    first = Fix("safe", "first", (Edit(1, 5, 1, 6, "2"),))
    second = Fix("safe", "second", (Edit(1, 1, 1, 6, "b = 3"),))
    text, used = apply_fixes(old, [first, second])
    assert text == "a = 2\n" and used == [first]

"""`--add-noqa`: a `# noqa: CODE` for every current finding, merged with what is there,
idempotent, written atomically in the file's own encoding and line endings."""

import codecs
import os

from compile_lint.engine.lint import lint_text
from compile_lint.engine.suppressions import add_noqa
from compile_lint.frontends.cli import main
from compile_lint.settings.config import Config

MODEL = """import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:{first}
            x = x * 2
        while x.norm() > 1:{second}
            x = x / 2
        if x.max() > \\
                3:
            x = x - 1
        return x
"""


def run(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


def test_every_finding_gets_a_directive_and_a_second_run_changes_nothing(tmp_path, capsys):
    path = tmp_path / "model.py"
    path.write_text(MODEL.format(first="  # hot path", second="  # noqa: JIT1O1"))
    before = lint_text(path.read_text(), str(path), Config())
    assert [(d.line, d.code) for d in before] == [(7, "JIT101"), (9, "JIT102"), (11, "JIT101")]

    code, err = run(capsys, "--add-noqa", str(tmp_path))
    text = path.read_text()
    lines = text.splitlines()
    assert lines[6] == "        if x.sum() > 0:  # hot path  # noqa: JIT101"  # after the comment already there
    assert lines[8] == "        while x.norm() > 1:  # noqa: JIT1O1"  # a malformed directive is left to the user
    assert lines[10] == "        if x.max() > \\"  # a comment cannot follow a backslash continuation
    assert code == 0  # as ruff: two findings could not get a directive, and are listed
    assert f"{path}:9:15: JIT102 no `# noqa` added: its line has a malformed `# noqa`" in err
    assert f"{path}:11:12: JIT101 no `# noqa` added: its line ends inside a string or a backslash continuation" in err
    assert "Added `# noqa` for 1 finding on 1 line. 2 findings left as is." in err
    assert [(d.line, d.code) for d in lint_text(text, str(path), Config())] == [(9, "JIT102"), (11, "JIT101")]

    assert run(capsys, "--add-noqa", str(tmp_path))[0] == 0
    assert path.read_text() == text  # idempotent


def test_codes_merge_into_an_existing_directive(tmp_path, capsys):
    path = tmp_path / "model.py"
    path.write_text(MODEL.format(first="  # noqa: JIT102 checked by hand", second="").replace(
        "        if x.max() > \\\n                3:", "        if x.max() > 3:"))
    assert run(capsys, "--add-noqa", "-q", str(path)) == (0, "")
    lines = path.read_text().splitlines()
    assert lines[6] == "        if x.sum() > 0:  # noqa: JIT102, JIT101 checked by hand"
    assert lines[8] == "        while x.norm() > 1:  # noqa: JIT102"
    assert lines[10] == "        if x.max() > 3:  # noqa: JIT101"
    assert main([str(path)]) == 0  # nothing left to report
    capsys.readouterr()


def test_encoding_bom_and_line_endings_are_kept(tmp_path, capsys):
    source = MODEL.format(first="", second="  # tolérance").replace(
        "        if x.max() > \\\n                3:", "        if x.max() > 3:")
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(codecs.BOM_UTF8 + source.replace("\n", "\r\n").encode("utf-8"))
    latin = tmp_path / "latin.py"
    latin.write_bytes(("# -*- coding: latin-1 -*-\n" + source).encode("latin-1"))
    assert run(capsys, "--add-noqa", str(tmp_path))[0] == 0
    data = crlf.read_bytes()
    assert data.startswith(codecs.BOM_UTF8) and b"\n" not in data.replace(b"\r\n", b"")
    assert b"if x.sum() > 0:  # noqa: JIT101\r\n" in data
    assert "while x.norm() > 1:  # tolérance  # noqa: JIT102\n".encode("latin-1") in latin.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["crlf.py", "latin.py"]  # no temporary file left


def test_multi_line_strings_and_unparsable_files_are_left_alone(tmp_path, capsys):
    text = ('import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n'
            '        if x.sum() > len("""a\nb"""):\n            return x\n        return -x\n')
    addition = add_noqa(text, lint_text(text, "m.py", Config()))
    assert addition.text == text and not addition.added
    [(finding, why)] = addition.skipped
    assert finding.code == "JIT101" and "inside a string" in why
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n    pass\n")
    code, err = run(capsys, "--add-noqa", str(broken))
    assert code == 0 and "JIT000 no `# noqa` added: the file does not parse" in err
    assert broken.read_text() == "def f(:\n    pass\n"


def test_add_noqa_refuses_stdin_and_fix():
    assert main(["--add-noqa", "-"]) == 2
    assert main(["--add-noqa", "--diff", "."]) == 2

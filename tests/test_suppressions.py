"""`# noqa`: parsed as ruff and flake8 parse it, the same in the CLI, flake8 and the server."""

import os
import subprocess
import sys
import tokenize

import pytest

from compile_lint.core.source_index import SourceIndex
from compile_lint.engine.lint import lint_text
from compile_lint.engine.suppressions import _directives, is_suppressed, malformed_noqa, parse_noqa
from compile_lint.settings.config import Config

CODE = """import torch
from torch import nn

class M(nn.Module):
    def forward(self, x):
        if x.sum() > 0:{noqa}
            return x
        return -x
"""

# (comment on the flagged line, whether it silences JIT101)
CASES = [
    ("", False),
    ("  # noqa", True),
    ("  # NOQA", True),
    ("  # noqa because it runs eagerly", True),  # a bare noqa with words, no colon (ruff, flake8)
    ("  # noqa: JIT101", True),
    ("  # noqa:JIT101", True),
    ("  #noqa:JIT101", True),  # ruff reads it; flake8 alone needs the space after the hash
    ("  # noqa : JIT101", True),
    ("  # noqa: JIT1", True),  # a prefix, as in flake8 (ruff matches exact codes only)
    ("  # noqa:JIT102,JIT101", True),
    ("  # noqa: JIT102 JIT101", True),
    ("  # noqa: JIT102,,JIT101", True),  # an empty item: ruff warns and keeps the codes
    ("  # noqa: JIT101 eager on CPU", True),  # an explanation after the codes
    ("  # noqa: JIT101, Data-dependent branch", True),
    ("  # noqa: JIT101# why", True),
    ("  # keep: see issue 3  # noqa: JIT101", True),  # another comment first
    ("  # noqa: JIT1O1", False),  # a typo (letter O) must not become the prefix JIT1
    ("  # noqa: JIT101abc", False),
    ("  # noqa: JIT101;JIT102", False),
    ("  # noqa: foo", False),  # no code at all: malformed, silences nothing (ruff)
    ("  # noqa: jit101", False),  # codes are upper case (ruff; flake8 compares exactly)
    ("  # noqa: JIT", False),  # letters without digits is not a code
    ("  # noqa:", False),
    ("  # noqaJIT101", False),
    ("  # noqa: JIT2", False),
    ("  # noqa: E501", False),
    ("  # noqa: JIT1010", False),  # a longer code is not a prefix of JIT101
]


def _codes(noqa: str) -> list[str]:
    return [d.code for d in lint_text(CODE.format(noqa=noqa), "m.py", Config())]


@pytest.mark.parametrize("comment, silenced", CASES, ids=[repr(case[0].strip()) for case in CASES])
def test_noqa_grammar(comment, silenced):
    assert _codes(comment) == ([] if silenced else ["JIT101"])
    assert is_suppressed("JIT101", "        if x.sum() > 0:" + comment) == silenced


def test_malformed_directives_say_why():
    assert "not a code" in parse_noqa("# noqa: JIT1O1").problem
    assert "expected codes" in parse_noqa("# noqa: foo").problem
    assert parse_noqa("x = 1") is None
    assert parse_noqa("x = 1  # noqa").codes is None and parse_noqa("x = 1  # noqa").problem is None
    assert parse_noqa("x = 1  # noqa: A1, B2 see #3").codes == ("A1", "B2")


@pytest.mark.parametrize("text", [
    "x = 1  # noqa: JIT101\n",
    "x = 1  # noqa: foo\n",
    "s = '# noqa: foo'  # noqa: JIT101\n",
    "s = '# noqa: JIT101'\n",
    's = """\n# noqa: foo\n"""\n',
    "x = 1  # see # noqa: JIT1O1\r\ny = 2  # NOQA\r\n",
    "# flake8: noqa: foo\n",
    "# compile-lint: noqa: JIT1\nx = 1  # noqa:\n",
    "x = 1  # noqa: JIT101\x0cnoqa: foo\n",
])
def test_malformed_noqa_shortcut_agrees_with_the_tokenizer(text):
    # The shortcut only skips tokenizing; whenever it says "none", the tokenizer finds none.
    full = [(line, directive.problem) for line, _, _, directive, _ in _directives(SourceIndex(text))
            if directive.problem is not None]
    assert malformed_noqa(SourceIndex(text)) == full


def test_noqa_counts_lines_as_the_parser_does():
    # A form feed inside a comment is not a line break for Python: the noqa two lines
    # below still belongs to its own line (str.splitlines() would count one line more).
    source = CODE.format(noqa="  # noqa: JIT101").replace("class M", "# page\x0cbreak\nclass M")
    assert [d.code for d in lint_text(source, "m.py", Config())] == []


def _flake8(path: str, select: str = "JIT") -> list[str]:
    result = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", select, path],
                            capture_output=True, text=True, timeout=300)
    return result.stdout.splitlines()


def _cli(path: str) -> list[str]:
    result = subprocess.run([sys.executable, "-m", "compile_lint", "--output-format", "concise", path],
                            capture_output=True, text=True, timeout=300)
    return [line for line in result.stdout.splitlines() if line.startswith(path)]


@pytest.mark.slow
def test_cli_and_real_flake8_agree_on_well_formed_and_typo_codes(tmp_path):
    checks = {
        "  # noqa: JIT101": False,
        "  # noqa: JIT1": False,
        "  #noqa:JIT101": False,  # flake8 alone would report it; the plugin applies compile-lint's parser
        "  # noqa: JIT1O1": True,  # the typo from issue 16: reported by both
        "  # noqa: JIT102": True,
    }
    for index, (comment, reported) in enumerate(checks.items()):
        path = tmp_path / f"m{index}.py"
        path.write_text(CODE.format(noqa=comment))
        flake8_codes = [line.split()[1] for line in _flake8(str(path))]
        cli_codes = [line.split()[1] for line in _cli(str(path))]
        assert flake8_codes == cli_codes == (["JIT101"] if reported else []), comment


def test_flake8_reads_a_malformed_list_as_a_bare_noqa_for_every_plugin(tmp_path):
    # flake8 decides noqa for every plugin after the plugin runs: a noqa naming `foo` fails its
    # code pattern and counts as a bare noqa, for pyflakes' F401 exactly as for JIT101.
    # compile-lint (like ruff) silences nothing with it; the README says so.
    path = tmp_path / "m.py"
    source = CODE.format(noqa="  # noqa: foo")
    path.write_text(source.replace("import torch\n", "import torch\nimport os  # noqa: foo\n"))
    assert _flake8(str(path), select="JIT,F401") == [f"{path}:1:1: F401 'torch' imported but unused"]
    assert [line.split()[1] for line in _cli(str(path))] == ["JIT101"]
    os.remove(path)


def test_a_normal_run_warns_about_each_malformed_noqa_once_even_from_the_cache(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(CODE.format(noqa="  # noqa: JIT1O1").replace("import torch\n", "import torch  # noqa: foo\n"))
    for _ in range(2):  # the second run reads the findings from the cache
        result = subprocess.run([sys.executable, "-m", "compile_lint", "--output-format", "concise", str(path)],
                                capture_output=True, text=True, timeout=300)
        warnings = [line for line in result.stderr.splitlines() if "malformed" in line]
        assert warnings == [
            f"compile-lint: warning: {path}:1: malformed # noqa (expected codes after `noqa:` "
            "(e.g. `# noqa: JIT101`)): it suppresses nothing",
            f"compile-lint: warning: {path}:6: malformed # noqa (`JIT1O` is not a code: codes are "
            "upper-case letters then digits, apart): it suppresses nothing",
        ], result.stderr
        assert result.returncode == 1
    # A noqa comment inside a string is no directive: no warning.
    path.write_text('TEXT = "# noqa: foo"\n')
    result = subprocess.run([sys.executable, "-m", "compile_lint", "--no-cache", str(path)],
                            capture_output=True, text=True, timeout=300)
    assert "malformed" not in result.stderr and result.returncode == 0


UNUSED = """import torch
from torch import nn

class M(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # noqa: JIT101, JIT203, E501
            return x  # noqa: JIT101
        y = x + 1  # why: it was flagged once  # noqa: JIT203 eager only
        return -y  # noqa
"""


def test_unused_noqa_is_opt_in_and_its_safe_fix_removes_the_unused_codes():
    from compile_lint.settings.config import validate_codes

    validate_codes(["JIT001"], "--extend-select")  # a known code: selecting it is no usage error
    assert not [d for d in lint_text(UNUSED, "m.py", Config()) if d.code == "JIT001"]  # off by default
    found = [d for d in lint_text(UNUSED, "m.py", Config(extend_select=("JIT001",))) if d.code == "JIT001"]
    # JIT101 on line 6 suppressed the finding; E501 is no compile-lint code; a bare noqa lists none.
    assert [(d.line, d.message) for d in found] == [
        (6, "unused `# noqa` code: JIT203 suppressed nothing on this line"),
        (7, "unused `# noqa` code: JIT101 suppressed nothing on this line"),
        (8, "unused `# noqa` code: JIT203 suppressed nothing on this line"),
    ]
    assert all(d.fix is not None and d.fix.applicability == "safe" for d in found)
    from compile_lint.engine.api import fix_text

    fixed = fix_text(UNUSED, "m.py", Config(extend_select=("JIT001",))).text
    assert fixed.splitlines()[5:8] == [
        "        if x.sum() > 0:  # noqa: JIT101, E501",
        "            return x",
        "        y = x + 1  # why: it was flagged once  # eager only",
    ]
    assert not [d for d in lint_text(fixed, "m.py", Config(extend_select=("JIT001",))) if d.code == "JIT001"]


def test_the_source_index_reads_comments_from_tokens_once():
    source = SourceIndex("s = '# not a comment'  # a comment\nt = '''a\nb'''\nu = 1 + \\\n    2\n")
    assert source.comments == {1: (23, "# a comment")}
    assert source.closed_lines == {2, 4}  # inside the string, and the backslash continuation
    assert source.comments is source.comments  # tokenized once
    broken = SourceIndex("x = (\n")
    with pytest.raises(tokenize.TokenError):
        _ = broken.comments
    with pytest.raises(tokenize.TokenError):
        _ = broken.closed_lines  # the same error again, without tokenizing again

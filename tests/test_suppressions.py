"""`# noqa`: parsed as ruff and flake8 parse it, the same in the CLI, flake8 and the server."""

import os
import subprocess
import sys

import pytest

from compile_lint.settings.config import Config
from compile_lint.engine.lint import lint_text
from compile_lint.engine.suppressions import is_suppressed, parse_noqa

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
    ("  #noqa:JIT101", True),  # ruff reads it; flake8 alone needs `# noqa`
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
    # flake8 decides noqa for every plugin after the plugin runs: `# noqa: foo` fails its
    # code pattern and counts as a bare `# noqa`, for pyflakes' F401 exactly as for JIT101.
    # compile-lint (like ruff) silences nothing with it; the README says so.
    path = tmp_path / "m.py"
    source = CODE.format(noqa="  # noqa: foo")
    path.write_text(source.replace("import torch\n", "import torch\nimport os  # noqa: foo\n"))
    assert _flake8(str(path), select="JIT,F401") == [f"{path}:1:1: F401 'torch' imported but unused"]
    assert [line.split()[1] for line in _cli(str(path))] == ["JIT101"]
    os.remove(path)

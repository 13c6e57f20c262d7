"""`# noqa` handling."""

from compile_lint.linter.config import Config
from compile_lint.linter.engine import lint_text
from compile_lint.linter.suppressions import is_suppressed, noqa_codes

CODE = """import torch
from torch import nn

class M(nn.Module):
    def forward(self, x):
        if x.sum() > 0:{noqa}
            return x
        return -x
"""


def _codes(noqa: str) -> list[str]:
    return [d.code for d in lint_text(CODE.format(noqa=noqa), "m.py", Config())]


def test_bare_noqa_suppresses_everything_on_the_line():
    assert _codes("") == ["JIT101"]
    assert _codes("  # noqa") == []


def test_noqa_with_codes_suppresses_only_those():
    assert _codes("  # noqa: JIT101") == []
    assert _codes("  # noqa: JIT1") == []
    assert _codes("  # noqa: E501") == ["JIT101"]
    assert _codes("  # noqa:JIT102,JIT101") == []
    assert _codes("  # NOQA: jit101") == []


def test_noqa_parsing():
    assert noqa_codes("x = 1") is None
    assert noqa_codes("x = 1  # noqa") == frozenset()
    assert noqa_codes("x = 1  # noqa: A1, B2") == {"A1", "B2"}
    assert is_suppressed("JIT101", "# noqa: JIT")
    assert not is_suppressed("JIT101", "# noqa: JIT2")

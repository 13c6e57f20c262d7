"""Shared helpers: run the real CLI in a subprocess, parse snippets into a FileContext."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from compile_lint.linter.context import FileContext


# A model whose forward branches on tensor data (JIT101, with an unsafe torch.where fix).
BREAKING_GATE = """import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            y = x * 2
        else:
            y = x / 2
        return y
"""


def run_cli(*args: str, cwd=None, input_text=None) -> subprocess.CompletedProcess:
    """Run `python -m compile_lint ARGS` and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "compile_lint", *args],
        cwd=cwd, capture_output=True, text=True, input=input_text, timeout=300,
    )


def make_context(code: str, path: str = "m.py") -> FileContext:
    """A FileContext over dedented `code`."""
    return FileContext(path, cst.parse_module(textwrap.dedent(code)))


@pytest.fixture
def cli():
    return run_cli

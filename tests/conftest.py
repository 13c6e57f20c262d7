"""Shared helpers: run the real CLI in a subprocess, parse snippets into a FileContext."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from compile_lint.analysis.context import FileContext


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


SCHEMA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                           "findings.schema.json")


def assert_findings_json(text: str) -> list:
    """Parse a JSON findings report and validate it against docs/findings.schema.json."""
    import jsonschema

    data = json.loads(text)
    with open(SCHEMA_PATH, encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.validate(data, schema)
    return data


def make_context(code: str, path: str = "m.py") -> FileContext:
    """A FileContext over dedented `code`."""
    return FileContext(path, cst.parse_module(textwrap.dedent(code)))


def example_cases(kind: str, predicate=lambda rule, example: True) -> list:
    """(rule, index, example) for every rule's `kind` ("invalid"/"valid") examples that pass `predicate`."""
    from compile_lint.rules import ALL_RULES

    return [(rule, index, example) for rule in ALL_RULES for index, example in enumerate(getattr(rule, kind))
            if predicate(rule, example)]


def case_id(case) -> str:
    """`JIT101-0`: the rule's code and the example's index, for test ids."""
    rule, index, _ = case
    return f"{rule.code}-{index}"


def only(rule):
    """A configuration that runs `rule` alone."""
    from compile_lint.linter.config import Config

    return Config(select=(rule.code,))


def flagged_lines(rule, code: str) -> list[int]:
    """The lines `rule` alone flags in `code`."""
    from compile_lint.linter.engine import lint_text

    return sorted({d.line for d in lint_text(code, "example.py", only(rule)) if d.code == rule.code})


def reported_gb_types(result) -> set[str]:
    """The graph-break types a probe saw: each break's first line and the fullgraph error's type."""
    types = {reason.splitlines()[0] for reason in result.graph_breaks}
    for error in (result.fullgraph_error, result.compile_error):
        for prefix in ("Unsupported: ", "TorchRuntimeError: "):
            if error and error.startswith(prefix):
                types.add(error[len(prefix):])
    return types


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(autouse=True, scope="session")
def user_cache_in_a_temporary_directory(tmp_path_factory):
    """Runs outside a project cache in the user's cache directory: the suite's go to a temp one.

    Set in the environment, so that every CLI, flake8 and pre-commit subprocess inherits it.
    """
    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if saved is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = saved

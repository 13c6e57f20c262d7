"""A module compiled code calls that cannot be found (issue 41.7): said once per run on stderr, and
in --show-settings; never for the standard library, torch or numpy, installed modules, or imports
that compiled code does not call. In process, through the console script's `main`."""

import pytest

from compile_lint.frontends.cli import main
from tests.helpers import write_tree

MODEL = """
    import os
    import numpy as np
    import libcst
    import torch
    from torch import nn
    from helpermod import clip
    import otherhelper
    from optionalpkg import never_traced


    class Net(nn.Module):
        def forward(self, x):
            x = clip(x)
            y = otherhelper.scale(x) + libcst.__name__.count("c")
            return os.path.join("a", "b"), np.sin(y)


    def run_eagerly():
        return never_traced()
"""
HELPER = """
    def clip(x):
        if x.sum() > 0:
            return x
        return -x
"""
NOT_FOUND = "compile-lint: warning: {module}: not found; add its folder to `src` (compiled code calls it at {where}; " \
            "its code is not checked)"


@pytest.fixture
def project(tmp_path, monkeypatch):
    write_tree(tmp_path, {"pyproject.toml": "[tool.compile-lint]\n", "app/model.py": MODEL,
                          "app/second.py": MODEL, "vendor/helpermod.py": HELPER})
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_each_missing_module_compiled_code_calls_is_said_once(project, capsys):
    expected = [NOT_FOUND.format(module="helpermod", where="app/model.py:13"),
                NOT_FOUND.format(module="otherhelper", where="app/model.py:14")]
    code, out, err = run(capsys, ".")
    assert (code, err.splitlines()) == (0, expected), err  # two files import them: each said once
    assert run(capsys, ".")[2].splitlines() == expected  # a run answered from the cache says it too
    assert run(capsys, "--no-cache", "-j", "1", ".")[2].splitlines() == expected
    assert run(capsys, "-q", ".")[2] == ""
    settings = run(capsys, "--show-settings", ".")[1].splitlines()
    assert [line for line in settings if "not found" in line] == ["# " + line[len("compile-lint: warning: "):]
                                                                  for line in expected]


def test_a_module_found_through_src_is_followed_and_not_said(project, capsys):
    code, out, err = run(capsys, "--config", 'src = ["vendor", "."]', ".")
    assert err.splitlines() == [NOT_FOUND.format(module="otherhelper", where="app/model.py:14")]
    # The reach goes on into the helper: its break is found, reached from the model.
    assert code == 1 and "vendor/helpermod.py:2:8: JIT101" in out and "reached from app/model.py:13" in out

"""Dispatch, decorator wrappers and property reads (issue 30): what is spelled, and what is not followed.

The shapes that are followed are calibrated against Dynamo in tests/fixtures/reach/tables,
decorators and properties (tests/test_reach_fixtures.py). These tests hold the limits:
what the reach must not follow, because it cannot tell that Dynamo traces it.
"""

from __future__ import annotations

import ast

import pytest

from tests.helpers import run_cli, write_tree


def _call(source: str) -> ast.Call:
    return ast.parse(source).body[0].value


@pytest.mark.parametrize("source, spelling", [
    ('getattr(self, "forward")', "self.forward"),
    ('getattr(self, "_reduce_" + name)', "self._reduce_*"),
    ('getattr(self, f"_{mode}_step")', "self._*_step"),
    ('getattr(self, "_{}_step".format(mode))', "self._*_step"),
    ('getattr(self, "_%s_step" % mode)', "self._*_step"),
    ("getattr(self, name)", None),  # no constant part: nothing to enumerate
    ('getattr(self, name + "_")', None),
    ('getattr(self(), "x")', None),
])
def test_getattr_spellings(source, spelling):
    from compile_lint.analysis.project.dispatch_spellings import getattr_spelling

    assert getattr_spelling(_call(source)) == spelling


@pytest.mark.parametrize("source, spelling", [
    ("T.get(key, default)(x)", "T[]"),
    ('getattr(self, "_reduce_" + name)(x)', "self._reduce_*"),
    ("self.reduction_for(kind)(x)", "self.reduction_for()"),  # what the method returns is called
    ("getattr(self, name)(x)", None),
    ("f(x)", None),
])
def test_dispatched_callee_spellings(source, spelling):
    from compile_lint.analysis.project.dispatch_spellings import dispatched_callee

    assert dispatched_callee(_call(source).func) == spelling


def test_a_function_returning_a_dispatch_keeps_it_as_its_returned_alias():
    from compile_lint.analysis.project.dispatch_spellings import RETURNED_ALIAS
    from compile_lint.analysis.project.summariser import summarise_source

    summary = summarise_source("r.py", b"""
class Reducer:
    def reduction_for(self, kind):
        return getattr(self, f"{kind}_reduction")

    def made(self, kind):
        return TABLE[kind](self)
""")
    assert summary.functions["Reducer.reduction_for"].aliases[RETURNED_ALIAS] == ("self.*_reduction",)
    assert RETURNED_ALIAS not in summary.functions["Reducer.made"].aliases  # an instance made: not this shape


def test_table_spellings_keep_classes_and_functions_of_short_literals_only():
    from compile_lint.analysis.project.dispatch_spellings import table_spellings

    assert table_spellings(ast.parse('{"a": A, "b": mod.B, "c": A}').body[0].value) == ("{}A", "{}mod.B")
    assert table_spellings(ast.parse("[A, B]").body[0].value, lists=False) == ()
    long_list = "[" + ", ".join(f"F{i}" for i in range(65)) + "]"
    assert table_spellings(ast.parse(long_list).body[0].value) == ()


def test_what_the_reach_does_not_follow(tmp_path):
    """Look-alikes of each shape whose targets Dynamo would not (or might not) trace: no finding."""
    write_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/parts.py": """
            def register(name):
                def add(fn):
                    print("registering", name)
                    return fn
                return add


            class Stats:
                def __init__(self, x):
                    self._x = x

                @property
                def total(self):
                    print("total of", self._x)
                    return self._x.sum()

                @total.setter
                def total(self, value):
                    print("setting", value)
                    self._x = value

                @property
                def peak(self):
                    print("peak of", self._x)
                    return self._x.max()

                @property
                def peak_value(self):
                    return self._x.max()
            """,
        "pkg/model.py": """
            import torch
            from torch import nn

            from .parts import Stats, register


            @register("double")
            def double(x):
                return 2 * x


            class Net(nn.Module):
                def __init__(self, name="a"):
                    super().__init__()
                    self.name = name

                def forward(self, x):
                    stats = Stats(x)
                    getter = Stats.peak  # the property object: no getter runs
                    return getattr(self, self.name)(double(x)) + stats.peak_value

                def _hidden(self, x):
                    print("never reached by a pattern without a constant part")
                    return x
            """,
    })
    result = run_cli("--select", "ALL", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert result.stdout.startswith("All checks passed"), result.stdout


def test_a_property_with_a_setter_runs_its_getter(tmp_path):
    """Reading `stats.total` runs the getter, setter or not: Dynamo traces it (measured on torch 2.13: its
    print fails fullgraph=True), so the finding is there (an earlier reach skipped such properties)."""
    write_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/parts.py": """
            class Stats:
                def __init__(self, x):
                    self._x = x

                @property
                def total(self):
                    print("total of", self._x)
                    return self._x.sum()

                @total.setter
                def total(self, value):
                    self._x = value
            """,
        "pkg/model.py": """
            from torch import nn

            from .parts import Stats


            class Net(nn.Module):
                def forward(self, x):
                    return x + Stats(x).total
            """,
    })
    result = run_cli("--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert result.stdout.startswith("pkg/parts.py:9:9: JIT601"), result.stdout

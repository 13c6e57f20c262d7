"""Dispatch, decorator wrappers and property reads (issue 30): what is not followed.

The shapes that are followed are calibrated against Dynamo in tests/fixtures/reach/tables,
decorators and properties (tests/test_reach_fixtures.py). These tests hold the limits:
what the reach must not follow, because it cannot tell that Dynamo traces it.
"""

from __future__ import annotations

from tests.helpers import run_cli, write_tree


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
    assert result.stdout.startswith("pkg/parts.py:7:9: JIT601"), result.stdout

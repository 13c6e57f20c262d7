"""Cross-file analysis: base classes and helpers found in other files' source, never imported."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from compile_lint.analysis.project.symbols import SymbolIndex
from compile_lint.engine.api import ProjectIndex
from compile_lint.engine.lint import lint_text
from compile_lint.settings.config import Config
from tests.helpers import assert_findings_json, run_cli, write_tree

BASE = """
from torch import nn


class Layer(nn.Module):
    def forward(self, x):
        return self.mix(self.norm(x))

    def norm(self, x):
        return x

    def mix(self, x):
        return x * 2
"""

# No `torch` anywhere in this file: only the base class in layers.py makes it a module.
MODEL = """
from .layers import Layer


class Gate(Layer):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


class Counted(Layer):
    def mix(self, x):
        return x * x.sum().item()


class Plain:
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x
"""


def lint(root, relative: str, config: Config = None) -> list[tuple[int, str]]:
    """(line, code) of every finding in `root/relative`, linted as the CLI lints it (other files read too)."""
    path = str(root / relative)
    config = config or Config(select=("ALL",), root=str(root))
    with open(path, encoding="utf-8") as handle:
        return [(d.line, d.code) for d in lint_text(handle.read(), path, config, project=ProjectIndex())]


@pytest.fixture
def project(tmp_path):
    write_tree(tmp_path, {
        "pyproject.toml": "[tool.compile-lint]\nselect = [\"JIT\"]\n",
        "pkg/__init__.py": "",
        "pkg/layers.py": BASE,
        "pkg/model.py": MODEL,
    })
    return tmp_path


def test_a_base_class_from_another_file_makes_a_module(project):
    # Gate.forward (line 6) and Counted.mix, which Layer's inherited forward calls (line 13);
    # Plain is no module.
    assert lint(project, "pkg/model.py") == [(6, "JIT101"), (13, "JIT201")]


def test_absolute_imports_resolve_through_the_package_root_and_chains_of_bases(tmp_path):
    write_tree(tmp_path, {
        "app/__init__.py": "",
        "app/core/__init__.py": "from .blocks import Block as ExportedBlock\n",
        "app/core/base.py": "import torch\n\nclass Base(torch.nn.Module):\n    pass\n",
        "app/core/blocks.py": "from app.core.base import Base\n\nclass Block(Base):\n    pass\n",
        "app/heads/__init__.py": "",
        "app/heads/head.py": """
            from app.core import ExportedBlock
            from .. import core


            class Head(ExportedBlock):
                def forward(self, x):
                    return x.sum().item()


            class Other(core.base.Base):
                def forward(self, x):
                    return x.tolist()
            """,
    })
    assert lint(tmp_path, "app/heads/head.py") == [(7, "JIT201"), (12, "JIT203")]


def test_a_base_that_is_no_module_stays_plain(tmp_path):
    write_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/config.py": "class Config:\n    pass\n\nclass Derived(Config):\n    pass\n",
        "pkg/model.py": """
            import torch
            from .config import Derived
            from .missing import Nowhere


            class Settings(Derived):
                def forward(self, x):
                    return x.sum().item()


            class Unknown(Nowhere):
                def forward(self, x):
                    return x.sum().item()
            """,
    })
    assert lint(tmp_path, "pkg/model.py") == []


def test_installed_packages_are_read_from_sys_path_without_importing_them(tmp_path, monkeypatch):
    site = tmp_path / "site"
    write_tree(site, {
        "fancylib/__init__.py": "raise RuntimeError('importing fancylib runs code')\n",
        "fancylib/layers.py": "from torch import nn\n\nclass FancyLayer(nn.Module):\n    pass\n",
    })
    write_tree(tmp_path, {"model.py": """
        from fancylib.layers import FancyLayer


        class Mine(FancyLayer):
            def forward(self, x):
                return x.sum().item()
        """})
    monkeypatch.syspath_prepend(str(site))
    assert lint(tmp_path, "model.py") == [(6, "JIT201")]
    assert "fancylib" not in sys.modules


def test_the_index_records_what_each_file_read_and_rereads_changed_files(project):
    index = SymbolIndex([str(project)])
    model = str(project / "pkg" / "model.py")
    symbol = index.lookup(".layers.Layer", model)
    assert symbol is not None and symbol.kind == "class"
    assert index.dependencies(model) == {str(project / "pkg" / "layers.py")}
    assert index.self_calls(symbol, "forward") == {"mix", "norm"}
    layers = project / "pkg" / "layers.py"
    layers.write_text(layers.read_text() + "\n\nclass Extra(Layer):\n    pass\n")
    os.utime(layers, ns=(1, 1))  # a different stamp even within the clock's resolution
    assert index.lookup(".layers.Extra", model) is not None


def test_the_cache_is_invalidated_when_a_base_class_file_changes(project):
    def run():
        result = run_cli("--output-format", "json", "pkg", cwd=project)
        assert result.returncode in (0, 1), result.stderr
        return sorted((d["path"], d["line"], d["code"]) for d in assert_findings_json(result.stdout))

    model = os.path.join("pkg", "model.py")
    first = run()
    assert first == [(model, 6, "JIT101"), (model, 13, "JIT201")]
    assert run() == first  # from the cache
    # Layer stops being a module: model.py's cached findings must not survive (the program model's answer for
    # model.py, which its cache entry is keyed on, rests on layers.py).
    (project / "pkg" / "layers.py").write_text("class Layer:\n    def forward(self, x):\n        return self.mix(x)\n")
    assert run() == []


@pytest.mark.slow
def test_cross_file_findings_are_real_breaks(project):
    """The compiler agrees: Gate (its nn.Module base is in another file) and Counted (whose override
    the inherited forward calls) break the graph; Plain is no module at all."""
    script = textwrap.dedent("""
        import torch
        from compile_lint.verifier.probe import probe
        from pkg.model import Counted, Gate

        for cls in (Gate, Counted):
            result = probe(cls(), [(torch.randn(4),)])
            print(cls.__name__, bool(result.breaks), result.eager_error)
        """)
    result = subprocess.run([sys.executable, "-c", script], cwd=project, capture_output=True, text=True,
                            timeout=600)
    assert result.stdout.splitlines() == ["Gate True None", "Counted True None"], result.stderr


HELPERS = """
def longest(lengths):
    return lengths.max().item()


def width(shape):
    return shape[-1].item() if hasattr(shape[-1], "item") else shape[-1]


def scaled(x, factor):
    return x * factor
"""

PAD = """
import torch
from torch import nn

from .helpers import longest, scaled


class Pad(nn.Module):
    def forward(self, x, lengths):
        n = longest(lengths)
        y = scaled(x, 2.0)
        if y.sum() > 0:
            y = -y
        return y[:, :n]


class Fine(nn.Module):
    def forward(self, x):
        y = scaled(x.shape[-1], 2)
        return x[:, :y]
"""


@pytest.fixture
def helpers(tmp_path):
    write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/helpers.py": HELPERS, "pkg/pad.py": PAD})
    return tmp_path


def test_helpers_of_other_files_return_kinds_for_the_arguments_they_get(helpers):
    findings = lint_text((helpers / "pkg" / "pad.py").read_text(), str(helpers / "pkg" / "pad.py"),
                         Config(select=("ALL",), root=str(helpers)), project=ProjectIndex())
    assert [(d.line, d.code) for d in findings] == [(11, "JIT101")]
    # The helper is project code that Pad.forward reaches: its `.item()` is reported in its
    # own file, where Dynamo names the break, not again at the call.
    helper = str(helpers / "pkg" / "helpers.py")
    findings = lint_text((helpers / "pkg" / "helpers.py").read_text(), helper,
                         Config(select=("ALL",), root=str(helpers)), project=ProjectIndex())
    assert [(d.line, d.code) for d in findings] == [(2, "JIT201")]
    # Outside the cwd: an absolute path, in the message as in the chain.
    assert findings[0].message.endswith(f"(reached from {helpers / 'pkg' / 'pad.py'}:9 in Pad.forward)")
    assert findings[0].reached_from == ((str(helpers / "pkg" / "pad.py"), 9, "Pad.forward"),)


def test_an_installed_helper_that_calls_item_is_reported_at_the_projects_call(helpers, tmp_path_factory):
    # Outside the project (a package on sys.path), the helper is not linted: its `.item()`
    # is reported at the call, the traced line of the file being linted.
    site = tmp_path_factory.mktemp("site")
    write_tree(site, {"extlib/__init__.py": "", "extlib/helpers.py": HELPERS})
    pad = helpers / "pkg" / "pad.py"
    pad.write_text(pad.read_text().replace("from .helpers import longest, scaled",
                                           "from extlib.helpers import longest, scaled"))
    sys.path.insert(0, str(site))
    try:
        findings = lint_text(pad.read_text(), str(pad), Config(select=("ALL",), root=str(helpers)),
                             project=ProjectIndex())
    finally:
        sys.path.remove(str(site))
    assert [(d.line, d.code) for d in findings] == [(9, "JIT201"), (11, "JIT101")]
    assert findings[0].message.startswith("`longest()` (")
    assert "helpers.py:1) reads tensor data with `.item()`" in findings[0].message


@pytest.mark.slow
def test_a_helper_of_another_file_that_calls_item_really_breaks(helpers):
    script = textwrap.dedent("""
        import torch
        from compile_lint.verifier.probe import probe
        from pkg.pad import Fine, Pad

        print(probe(Pad().eval(), [(torch.randn(2, 6), torch.tensor([3, 4]))]).graph_breaks[:1])
        print(probe(Fine().eval(), [(torch.randn(2, 6),)]).clean)
        """)
    result = subprocess.run([sys.executable, "-c", script], cwd=helpers, capture_output=True, text=True,
                            timeout=600)
    lines = result.stdout.splitlines()
    assert lines and "item()" in lines[0] and lines[1] == "True", result.stdout + result.stderr


@pytest.mark.slow
def test_a_recurrent_module_made_in_a_base_class_of_another_file_is_flagged(tmp_path):
    """JIT409 reads `self.rnn = nn.LSTM(...)` in the base's own file (its imports, not the
    subclass's); a base that makes the same attribute a Linear stays silent. The compiler agrees."""
    write_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": """
            import torch.nn as tnn

            class Recurrent(tnn.Module):
                def __init__(self):
                    super().__init__()
                    self.rnn = tnn.LSTM(4, 4, batch_first=True)

            class Feedforward(tnn.Module):
                def __init__(self):
                    super().__init__()
                    self.rnn = tnn.Linear(4, 4)
            """,
        "pkg/layers.py": """
            from .base import Feedforward, Recurrent

            class Encoder(Recurrent):
                def forward(self, x):
                    out, _ = self.rnn(x)
                    return out

            class Mixer(Feedforward):
                def forward(self, x):
                    return self.rnn(x)
            """,
    })
    assert lint(tmp_path, "pkg/layers.py", Config(select=("JIT409",), root=str(tmp_path))) == [(5, "JIT409")]
    script = textwrap.dedent("""
        import torch
        from compile_lint.verifier.probe import probe
        from pkg.layers import Encoder, Mixer

        for cls in (Encoder, Mixer):
            result = probe(cls(), [(torch.randn(2, 3, 4),)])
            print(cls.__name__, not result.clean)
        """)
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            timeout=600)
    assert result.stdout.splitlines() == ["Encoder True", "Mixer False"], result.stderr


GUARDED = """
def longest(lengths):
    return lengths.max().item()


def longest_if(lengths, enabled):
    if not enabled:
        return None
    return lengths.max().item()


def first_or_longest(lengths):
    return lengths[0] if lengths.dim() == 0 else lengths.max().item()
"""


def test_an_installed_helper_whose_item_some_runs_skip_is_not_reported_at_the_call(helpers, tmp_path_factory):
    # A return before the `.item()`, or the `.item()` in one arm of a ternary: a call of the helper is
    # no certain break, so nothing is reported at it (the helper is not linted: it is installed); the
    # helper that always reads it is.
    site = tmp_path_factory.mktemp("site")
    write_tree(site, {"guarded/__init__.py": "", "guarded/helpers.py": GUARDED})
    pad = helpers / "pkg" / "guarded_pad.py"
    pad.write_text(textwrap.dedent("""
        from torch import nn

        from guarded.helpers import first_or_longest, longest, longest_if


        class Pad(nn.Module):
            def forward(self, x, lengths):
                n = longest_if(lengths, self.training)
                m = first_or_longest(lengths)
                return x, n, m, longest(lengths)
        """))
    sys.path.insert(0, str(site))
    try:
        findings = lint_text(pad.read_text(), str(pad), Config(select=("JIT201",), root=str(helpers)),
                             project=ProjectIndex())
    finally:
        sys.path.remove(str(site))
    assert [(d.line, d.code, d.message.split(" (")[0]) for d in findings] == [(11, "JIT201", "`longest()`")]


def test_a_mixin_whose_every_subclass_is_a_module_runs_forward_when_it_calls_self(tmp_path):
    """`logits = self(ids)` in a `generate` inherited from a mixin of another file: every class made from
    the mixin is an nn.Module, so the call runs forward and a tensor `if` on its result breaks (the fixture
    tests/fixtures/reach/new_user measures it on torch 2.13). A mixin a plain class uses too says nothing."""
    write_tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/generation.py": """
            class GenerationMixin:
                def generate(self, ids):
                    logits = self(ids)
                    if logits.sum() > 0:
                        return logits * 2
                    return logits

            class Plain:
                def run(self, ids):
                    out = self(ids)
                    if out.sum() > 0:
                        return out
                    return ids
            """,
        "pkg/model.py": """
            import torch
            from torch import nn

            from .generation import GenerationMixin, Plain

            class Chat(GenerationMixin, nn.Module):
                def forward(self, ids):
                    return ids * 2

            class Caller(Plain):
                def __call__(self, ids):
                    return 3

            compiled = torch.compile(Chat().generate)
            other = torch.compile(Caller().run)
            """,
    })
    result = run_cli("--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert [line.split(" ")[0:2] for line in result.stdout.splitlines() if line.startswith("pkg/")] == [
        ["pkg/generation.py:4:12:", "JIT101"]], result.stdout

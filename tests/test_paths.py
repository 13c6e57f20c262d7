"""Path conditions: the mode (`self.training`) a finding needs, and the `mode` setting."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from compile_lint.analysis.file.paths import BOTH, INFERENCE, NEVER, TRAINING
from compile_lint.engine.lint import lint_text
from compile_lint.settings.config import Config, ConfigError, parse_config
from compile_lint.testing import make_context
from tests.helpers import assert_findings_json, run_cli

# Each `.item()` / `.tolist()` line is a break in the modes its comment names.
MODEL = """import torch
from torch import nn


class Layer(nn.Module):
    def __init__(self, p=0.1):
        super().__init__()
        self.p = p
        self.gradient_checkpointing = False

    def forward(self, x, labels=None):
        a = x.sum().item()  # both
        if self.training and self.gradient_checkpointing:
            b = x.sum().item()  # training
        else:
            c = x.sum().item()  # both
        if labels is not None:
            d = x.sum().item()  # both: labels are an input, not a mode
        e = x.sum().item() if not self.training else 0  # inference
        f = self.training and x.sum().item()  # training
        if not self.training:
            g = x.sum().item()  # inference
            return self.infer(x)
        h = x.sum().item()  # training
        return self.train_step(x, self.training)

    def infer(self, x):
        return x.sum().item()  # inference

    def train_step(self, x, training):
        if training:
            return x.tolist()  # training
        return x.tolist()  # never: training is True on every call
"""

EXPECTED = {
    "a": BOTH, "b": {TRAINING}, "c": BOTH, "d": BOTH, "e": {INFERENCE}, "f": {TRAINING},
    "g": {INFERENCE}, "h": {TRAINING},
}


def _calls(context, method: str) -> list[cst.Call]:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == method:
                found.append(node)

    context.module.visit(_Find())
    return found


def test_modes_of_branches_short_circuits_early_returns_and_helpers():
    context = make_context(MODEL)
    functions = {f.name.value: f for f in context.regions.functions}
    forward = functions["forward"]
    items = _calls(context, "item")  # in source order: a..h in forward, then infer's
    for name, call in zip("abcdefgh", items):
        assert context.modes_at(call, forward) == EXPECTED[name], name
    assert context.modes_at(items[8], functions["infer"]) == {INFERENCE}
    first, second = _calls(context, "tolist")
    assert context.modes_at(first, functions["train_step"]) == {TRAINING}
    assert context.modes_at(second, functions["train_step"]) == NEVER


def test_findings_carry_the_mode_in_the_message_and_the_json_field(tmp_path):
    findings = lint_text(textwrap.dedent(MODEL), "layer.py", Config(select=("JIT201", "JIT203")))
    modes = [(d.line, d.mode) for d in findings]
    assert modes == [(12, None), (14, "training"), (16, None), (18, None), (19, "inference"), (20, "training"),
                     (22, "inference"), (24, "training"), (28, "inference"), (32, "training")]
    assert findings[1].message.endswith("(only when self.training)")
    assert findings[4].message.endswith("(only when not self.training)")
    assert "only when" not in findings[0].message
    (tmp_path / "layer.py").write_text(textwrap.dedent(MODEL))
    result = run_cli("--output-format", "json", "--select", "JIT201", "layer.py", cwd=tmp_path)
    report = assert_findings_json(result.stdout)
    assert [d["mode"] for d in report][:2] == [None, "training"]


@pytest.mark.parametrize("mode,dropped", [("both", None), ("inference", "training"), ("training", "inference")])
def test_the_mode_setting_drops_the_other_modes_findings(tmp_path, mode, dropped):
    (tmp_path / "pyproject.toml").write_text(f'[tool.compile-lint]\nmode = "{mode}"\n')
    (tmp_path / "layer.py").write_text(textwrap.dedent(MODEL))
    result = run_cli("--output-format", "json", "--select", "JIT201,JIT203", "layer.py", cwd=tmp_path)
    report = assert_findings_json(result.stdout)
    seen = {d["mode"] for d in report}
    assert seen == {None, TRAINING, INFERENCE} - ({dropped} if dropped else set())
    flag = run_cli("--output-format", "json", "--select", "JIT201,JIT203", "--mode", "both", "layer.py",
                   cwd=tmp_path)
    assert len(json.loads(flag.stdout)) == 10  # the command line wins over the config


def test_a_bad_mode_is_a_config_error():
    with pytest.raises(ConfigError, match="mode must be one of"):
        parse_config({"tool": {"compile-lint": {"mode": "eval"}}}, "pyproject.toml", ".")


def test_flake8_honours_the_mode_setting(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.compile-lint]\nmode = "inference"\n')
    (tmp_path / "layer.py").write_text(textwrap.dedent(MODEL))
    result = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "JIT201", "layer.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    lines = sorted(int(line.split(":")[1]) for line in result.stdout.splitlines())
    assert lines == [12, 16, 18, 19, 22, 28], result.stderr


def test_dynamo_specialises_on_self_training():
    """The compiler agrees: training-only breaks never happen in a compiled eval() model."""
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(textwrap.dedent("""
        import torch
        from torch import nn

        class LayerDrop(nn.Module):
            def forward(self, x):
                skip = False
                if self.training:
                    skip = torch.rand([]) < 0.5
                if not skip:
                    x = x * 2
                if not self.training:
                    return x
                return x + x.sum().item()
        """), "layerdrop.py", "exec"), namespace)
    model = namespace["LayerDrop"]().eval()
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    compiled(torch.randn(4))
    model.train()
    with pytest.raises(Exception, match="Data-dependent branching"):
        compiled(torch.randn(4))


def test_a_flag_that_is_a_tensor_only_past_self_training_needs_training():
    # wav2vec2's layer-drop: `skip = self.training and p < drop` is False in eval().
    code = """
    import torch
    from torch import nn
    from transformers.utils import is_torchdynamo_compiling


    class Encoder(nn.Module):
        def forward(self, x, first):
            skip = self.training and torch.rand([]) < 0.5
            if not skip:
                x = x * 2
            if not is_torchdynamo_compiling() and first.any():
                x = x + 1
            return x
    """
    findings = lint_text(textwrap.dedent(code), "encoder.py", Config(select=("JIT101",)))
    # the second `if` is eager-only on its right side: `first.any()` never runs under compile
    assert [(d.line, d.mode) for d in findings] == [(10, "training")]


def test_a_finding_behind_a_static_test_names_it_in_the_message_and_the_json():
    code = textwrap.dedent("""
    import torch
    from torch import nn

    class Clamp(nn.Module):
        def forward(self, x, pixel_values=None):
            if x.dtype == torch.float16 and torch.isinf(x).any():
                x = x.clamp(-1, 1)
            if self.training and pixel_values is not None and (pixel_values > 0).all():
                x = x * 2
            if x.sum() > 0:
                x = x / 2
            if self.config["rope_type"] != "default" and x.mean() > 0:
                x = x + 1
            return x
    """)
    findings = lint_text(code, "m.py", Config(select=("JIT101",)))
    assert [(d.line, d.mode, d.condition) for d in findings] == [
        (7, None, "x.dtype == torch.float16"), (9, TRAINING, "pixel_values is not None"), (11, None, None),
        (13, None, 'self.config["rope_type"] != "default"')]
    assert findings[0].message.endswith("(breaks only when `x.dtype == torch.float16`)")
    assert findings[1].message.endswith("(only when self.training) (breaks only when `pixel_values is not None`)")
    report = assert_findings_json(json.dumps([d.to_json() for d in findings]))
    assert [d["condition"] for d in report][:3] == ["x.dtype == torch.float16", "pixel_values is not None", None]

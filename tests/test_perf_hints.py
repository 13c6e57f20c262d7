"""Perf hints (JIT8xx): edge cases, fixes, and the measurements behind them."""

from __future__ import annotations

import textwrap

import pytest

from compile_lint.engine.lint import lint_text
from compile_lint.fixes.apply import fix_text
from compile_lint.rules.perf_hints.jit804_varying_shapes_without_dynamic import VaryingShapesWithoutDynamic
from compile_lint.settings.config import Config


def _codes(code: str, select: str) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in lint_text(textwrap.dedent(code).lstrip("\n"), "m.py", Config(select=(select,)))]


def test_perf_hints_are_off_by_default():
    example = VaryingShapesWithoutDynamic.invalid[0]
    assert [d.code for d in lint_text(example.code, "m.py", Config())] == []
    enabled = {d.code for d in lint_text(example.code, "m.py", Config(extend_select=("JIT8",)))}
    assert enabled == {"JIT801", "JIT804"}  # the example also runs its compiled model under no_grad


def test_loop_over_opaque_batches_is_not_a_shape_change():
    code = """
    import torch

    def run(model, loader, lengths):
        compiled = torch.compile(model, mode="reduce-overhead")
        for batch in loader:
            compiled(batch)
        for i, n in enumerate(lengths):
            compiled(loader[i])
    """
    assert _codes(code, "JIT802") == []
    assert _codes(code, "JIT804") == []


def test_shape_through_a_local_and_a_view_is_seen():
    code = """
    import torch

    def run(model, x, sizes):
        compiled = torch.compile(model)
        for size in sizes:
            chunk = x.reshape(size, -1)
            compiled(chunk)
    """
    assert _codes(code, "JIT804") == [("JIT804", 7)]


def test_dynamic_fix_keeps_one_argument_per_line_layout():
    code = textwrap.dedent(
        """
        import torch

        def run(model, sizes):
            compiled = torch.compile(
                model,
                fullgraph=True,
            )
            for n in sizes:
                compiled(torch.zeros(n, 4))
        """
    ).lstrip("\n")
    outcome = fix_text(code, "m.py", Config(select=("JIT804",)))
    assert "        fullgraph=True,\n        dynamic=True,\n    )\n" in outcome.text
    assert lint_text(outcome.text, "m.py", Config(select=("JIT804",))) == []


def test_dynamic_true_removes_the_recompile_jit804_reports():
    """The measurement behind JIT804: varying lengths compile twice by default, once with dynamic=True."""
    torch = pytest.importorskip("torch")
    from torch._dynamo.testing import CompileCounter

    def encoder(tokens):
        return tokens.relu().mean(1)

    frames = {}
    for dynamic in (None, True):
        torch._dynamo.reset()
        counter = CompileCounter()
        compiled = torch.compile(encoder, backend=counter, dynamic=dynamic)
        for n in (16, 32, 48):
            compiled(torch.randn(2, n, 8))
        frames[dynamic] = counter.frame_count
    torch._dynamo.reset()
    assert frames == {None: 2, True: 1}


def test_warmup_anywhere_before_the_timer_counts():
    code = """
    import time
    import torch

    def bench(model, x, n):
        compiled = torch.compile(model)
        compiled(x)
        t0 = time.perf_counter()
        for _ in range(n):
            compiled(x)
        return time.perf_counter() - t0

    def bench_module_level_compile(x, n):
        t0 = time.perf_counter()
        for _ in range(n):
            COMPILED(x)
        return time.perf_counter() - t0

    COMPILED = torch.compile(torch.nn.Linear(4, 4))
    """
    assert _codes(code, "JIT803") == []


def test_no_grad_hint_skips_models_also_called_with_grad_elsewhere():
    code = """
    import torch

    model = torch.compile(torch.nn.Linear(4, 4))

    def predict(x):
        with torch.no_grad():
            return model(x)

    def train_step(x):
        model(x).sum().backward()
    """
    assert _codes(code, "JIT801") == []
    assert _codes(code.replace("        model(x).sum().backward()", "        return x"), "JIT801") == [("JIT801", 6)]


def test_no_grad_hint_skips_results_updated_in_place_after_the_block():
    code = """
    import torch

    model = torch.compile(torch.nn.Linear(4, 4))

    def predict(x):
        with torch.no_grad():
            out = model(x)
        out += 1
        return out

    def predict_scaled(x):
        with torch.no_grad():
            out = model(x)
        out.mul_(2)
        return out
    """
    assert _codes(code, "JIT801") == []
    assert _codes(code.replace("out += 1", "out = out + 1").replace("out.mul_(2)", "out = out * 2"), "JIT801") == [
        ("JIT801", 6), ("JIT801", 12)
    ]

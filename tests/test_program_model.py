"""The program model (analysis/model/): Python's objects, callables and constants as values, to a fixed point.

Each case is a small program written to a temporary folder; the model's call graph (PyCG's
naming, `pycg.py`) or its traced set is checked against what Python (and Dynamo) would do.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from compile_lint.analysis.model.build import build_model
from compile_lint.analysis.model.pycg import pycg_graph
from compile_lint.analysis.model.traced import traced_set, untraced_branches


def _model(tmp_path: Path, files: dict[str, str], whole: bool = True):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    main = [str(tmp_path / name) for name in files if name.endswith(".py") and "/" not in name][:1]
    return build_model(main, str(tmp_path), whole=whole)


def _edges(tmp_path: Path, files: dict[str, str]) -> dict[str, list[str]]:
    return pycg_graph(_model(tmp_path, files))


def _traced(tmp_path: Path, files: dict[str, str]) -> set[str]:
    model = _model(tmp_path, files, whole=False)
    return {key[1] for key in traced_set(model).functions()}


def test_a_later_binding_replaces_an_earlier_one(tmp_path):
    graph = _edges(tmp_path, {"main.py": """
        def a(): pass
        def b(): pass
        f = a
        f = b
        f()
        d = {"k": a}
        d["k"] = b
        d["k"]()
    """})
    assert graph["main"] == ["main.b"]


def test_a_constant_decides_a_branch_and_its_calls(tmp_path):
    model = _model(tmp_path, {"main.py": """
        import torch
        _DEBUG = False
        def helper(x, verbose=False):
            if verbose:
                print("never")
            if _DEBUG:
                print(x)
            return x
        class Net(torch.nn.Module):
            def forward(self, x):
                return helper(x)
    """}, whole=False)
    traced = traced_set(model)
    nodes = traced.functions()[(str(tmp_path / "main.py"), "helper")]
    assert untraced_branches(model, nodes) == ((6, 6), (8, 8))


def test_a_keyword_passed_by_a_caller_keeps_its_branch(tmp_path):
    model = _model(tmp_path, {"main.py": """
        import torch
        def helper(x, verbose=False):
            if verbose:
                print("sometimes")
            return x
        class Net(torch.nn.Module):
            def forward(self, x):
                return helper(x, verbose=True) + helper(x)
    """}, whole=False)
    traced = traced_set(model)
    nodes = traced.functions()[(str(tmp_path / "main.py"), "helper")]
    assert untraced_branches(model, nodes) == ()


def test_objects_called_through_their_class(tmp_path):
    graph = _edges(tmp_path, {"main.py": """
        class Meta(type):
            def __call__(cls, *args):
                return super().__call__(*args)
        class A(metaclass=Meta):
            def __init__(self, x): self.x = x
            def run(self): pass
        class Lazy:
            def __getattr__(self, name): return helper
        def helper(): pass
        A(1).run()
        Lazy().anything()
    """})
    assert graph["main"] == ["main.A.run", "main.Lazy.__getattr__", "main.Meta.__call__", "main.helper"]
    assert graph["main.Meta.__call__"] == ["<builtin>.super", "main.A.__init__"]


def test_callables_stored_passed_and_wrapped(tmp_path):
    graph = _edges(tmp_path, {"main.py": """
        import functools
        def work(x, scale): return x
        def apply(fn, x): return fn(x)
        class Holder:
            def __init__(self):
                self.fn = functools.partial(work, scale=2)
            def go(self, x):
                return apply(lambda y: self.fn(y), x)
        Holder().go(1)
    """})
    assert graph["main.Holder.go.<lambda1>"] == ["main.work"]
    assert graph["main.apply"] == ["main.Holder.go.<lambda1>"]


def test_autograd_function_apply_runs_forward(tmp_path):
    model = _model(tmp_path, {"main.py": """
        import torch
        class Clip(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clamp(0, 1)
            @staticmethod
            def backward(ctx, grad):
                return grad
        class Net(torch.nn.Module):
            def forward(self, x):
                return Clip.apply(x)
    """}, whole=False)
    assert {"Net.forward", "Clip.forward"} <= {key[1] for key in traced_set(model).functions()}


def test_an_allowed_function_that_needs_tensor_data_breaks_at_its_call_and_is_compiled_alone(tmp_path):
    """Measured on torch 2.13 (tests/fixtures/reach/allowed): Dynamo runs an `allow_in_graph` function on fake
    tensors; a body reading the data (`.item()`, a tensor `if`) breaks at the call, and the function is then
    compiled as a frame of its own. A body that only prints is put in the graph, untraced."""
    model = _model(tmp_path, {"main.py": """
        import torch
        @torch._dynamo.allow_in_graph
        def peak(x):
            return x / x.abs().max().item()
        def clip(x):
            if x.abs().max() > 3:
                return x.clamp(-3, 3)
            return x
        torch._dynamo.allow_in_graph(clip)
        @torch._dynamo.allow_in_graph
        def announce(x):
            print(x.shape)
            return x
        class Net(torch.nn.Module):
            def forward(self, x):
                return announce(clip(peak(x)))
    """}, whole=False)
    traced = traced_set(model)
    assert {(caller, spelled, cause) for _, caller, spelled, cause, _ in traced.allowed_breaks} == {
        ("Net.forward", "peak", "item"), ("Net.forward", "clip", "branch")}
    entries = {node[0].key[1]: made for node, made in traced.entries.items()}
    assert entries["peak"][2] == entries["clip"][2] == "allowed"
    assert "announce" not in {key[1] for key in traced.functions()}


def test_a_compiled_bound_method_of_an_object_built_in_a_script(tmp_path):
    traced = _traced(tmp_path, {"main.py": """
        import torch
        class Scaler:
            def __init__(self, s): self.s = s
            def __call__(self, h): return h * self.s
        class Model:
            def __init__(self): self.scaler = Scaler(0.5)
            def generate(self, x):
                out = self.step(x)
                return self.scaler(out)
            def step(self, x): return x
        model = Model()
        fast = torch.compile(model.generate)
    """})
    assert traced == {"Model.generate", "Model.step", "Scaler.__call__"}


def test_disabled_and_allowed_functions_end_the_traced_set(tmp_path):
    model = _model(tmp_path, {"main.py": """
        import torch
        @torch.compiler.disable
        def host(x): return inner(x)
        def inner(x): return x
        def opaque(x): return x
        torch._dynamo.allow_in_graph(opaque)
        class Net(torch.nn.Module):
            def forward(self, x):
                return host(x) + opaque(x)
    """}, whole=False)
    traced = traced_set(model)
    assert {key[1] for key in traced.functions()} == {"Net.forward"}
    assert {call[2] for call in traced.disabled_calls} == {"host"}


def test_eager_only_branches_are_not_traced(tmp_path):
    traced = _traced(tmp_path, {"main.py": """
        import torch
        def log(x): print(x)
        def fast(x): return x
        class Net(torch.nn.Module):
            def forward(self, x):
                if not torch.compiler.is_compiling():
                    log(x)
                if torch.compiler.is_compiling():
                    return fast(x)
                log(x)
                return x
    """})
    assert traced == {"Net.forward", "fast"}


def test_an_inherited_forward_calls_the_subclass_override(tmp_path):
    traced = _traced(tmp_path, {
        "main.py": """
            from base import Base
            class Child(Base):
                def embed(self, x): return x
        """,
        "base.py": """
            import torch
            class Base(torch.nn.Module):
                def forward(self, x): return self.embed(x)
                def embed(self, x): return x
        """})
    assert "Child.embed" in traced


@pytest.mark.parametrize("spelling", ["for layer in self.layers: x = layer(x)", "x = self.layers[0](x)"])
def test_module_lists_built_from_lists_and_comprehensions(tmp_path, spelling):
    traced = _traced(tmp_path, {"main.py": f"""
        import torch
        from torch import nn
        class Block(nn.Module):
            def forward(self, x): return x
        class Net(nn.Module):
            def __init__(self, depth):
                super().__init__()
                layers = [Block() for _ in range(depth)]
                self.layers = nn.ModuleList(layers)
            def forward(self, x):
                {spelling}
                return x
    """})
    assert "Block.forward" in traced


def test_every_input_stops_at_a_bound(tmp_path):
    body = "\n".join(f"    x = x + {index}" for index in range(3000))
    model = _model(tmp_path, {"main.py": f"def f(x):\n{body}\n    return x\nf(1)\n"})
    assert not model.given_up
    assert model.spent < 50


def test_the_model_stops_at_its_work_budget_and_says_so(tmp_path, monkeypatch):
    """The budget is work (values joined per loaded file), the same on any machine: x_transformers' partials
    of partials joined without end; past the budget the model stops growing and `given_up` says so."""
    from compile_lint.analysis.model import program

    source = {"main.py": """
        from functools import partial

        def layer(x, scale=1.0):
            return x * scale

        def build(depth):
            fn = layer
            for _ in range(depth):
                fn = partial(fn, scale=2.0)
            return fn

        def run(x):
            return build(8)(x)
    """}
    model = _model(tmp_path, source)
    assert model.given_up  # the first `build(8)(x)` alone joins more than a file's 40,000 values
    plain = {"main.py": """
        def layer(x):
            return x * 2

        def run(x):
            return layer(x)
    """}
    assert not _model(tmp_path / "plain", plain).given_up
    monkeypatch.setattr(program, "JOINS_PER_FILE", 10)
    assert _model(tmp_path / "small", plain).given_up

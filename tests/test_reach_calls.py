"""Calls the program model resolves through values: what a factory returns, what `.eval()` gives,
what calling an instance runs, and what a compile call's target is (lambdas, partials).

Each program is written to a temporary folder; the model's call graph (PyCG's naming) or its
traced set is compared with what Python runs (and Dynamo traces) there.
"""

from __future__ import annotations

import textwrap

from compile_lint.analysis.model.build import build_model
from compile_lint.analysis.model.pycg import pycg_graph
from compile_lint.analysis.model.traced import traced_set


def _model(tmp_path, text: str, whole: bool = True):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return build_model([str(path)], str(tmp_path), whole=whole)


def _traced(tmp_path, text: str) -> set[str]:
    return {key[1] for key in traced_set(_model(tmp_path, text, whole=False)).functions()}


def test_a_factorys_result_is_an_instance_of_each_class_it_may_return(tmp_path):
    graph = pycg_graph(_model(tmp_path, """
        class Exact:
            def mean(self, x):
                return x

        class LowRank:
            def mean(self, x):
                return x

        def make(low_rank):
            if low_rank:
                return LowRank()
            return Exact()

        def step(x, low_rank):
            strategy = make(low_rank)
            return strategy.mean(x)
        """))
    assert "model.Exact.mean" in graph["model.step"] and "model.LowRank.mean" in graph["model.step"]


def test_an_eager_only_return_is_not_traced(tmp_path):
    traced = _traced(tmp_path, """
        import torch

        class Debug:
            def mean(self, x):
                print(x)
                return x

        class Exact:
            def mean(self, x):
                return x

        def make(x):
            if not torch.compiler.is_compiling():
                return Debug()
            return Exact()

        @torch.compile
        def step(x):
            return make(x).mean(x)
        """)
    assert "Exact.mean" in traced and "Debug.mean" not in traced


def test_eval_and_to_give_the_module_itself_unless_the_class_redefines_them(tmp_path):
    graph = pycg_graph(_model(tmp_path, """
        from torch import nn

        class Net(nn.Module):
            def sample(self, x):
                return x

        class Odd(nn.Module):
            def eval(self):
                return Plain()

        class Plain:
            def sample(self, x):
                return x

        def main(device, x):
            Net().eval().sample(x)
            Net().to(device).sample(x)
            Odd().eval().sample(x)
        """))
    assert "model.Net.sample" in graph["model.main"]
    assert "model.Plain.sample" in graph["model.main"]  # Odd.eval returns a Plain
    assert "model.Odd.sample" not in graph["model.main"]


def test_calling_an_instance_runs_its_call_override_and_super_call_runs_forward(tmp_path):
    graph = pycg_graph(_model(tmp_path, """
        from torch import nn

        class Kernel(nn.Module):
            def __call__(self, x):
                return super().__call__(x)

            def forward(self, x):
                return x

        class Plain(nn.Module):
            def forward(self, x):
                return x

        def main(x):
            Kernel()(x)
            Plain()(x)
        """))
    assert "model.Kernel.__call__" in graph["model.main"]
    assert "model.Kernel.forward" in graph["model.Kernel.__call__"]
    assert "model.Plain.forward" in graph["model.main"]


def test_compile_targets_through_lambdas_partials_and_self_returning_module_methods(tmp_path):
    traced = _traced(tmp_path, """
        import functools
        import torch
        from torch import nn

        def integrate(field, y0, t):
            return y0

        def rollout(field, y0):
            return y0

        class Net(nn.Module):
            def forward(self, x):
                return x

            def sample(self, x):
                return x

        def unused(x):
            return x

        def main(field, y0, t):
            solve = torch.compile(lambda y0, t: integrate(field, y0, t).sum() + y0.abs())
            roll = torch.compile(functools.partial(rollout, field))
            sample = torch.compile(Net().eval().sample)
            return solve, roll, sample
        """)
    assert {"integrate", "rollout", "Net.sample"} <= traced
    assert "unused" not in traced

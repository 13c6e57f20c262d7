"""What the summary and the call graph make of `__call__` overrides, factories, compiled lambdas and
partials, self-returning module methods and rebound locals (issue 30; issue 35 item 1).

The fixture projects of tests/fixtures/reach/ (overrides, builders, compiled, rebound) check
the same shapes end to end against Dynamo; these pin the pieces each rests on.
"""

from __future__ import annotations

import textwrap

from compile_lint.analysis.project.callgraph import CallGraph
from compile_lint.analysis.project.summariser import summarise_source
from compile_lint.analysis.project.summary import LOCAL
from compile_lint.analysis.project.symbols import SymbolIndex


def _summary(text: str, path: str = "/project/pkg/model.py"):
    return summarise_source(path, textwrap.dedent(text).encode())


def _graph(tmp_path, text: str):
    path = str(tmp_path / "model.py")
    return CallGraph({path: _summary(text, path)}, SymbolIndex([str(tmp_path)]).modules), path


def test_a_factory_returns_each_class_it_builds_and_no_eager_only_return():
    summary = _summary("""
        import torch

        def make(low_rank, x):
            if low_rank:
                return LowRank(x)
            if not torch.compiler.is_compiling():
                return Debug(x)
            return Exact(x) if x.dim() > 1 else Diagonal(x)

        class Builder:
            def fill(self, x):
                return self
        """)
    assert summary.functions["make"].returned_spellings == ("LowRank()", "Exact()", "Diagonal()")
    assert summary.functions["Builder.fill"].returned_spellings == ("self",)


def test_a_factorys_result_is_an_instance_of_each_returned_class(tmp_path):
    graph, path = _graph(tmp_path, """
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
        """)
    step = graph.function((path, "step"))
    assert sorted(graph.resolve(path, step, "strategy.mean")) == [
        ("function", path, "Exact.mean"), ("function", path, "LowRank.mean")]


def test_compile_targets_through_lambdas_partials_and_self_returning_module_methods():
    summary = _summary("""
        import functools
        import torch

        def main(field, y0, t):
            solve = torch.compile(lambda y0, t: integrate(field, y0, t).sum() + y0.abs())
            roll = torch.compile(functools.partial(rollout, field))
            model = torch.compile(Net().eval())
        """)
    assert [spelling for _, _, spelling in summary.compiled] == ["integrate", "rollout", "Net().eval()"]


def test_eval_and_to_give_the_module_itself_unless_the_class_redefines_them(tmp_path):
    graph, path = _graph(tmp_path, """
        from torch import nn

        class Net(nn.Module):
            def sample(self, x):
                return x

        class Odd(nn.Module):
            def eval(self):
                return Net()

        class Plain:
            def to(self, device):
                return 0

        def main(device):
            net = Net().eval()
            moved = Net().to(device)
            odd = Odd().eval()
            plain = Plain().to(device)
        """)
    main = graph.function((path, "main"))
    assert graph.resolve(path, main, "net.sample") == [("function", path, "Net.sample")]
    assert graph.resolve(path, main, "moved") == [("instance", path, "Net")]
    assert graph.resolve(path, main, "odd") == []
    assert graph.resolve(path, main, "plain") == []


def test_calling_an_instance_runs_its_call_override_and_super_call_runs_forward(tmp_path):
    graph, path = _graph(tmp_path, """
        from torch import nn

        class Kernel(nn.Module):
            def __call__(self, x):
                return super().__call__(x)

            def forward(self, x):
                return x

        class Plain(nn.Module):
            def forward(self, x):
                return x
        """)
    assert graph.called(("instance", path, "Kernel")) == (path, "Kernel.__call__")
    assert graph.called(("instance", path, "Plain")) == (path, "Plain.forward")
    override = graph.function((path, "Kernel.__call__"))
    call = next(call for call in override.calls if call.callee == "super().__call__")
    assert [target for target, _, _ in graph.call_targets((path, "Kernel.__call__"), override, call)] == [
        (path, "Kernel.forward")]


def test_a_local_passed_outside_loops_sees_only_the_bindings_before_the_call():
    summary = _summary("""
        def forward(self, x):
            h = self.lin(x)
            h = gate(h)
            for _ in range(2):
                h = shrink(h)
            return h
        """)
    calls = {call.callee: call for call in summary.functions["forward"].calls}
    assert summary.functions["forward"].local_tags["h"][:1] == ("tensor",)
    (gated,) = calls["gate"].args
    assert (gated.tag, gated.spelling, gated.visible) == (LOCAL, "h", 1)
    (shrunk,) = calls["shrink"].args
    assert shrunk.visible == -1  # a later round's call passes what the loop bound

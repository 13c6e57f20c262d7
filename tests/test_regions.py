"""Regions: exactly the functions torch.compile traces."""

import pytest

from compile_lint.analysis.file.compile_spellings import may_call_compile
from compile_lint.testing import make_context


def _traced(code: str) -> set[str]:
    context = make_context(code)
    return {f.name.value for f in context.regions.functions}


def test_forward_of_direct_and_aliased_module_subclasses():
    code = """
    import torch
    from torch import nn
    import torch.nn as tnn

    class A(nn.Module):
        def forward(self, x):
            return x
        def not_called(self):
            pass

    class B(tnn.Module):
        def forward(self, x):
            return x

    class C(torch.nn.Sequential):
        def forward(self, x):
            return x

    class Plain:
        def forward(self, x):
            return x
    """
    context = make_context(code)
    assert set(context.regions.module_classes) == {"A", "B", "C"}
    assert _traced(code) == {"forward"}
    assert len(context.regions.functions) == 3


def test_base_class_in_same_file_and_known_library_bases():
    code = """
    from torch import nn
    from .modeling_utils import PreTrainedModel

    class Base(nn.Module):
        pass

    class Child(Base):
        def forward(self, x):
            return x

    class HF(PreTrainedModel):
        def forward(self, input_ids):
            return input_ids
    """
    assert set(make_context(code).regions.module_classes) == {"Base", "Child", "HF"}


def test_compiled_functions_and_transitive_callees():
    code = """
    import torch

    def helper(x):
        return inner(x)

    def inner(x):
        return x

    def unrelated(x):
        return x

    @torch.compile
    def step(x):
        return helper(x)

    @torch.compile(mode="max-autotune")
    def step2(x):
        return x

    def train(x):
        return x

    compiled_train = torch.compile(train)
    """
    assert _traced(code) == {"step", "helper", "inner", "step2", "train"}


def test_methods_called_from_forward_are_traced_and_disabled_ones_are_not():
    code = """
    import torch
    from torch import nn

    class Base(nn.Module):
        def shared(self, x):
            return x

    class M(Base):
        def forward(self, x):
            x = self._pre(x)
            x = self.shared(x)
            x = super().shared(x)
            return self._log(x)

        def _pre(self, x):
            def nested(y):
                return y
            return nested(x)

        @torch.compiler.disable
        def _log(self, x):
            return self._deep(x)

        def _deep(self, x):
            return x
    """
    context = make_context(code)
    assert _traced(code) == {"forward", "_pre", "nested", "shared"}
    assert "_log" in context.regions.disabled


def test_eager_only_branches_are_excluded():
    code = """
    import torch
    from torch import nn

    class M(nn.Module):
        def forward(self, x):
            if not torch.compiler.is_compiling():
                self.eager_helper(x)
            if torch.jit.is_scripting():
                self.script_helper(x)
            if torch.compiler.is_compiling():
                pass
            else:
                self.other_eager(x)
            return x

        def eager_helper(self, x):
            pass

        def script_helper(self, x):
            pass

        def other_eager(self, x):
            pass
    """
    context = make_context(code)
    assert _traced(code) == {"forward"}
    assert len(context.regions.eager_only) == 3


@pytest.mark.parametrize("source,possible", [
    ("torch.compile(f)", True), ("torch.compile (f)", True), ("torch.compile\\\n(f)", True),
    ("x = [torch.compile  # why\n (f)]", True), ("from torch import compile as c", True),
    ("from torch import (compile\n  as c)", True), ("torch._dynamo.optimize('eager')(f)", True),
    ("if is_torchdynamo_compiling():", False), ("optimizer.step()", False), ("# torch.compile it", False),
])
def test_compile_calls_are_looked_for_only_where_the_text_can_hold_one(source, possible):
    assert may_call_compile(source) is possible

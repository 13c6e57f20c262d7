"""Custom-op rules (JIT7xx): edge cases, fix formatting, and what torch really does."""

from __future__ import annotations

import textwrap
import warnings

import libcst as cst
import pytest

from compile_lint.analysis.file.context import FileContext
from compile_lint.engine.lint import lint_text
from compile_lint.fixes.apply import fix_text
from compile_lint.rules.custom_ops.jit702_deprecated_impl_abstract import DeprecatedImplAbstract
from compile_lint.settings.config import Config


def _codes(code: str, select: str) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in lint_text(textwrap.dedent(code).lstrip("\n"), "m.py", Config(select=(select,)))]


def _fixed(code: str, select: str, unsafe: bool = True) -> str:
    outcome = fix_text(textwrap.dedent(code).lstrip("\n"), "m.py", Config(select=(select,)), unsafe=unsafe)
    assert outcome.error is None
    return outcome.text


def test_fake_stub_spells_torch_as_the_file_does():
    fixed = _fixed(
        """
        import torch as T

        @T.library.custom_op("t::double", mutates_args=())
        def double(x: T.Tensor) -> T.Tensor:
            return x.clone() * 2
        """,
        "JIT701",
    )
    assert "@double.register_fake\ndef _double_fake(x):\n    return T.empty_like(x)\n" in fixed


def test_fake_stub_adds_import_torch_when_only_names_are_imported():
    fixed = _fixed(
        """
        from torch import Tensor
        from torch.library import custom_op

        @custom_op("t::neg", mutates_args=())
        def neg(x: Tensor) -> Tensor:
            return -x
        """,
        "JIT701",
    )
    assert fixed.startswith("from torch import Tensor\nfrom torch.library import custom_op\nimport torch\n")
    assert "return torch.empty_like(x)" in fixed
    assert _codes(fixed, "JIT701") == []


def test_no_fix_when_the_output_shape_is_not_evident():
    for body in ("return x.sum(0)", "return x @ y", "return torch.cat([x, y])", "return x * y"):
        code = f"""
        import torch

        @torch.library.custom_op("t::op", mutates_args=())
        def op(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            {body}
        """
        assert _codes(code, "JIT701") == [("JIT701", 4)], body
        assert _fixed(code, "JIT701") == textwrap.dedent(code).lstrip("\n"), body


def test_every_fake_registration_form_counts():
    forms = [
        '@op.register_fake\ndef _(x):\n    return torch.empty_like(x)',
        'op.register_fake(lambda x: torch.empty_like(x))',
        'torch.library.register_fake("t::op", lambda x: torch.empty_like(x))',
        'torch.library.register_fake(op, lambda x: torch.empty_like(x))',
        'torch.library.register_fake(torch.ops.t.op.default, lambda x: torch.empty_like(x))',
        '@torch.library.impl_abstract("t::op")\ndef _(x):\n    return torch.empty_like(x)',
    ]
    for form in forms:
        code = (
            "import torch\n\n"
            '@torch.library.custom_op("t::op", mutates_args=())\n'
            "def op(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n\n" + form + "\n"
        )
        assert _codes(code, "JIT701") == [], form


def test_meta_kernel_does_not_count_as_a_fake_for_custom_op():
    code = """
    import torch

    @torch.library.custom_op("t::op", mutates_args=())
    def op(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    @torch.library.register_kernel("t::op", "meta")
    def _(x):
        return torch.empty_like(x)
    """
    assert _codes(code, "JIT701") == [("JIT701", 4)]


def test_custom_op_body_is_not_a_compiled_region():
    code = textwrap.dedent(
        """
        import torch
        from torch import nn

        @torch.library.custom_op("t::count", mutates_args=())
        def count(x: torch.Tensor) -> torch.Tensor:
            return x * int(x.sum().item())

        class M(nn.Module):
            def forward(self, x):
                return count(x)
        """
    )
    context = FileContext("m.py", cst.parse_module(code))
    traced = {function.name.value for function in context.regions.functions}
    assert traced == {"forward"}


def test_impl_abstract_rename_is_safe_and_leaves_qualname_keyword_calls():
    code = """
    import torch

    torch.library.impl_abstract("t::a", lambda x: x)
    torch.library.impl_abstract(qualname="t::b", func=lambda x: x)
    """
    assert _codes(code, "JIT702") == [("JIT702", 3), ("JIT702", 4)]
    fixed = _fixed(code, "JIT702", unsafe=False)
    assert 'torch.library.register_fake("t::a", lambda x: x)' in fixed
    assert 'torch.library.impl_abstract(qualname="t::b"' in fixed


def test_impl_abstract_from_import_is_renamed_through_torch_library():
    fixed = _fixed(
        """
        import torch
        from torch.library import impl_abstract

        impl_abstract("t::a", lambda x: x)
        """,
        "JIT702",
        unsafe=False,
    )
    assert 'torch.library.register_fake("t::a", lambda x: x)' in fixed


def test_impl_abstract_warns_on_torch_and_register_fake_does_not():
    """The measurement behind JIT702: torch itself deprecates the invalid form."""
    pytest.importorskip("torch")
    from compile_lint.verifier.probe import load_module_from_source

    example = DeprecatedImplAbstract.invalid[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_module_from_source(example.code)
    assert any("impl_abstract" in str(w.message) for w in caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_module_from_source(example.fixed)
    assert not any("impl_abstract" in str(w.message) for w in caught)


def test_native_call_outside_compiled_code_or_shadowed_is_not_flagged():
    code = """
    import ctypes
    import torch
    from torch import nn

    lib = ctypes.CDLL("libc.so.6")

    def setup():
        lib.srand(0)

    class M(nn.Module):
        def forward(self, x, lib=None):
            return lib.scale(x)

    class N(nn.Module):
        def forward(self, x):
            return torch.utils.cpp_extension.load(name="ext", sources=["ext.cpp"]).run(x)
    """
    assert _codes(code, "JIT703") == [("JIT703", 16)]


def test_disabled_helper_with_options_or_impure_body_is_left_alone():
    code = """
    import torch
    from torch import nn

    @torch.compiler.disable(recursive=False)
    def a(x):
        return x * 2

    @torch.compiler.disable
    def b(x):
        print(x)
        return x * 2

    @torch.compiler.disable
    def c(x):
        return x[x > 0]

    class M(nn.Module):
        def forward(self, x):
            return a(x) + b(x) + c(x).sum()
    """
    assert _codes(code, "JIT705") == []


def test_disabled_pointwise_helper_is_off_by_default():
    from compile_lint.rules.custom_ops.jit705_disabled_pointwise_helper import DisabledPointwiseHelper

    example = DisabledPointwiseHelper.invalid[0]
    assert [d.code for d in lint_text(example.code, "m.py", Config())] == []


def test_library_op_with_kernels_elsewhere_or_catch_all_is_not_flagged():
    code = """
    import torch

    lib = torch.library.Library("t", "DEF")
    lib.define("only_schema(Tensor x) -> Tensor")
    lib.define("catch_all(Tensor x) -> Tensor")
    lib.impl("catch_all", lambda x: x * 2)
    lib.define("cuda_only(Tensor x) -> Tensor")
    lib.impl("cuda_only", lambda x: x * 2, dispatch_key="CUDA")
    lib.define("abstract(Tensor x) -> Tensor")
    lib.impl("abstract", lambda x: x * 2, "CUDA")
    torch.library.impl_abstract("t::abstract", lambda x: torch.empty_like(x))
    """
    assert _codes(code, "JIT704") == [("JIT704", 7)]


def test_fake_stub_inside_a_block_keeps_defaults_and_clean_blank_lines():
    fixed = _fixed(
        """
        import torch

        try:
            @torch.library.custom_op("t::op", mutates_args=())
            def op(x: torch.Tensor, *, alpha: float = 1.0) -> torch.Tensor:
                return x.contiguous() * alpha
        except RuntimeError:
            op = None
        """,
        "JIT701",
    )
    assert "        return x.contiguous() * alpha\n\n    @op.register_fake\n" in fixed
    assert "    def _op_fake(x, *, alpha=1.0):\n        return torch.empty_like(x)\n" in fixed


def test_custom_op_call_forms_are_checked():
    code = """
    import torch

    def _scale(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def _fill(x: torch.Tensor) -> None:
        x.fill_(0)

    scale = torch.library.custom_op("t::scale", _scale, mutates_args=())
    scale2 = torch.library.custom_op("t::scale2", mutates_args=())(_scale)
    fill = torch.library.custom_op("t::fill", _fill, mutates_args=("x",))
    scale3 = torch.library.custom_op("t::scale3", _scale, mutates_args=())
    scale3.register_fake(lambda x: torch.empty_like(x))
    """
    assert _codes(code, "JIT701") == [("JIT701", 9), ("JIT701", 10)]


def test_impl_abstract_on_a_custom_op_is_reported_where_it_fails_not_as_a_missing_fake():
    code = """
    import torch
    from torch.library import custom_op

    @custom_op("t::my_fast_op", mutates_args=())
    def my_fast_op(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b

    @my_fast_op.impl_abstract("t::my_fast_op")
    def my_fast_op_abstract(a, b):
        return torch.empty_like(a)

    scale = torch.library.custom_op("t::scale", lambda x: x * 2, mutates_args=())
    scale.impl_abstract(lambda x: torch.empty_like(x))
    """
    assert _codes(code, "JIT701") == []
    assert _codes(code, "JIT706") == [("JIT706", 8), ("JIT706", 13)]
    assert "@my_fast_op.register_fake\ndef my_fast_op_abstract" in _fixed(code, "JIT706", unsafe=False)
    assert "scale.impl_abstract(lambda" in _fixed(code, "JIT706", unsafe=False)  # not a decorator: no fix


def test_register_fake_of_a_custom_op_takes_only_the_function():
    """JIT706's fix drops the qualname: torch 2.13's CustomOpDef.register_fake(self, fn, /)."""
    import inspect

    torch = pytest.importorskip("torch")
    from torch._library.custom_ops import CustomOpDef

    assert not hasattr(CustomOpDef, "impl_abstract")
    parameters = list(inspect.signature(CustomOpDef.register_fake).parameters.values())
    assert [p.name for p in parameters] == ["self", "fn"]
    assert parameters[1].kind is inspect.Parameter.POSITIONAL_ONLY
    assert torch.library.custom_op is not None

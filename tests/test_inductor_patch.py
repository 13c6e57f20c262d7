"""The Inductor reuse cost model: version gate, apply/remove, cache key, and real codegen on CPU."""

import os
import re

import pytest

torch = pytest.importorskip("torch")

from compile_lint.verifier import inductor_patch  # noqa: E402
from compile_lint.verifier.bench import code_stats  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _stock_after_each_test():
    yield
    inductor_patch.remove()


def _box():
    from torch._inductor.ir import StorageBox

    return StorageBox


def test_cost_model_realizes_when_recompute_reads_more_than_storing():
    # users=2: recomputing reads 2R, storing costs R + 3 O: realize iff R >= 3 O.
    assert inductor_patch.realize_by_traffic(total_read=300, output=100, users=2)
    assert not inductor_patch.realize_by_traffic(total_read=299, output=100, users=2)
    # More consumers make storing pay sooner: R * 3 >= O * 5.
    assert inductor_patch.realize_by_traffic(total_read=170, output=100, users=4)


def test_apply_is_idempotent_and_remove_restores_the_stock_method():
    from torch._inductor import config

    stock = _box().__dict__["should_realize_on_reuse"]
    inductor_patch.apply()
    patched = _box().__dict__["should_realize_on_reuse"]
    inductor_patch.apply()
    assert _box().__dict__["should_realize_on_reuse"] is patched is not stock
    assert inductor_patch._signature_key(patched) == inductor_patch._signature_key(stock)
    assert config.post_grad_custom_post_pass.uuid() == inductor_patch.PATCH_ID
    inductor_patch.remove()
    inductor_patch.remove()
    assert _box().__dict__["should_realize_on_reuse"] is stock
    assert config.post_grad_custom_post_pass is None


def test_context_manager_restores_previous_state():
    with inductor_patch.reuse_cost_model():
        assert inductor_patch.is_applied()
        with inductor_patch.reuse_cost_model(False):
            assert not inductor_patch.is_applied()
        assert inductor_patch.is_applied()
    assert not inductor_patch.is_applied()


def test_users_own_post_grad_pass_is_kept_and_keyed():
    from torch._inductor import config
    from torch._inductor.custom_graph_pass import CustomGraphPass

    calls = []

    class UserPass(CustomGraphPass):
        def __call__(self, graph):
            calls.append(graph)

        def uuid(self):
            return "user-pass-1"

    user_pass = UserPass()
    old = config.post_grad_custom_post_pass
    config.post_grad_custom_post_pass = user_pass
    try:
        inductor_patch.apply()
        key_pass = config.post_grad_custom_post_pass
        assert key_pass.uuid() == (inductor_patch.PATCH_ID, "user-pass-1")
        key_pass("graph")
        assert calls == ["graph"]
        inductor_patch.remove()
        assert config.post_grad_custom_post_pass is user_pass
    finally:
        config.post_grad_custom_post_pass = old


def test_unknown_signature_is_refused_and_nothing_changes(monkeypatch):
    def odd(self, users, reads_threshold):
        return False

    monkeypatch.setattr(_box(), "should_realize_on_reuse", odd)
    with pytest.raises(inductor_patch.PatchUnsupported, match="not a signature this patch knows"):
        inductor_patch.apply()
    assert _box().__dict__["should_realize_on_reuse"] is odd
    assert not inductor_patch.is_applied()


@pytest.mark.parametrize("signature", ["2.11", "2.13"])
def test_both_known_signatures_delegate_to_stock_for_non_pointwise(signature):
    seen = []
    if signature == "2.11":
        def stock(self, users):
            seen.append(users)
            return True
    else:
        def stock(self, users, *, graph_reuse=True):
            seen.append((users, graph_reuse))
            return True
    patched = inductor_patch._make_patched(stock)
    assert inductor_patch._signature_key(patched) == inductor_patch._signature_key(stock)

    class NotPointwise:
        data = object()

    assert patched(NotPointwise(), 3) is True
    assert seen == [3] if signature == "2.11" else seen == [(3, True)]


@pytest.mark.slow
def test_patch_changes_cpu_codegen_even_with_a_warm_cache_and_keeps_outputs():
    """Stock first (warming the FX graph cache), then patched, then stock again."""
    from torch._inductor.utils import run_and_get_code

    from suite import residual_chain
    model, calls = residual_chain.make_small()
    stock_method = _box().__dict__["should_realize_on_reuse"]

    def build():
        torch._dynamo.reset()
        with torch.no_grad():
            out, code = run_and_get_code(torch.compile(model), *calls[0])
        return out, code_stats(code), "\n".join(code)

    with torch.no_grad():
        eager = model(*calls[0])
    stock_out, stock_stats, stock_code = build()
    with inductor_patch.reuse_cost_model():
        patched_out, patched_stats, _ = build()
    again_out, again_stats, again_code = build()

    assert _box().__dict__["should_realize_on_reuse"] is stock_method
    # The cost model stores the reused residual sums instead of recomputing them per consumer.
    assert patched_stats.buffers > stock_stats.buffers
    assert patched_stats.loads < stock_stats.loads
    assert again_stats == stock_stats and again_code == stock_code
    for out in (stock_out, patched_out, again_out):
        for expected, actual in zip(eager, out):
            torch.testing.assert_close(actual, expected, atol=1e-4, rtol=1e-4)
    assert re.search(r"empty_strided", stock_code)


def test_compile_options_make_the_patched_build_a_distinct_backend():
    with pytest.raises(RuntimeError):
        inductor_patch.compile_options()
    with inductor_patch.reuse_cost_model():
        options = inductor_patch.compile_options("reduce-overhead")
        assert options["triton.cudagraphs"] is True
        assert options["post_grad_custom_post_pass"].uuid() == inductor_patch.PATCH_ID


def test_recommendation_needs_speed_everywhere_and_tolerance():
    from compile_lint.verifier.bench import BenchResult, PatchNumerics, Timing, recommend

    def result(stock_ms, patched_ms, within=True):
        timings = [Timing("default", 0, stock_ms), Timing("default+patch", 0, patched_ms)]
        return BenchResult("cuda", timings, numerics=[PatchNumerics("bfloat16", 0.1, 0.1, 0.016, within)])

    assert recommend(result(1.0, 0.9)).startswith("use the patch")
    # A 0.5% gain is inside the 1% floor of the noise margin (issue 25 item 15): no difference.
    assert recommend(result(1.0, 0.995)).startswith("keep stock: no difference beyond the measured spread")
    assert recommend(result(1.0, 1.05)).startswith("keep stock: not faster")
    assert recommend(result(1.0, 0.9, within=False)).startswith("keep stock: the patched build is outside tolerance")


def test_code_stats_count_triton_and_cpp_kernels_buffers_and_loads():
    triton_code = """
triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', '''
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = tl.load(in_ptr1 + (x0), xmask)
''')
def call(args):
    buf0 = empty_strided_cuda((16, 1024), (1024, 1), torch.bfloat16)
"""
    stats = code_stats([triton_code])
    assert (stats.kernels, stats.buffers, stats.loads) == (1, 1, 2)

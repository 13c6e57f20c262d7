"""Every fix example is proven: the fix gives the expected source, keeps outputs equal on
random inputs (several seeds), and the fixed code compiles with fullgraph=True and no recompile.

An invalid example whose rule produces a fix must state the fixed source, so every fix a
rule offers on its own examples is proven here."""

from __future__ import annotations

import pytest

from compile_lint.testing import case_id, example_cases, fix_problems, run_example

torch = pytest.importorskip("torch")
from compile_lint.verifier.probe import probe_example  # noqa: E402

FIXED = example_cases("invalid", lambda rule, example: example.fixed is not None)
UNFIXED = example_cases("invalid", lambda rule, example: example.fixed is None)
SEEDS = (0, 1, 2)


@pytest.mark.parametrize("case", FIXED, ids=[case_id(c) for c in FIXED])
def test_fix_gives_expected_source_and_is_idempotent(case):
    rule, _, example = case
    assert not fix_problems(rule, example)


@pytest.mark.parametrize("case", UNFIXED, ids=[case_id(c) for c in UNFIXED])
def test_an_example_the_rule_fixes_states_its_fixed_source(case):
    rule, _, example = case
    assert not fix_problems(rule, example)


@pytest.mark.parametrize("case", FIXED, ids=[case_id(c) for c in FIXED])
def test_fixed_code_keeps_outputs_and_compiles_cleanly(case):
    rule, _, example = case
    fixed_calls = example.fixed_calls or example.calls
    # Code that fails at import has no outputs to keep: the fixed code must import and compile.
    for seed in SEEDS if rule.fails_at == "compile" else ():
        torch.testing.assert_close(run_example(example.fixed, example.entry, fixed_calls, seed),
                                   run_example(example.code, example.entry, example.calls, seed))
    result = probe_example(example.fixed, example.entry, fixed_calls)
    if rule.kind == "perf":
        # A perf hint's fix changes how the code is compiled or run (dynamic=, inference_mode),
        # which the probe, compiling the entry itself, does not see: it must still be one graph.
        assert result.eager_error is None and not result.breaks, result.describe()
    else:
        assert result.clean, result.describe()


# ----- On a GPU: fixed state updates under CUDA graphs -----------------------------------
# benchmarks/gpu_bench.sh runs these on the H200; without CUDA they are skipped (the CPU
# proof that a fixed counter stays one tensor is in test_rules_recompile.py).

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
STATE_FIXES = [case for case in FIXED if case[0].code == "JIT501"]
REPLAY_ROUNDS = 4  # cudagraph trees warm up, record, then replay: rounds 3 and 4 replay


def _on_cuda(value):
    if isinstance(value, torch.Tensor):
        return value.cuda()
    if isinstance(value, (list, tuple)):
        return type(value)(_on_cuda(item) for item in value)
    if isinstance(value, dict):
        return {key: _on_cuda(item) for key, item in value.items()}
    return value


def _cuda_model(code: str, entry: str):
    from compile_lint.verifier.probe import load_module_from_source, resolve_entry

    model = resolve_entry(load_module_from_source(code), entry)
    assert isinstance(model, torch.nn.Module), "a state fix lives on a module"
    return model.cuda()


def _assert_replays_like_eager(code: str, entry: str, calls: list, reference=None) -> None:
    """`entry` compiled with mode="reduce-overhead" gives what a fresh eager copy gives, call
    for call over REPLAY_ROUNDS rounds of `calls`, and every buffer stays the same tensor.
    `reference` (an eager model in lockstep, e.g. the original code) is compared too."""
    torch._dynamo.reset()
    eager, graphed = _cuda_model(code, entry), _cuda_model(code, entry)
    buffers = {name: (buffer, buffer.data_ptr()) for name, buffer in graphed.named_buffers()}
    compiled = torch.compile(graphed, mode="reduce-overhead", fullgraph=True)
    with torch.no_grad():
        for round_number in range(REPLAY_ROUNDS):
            for call in calls:
                # A CUDA graph's output lives in memory the next replay overwrites: copy it now.
                got = _on_cuda(compiled(*call)).clone()
                expected = eager(*call)
                torch.testing.assert_close(got, expected, msg=lambda m: f"round {round_number}: {m}")
                if reference is not None:
                    torch.testing.assert_close(got, reference(*call))
    for name, (buffer, address) in buffers.items():
        assert graphed.get_buffer(name) is buffer and buffer.data_ptr() == address, name


@needs_cuda
@pytest.mark.parametrize("case", STATE_FIXES, ids=[case_id(c) for c in STATE_FIXES])
def test_fixed_state_updates_replay_under_cuda_graphs(case):
    _, _, example = case
    torch.manual_seed(0)
    calls = _on_cuda(eval(example.fixed_calls or example.calls, {"torch": torch}))  # noqa: S307
    _assert_replays_like_eager(example.fixed, example.entry, calls)


@needs_cuda
def test_bundled_transformer_block_fixed_with_unsafe_fixes_replays_under_cuda_graphs():
    """The issue-32 failure: `--fix --unsafe-fixes` on examples/models/transformer_block.py,
    run with mode="reduce-overhead", equals the original run eagerly."""
    import os

    from compile_lint.engine.api import fix_text
    from compile_lint.settings.config import Config

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples", "models", "transformer_block.py")
    with open(path, encoding="utf-8") as handle:
        original = handle.read()
    outcome = fix_text(original, path, Config(), unsafe=True)
    assert outcome.error is None and any(d.code == "JIT501" for d in outcome.applied)
    torch.manual_seed(0)
    x = torch.randn(2, 8, 32, device="cuda")
    _assert_replays_like_eager(outcome.text, "TransformerBlock", [(x,), (x + 1,)],
                               reference=_cuda_model(original, "TransformerBlock"))

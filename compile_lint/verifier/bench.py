"""Benchmarks: eager vs compiled (default, reduce-overhead) vs compiled with the reuse patch.

Each example call is timed on its own (one row per token count), compiled for its own
shapes (dynamic=False), as a serving stack would. All variants of one call are built and
warmed up first, then timed in rotating rounds, so drift in clocks or host load hits all
alike; a sample is `inner` back-to-back calls between two CUDA events (perf_counter on
CPU), and the median of `iters` samples is reported. `reduce-overhead` replays CUDA graphs
after its warm-up calls.
"""

from __future__ import annotations

import re
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional, Sequence

from compile_lint.verifier.analysis import compare, first_line, run_calls, snapshot, tolerance
from compile_lint.verifier.targets import Call, cast_floating, copy_calls

VARIANTS = ("eager", "default", "default+patch", "reduce-overhead", "reduce-overhead+patch")
# The patched build must be faster by more than the measured spread of both timings (their
# relative interquartile ranges, summed), and never by less than this, to be recommended.
MIN_GAIN = 0.01


@dataclass
class Timing:
    """One variant on one example call."""

    variant: str
    call: int
    median_ms: float
    compile_s: float = 0.0
    spread: float = 0.0  # the samples' interquartile range relative to the median (noise)


@dataclass
class CodeStats:
    """Counted from Inductor's generated source."""

    kernels: int
    buffers: int
    loads: int


@dataclass
class PatchNumerics:
    """Max abs difference to eager of the stock and patched builds, per dtype.

    `patched_within_tolerance`: allclose to eager at the dtype's tolerance, or no further
    from eager than the stock build."""

    dtype: str
    stock_max_abs_diff: float
    patched_max_abs_diff: float
    atol: float
    patched_within_tolerance: bool


@dataclass
class BenchResult:
    """All timings of one target, plus the patch comparison when asked for."""

    device: str
    timings: list[Timing] = field(default_factory=list)
    stock_code: Optional[CodeStats] = None
    patched_code: Optional[CodeStats] = None
    numerics: list[PatchNumerics] = field(default_factory=list)
    recommendation: str = ""
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        """A plain dict."""
        return asdict(self)


def code_stats(sources: Sequence[str]) -> CodeStats:
    """Kernels, allocated buffers and loads in Inductor's generated code (Triton or C++)."""
    text = "\n".join(sources)
    kernels = len(re.findall(r"= async_compile\.(?:triton|cpp_pybinding|cpp)\(", text))
    buffers = len(re.findall(r"\bempty_strided(?:_\w+)?\(", text))
    loads = len(re.findall(r"\btl\.load\(|\bin_ptr\d+\[|\bloadu\(", text))
    return CodeStats(kernels, buffers, loads)


def _synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _sample_ms(fn: Callable, call: Call, device: str, inner: int) -> float:
    """Milliseconds per call over `inner` back-to-back calls (CUDA events on a GPU)."""
    import torch

    if device.startswith("cuda"):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn(*call.args, **call.kwargs)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / inner
    start_s = time.perf_counter()
    for _ in range(inner):
        fn(*call.args, **call.kwargs)
    return (time.perf_counter() - start_s) * 1000.0 / inner


def _relative_spread(values: Sequence[float]) -> float:
    """The interquartile range of `values` over their median: how far noise moves a timing."""
    median = statistics.median(values)
    if len(values) < 2 or median <= 0:
        return 0.0
    quartiles = statistics.quantiles(values, n=4)
    return (quartiles[2] - quartiles[0]) / median


def time_interleaved(fns: dict[str, Callable], call: Call, device: str, iters: int,
                     inner: int) -> dict[str, tuple[float, float]]:
    """(median ms per call, relative spread) of each function, sampled in rotating rounds
    (A B C, B C A, ...) so that drift in clocks or host load hits every variant alike."""
    import torch

    names = list(fns)
    samples: dict[str, list[float]] = {name: [] for name in names}
    with torch.no_grad():
        _synchronize(device)
        for round_index in range(iters):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(_sample_ms(fns[name], call, device, inner))
    return {name: (statistics.median(values), _relative_spread(values)) for name, values in samples.items()}


# `--fix --verify --bench`: each timing sample lasts about this long (back-to-back calls), so that a
# fast model is timed over more than the scheduler's noise on a shared machine.
SAMPLE_S = 0.02


def time_compiled(fresh_model: Callable[[], Callable], calls: Sequence[Call], device: str,
                  backend: str = "inductor", warmup: int = 3, iters: int = 15) -> dict:
    """A fresh model compiled (default settings, `backend`), warmed up, then timed on each example
    call: ms per pass over all the calls, the median (`ms`) and the lower and upper quartiles
    (`low`, `high`) of each call's samples summed. `--fix --verify --bench` compares the
    original's and the fixed code's."""
    import torch
    import torch._dynamo

    torch._dynamo.reset()
    compiled = torch.compile(fresh_model(), backend=backend)
    total = {"ms": 0.0, "low": 0.0, "high": 0.0}
    with torch.no_grad():
        for call in copy_calls(calls):
            for _ in range(warmup):
                compiled(*call.args, **call.kwargs)
            once_ms = _sample_ms(compiled, call, device, 1)
            inner = max(1, min(1000, int(SAMPLE_S * 1000 / max(once_ms, 1e-3))))
            samples = [_sample_ms(compiled, call, device, inner) for _ in range(iters)]
            low, median, high = statistics.quantiles(samples, n=4)
            total = {"ms": total["ms"] + median, "low": total["low"] + low, "high": total["high"] + high}
    torch._dynamo.reset()
    return {**total, "backend": backend}


def _build(model: Callable, variant: str) -> Callable:
    import torch

    from compile_lint.verifier import inductor_patch

    if variant == "eager":
        return model
    mode = variant.split("+")[0]
    mode_or_none = None if mode == "default" else mode
    if variant.endswith("+patch"):
        return torch.compile(model, options=inductor_patch.compile_options(mode_or_none), dynamic=False)
    if variant.endswith("+control"):
        return torch.compile(model, options=inductor_patch.control_options(mode_or_none), dynamic=False)
    return torch.compile(model, mode=mode_or_none, dynamic=False)


def _first_call_seconds(fn: Callable, call: Call, device: str) -> float:
    import torch

    _synchronize(device)
    start = time.perf_counter()
    with torch.no_grad():
        fn(*call.args, **call.kwargs)
    _synchronize(device)
    return time.perf_counter() - start


def bench_variants(model: Callable, calls: Sequence[Call], device: str, variants: Sequence[str],
                   warmup: int, iters: int, result: BenchResult, inner: int = 10) -> None:
    """Per example call: build every variant for that shape (compile time = the first call's
    wall time, with the patch on for +patch builds), warm each up, then time them interleaved."""
    import torch
    import torch._dynamo

    from compile_lint.verifier import inductor_patch

    # Copies: a tensor once marked dynamic stays marked, and a benchmark must compile each
    # shape on its own, as a serving stack with static shapes does.
    for index, call in enumerate(copy_calls(calls)):
        torch._dynamo.reset()
        fns: dict[str, Callable] = {}
        compile_s: dict[str, float] = {}
        for variant in variants:
            try:
                with inductor_patch.reuse_cost_model(variant.endswith("+patch")), torch.no_grad():
                    fn = _build(model, variant)
                    compile_s[variant] = _first_call_seconds(fn, call, device) if variant != "eager" else 0.0
                    for _ in range(warmup):
                        fn(*call.args, **call.kwargs)
                fns[variant] = fn
            except Exception as error:  # noqa: BLE001 - one failing variant must not hide the others
                result.errors.append(f"{variant} (call {index}): {first_line(error)}")
        graphs_before = _graph_count()
        measured = time_interleaved(fns, call, device, iters, inner)
        if _graph_count() != graphs_before:
            result.errors.append(f"call {index}: a variant recompiled while being timed; its numbers are suspect")
        result.timings.extend(Timing(variant, index, measured[variant][0], compile_s[variant], measured[variant][1])
                              for variant in fns)
    torch._dynamo.reset()


def _graph_count() -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def _compiled_outputs_and_code(model: Callable, calls: Sequence[Call], patched: bool) -> tuple[list, list[str]]:
    import torch
    import torch._dynamo
    from torch._inductor.utils import run_and_get_code

    from compile_lint.verifier import inductor_patch

    torch._dynamo.reset()
    sources: list[str] = []
    outputs = []
    with inductor_patch.reuse_cost_model(patched), torch.no_grad():
        fn = torch.compile(model, dynamic=False)
        for call in calls:
            out, code = run_and_get_code(fn, *call.args, **call.kwargs)
            outputs.append(snapshot(out))
            sources.extend(code)
    torch._dynamo.reset()
    return outputs, sources


def compare_patch(fresh_model: Callable[[], Callable], calls: Sequence[Call], result: BenchResult,
                  dtypes: Sequence[Any]) -> None:
    """Generated-code counts and numerical difference to eager, stock vs patched, per dtype.

    Eager, stock and patched each run a fresh model (the factory again) on fresh copies of
    the calls, so a model that keeps state compares like with like."""
    import torch

    for dtype in dtypes:
        def typed_model() -> Callable:
            model = fresh_model()
            return model.to(dtype) if isinstance(model, torch.nn.Module) else model

        try:
            typed_calls = [Call(cast_floating(c.args, dtype), cast_floating(c.kwargs, dtype)) for c in calls]
            eager = run_calls(typed_model(), copy_calls(typed_calls))
            stock_out, stock_src = _compiled_outputs_and_code(typed_model(), copy_calls(typed_calls), patched=False)
            patched_out, patched_src = _compiled_outputs_and_code(typed_model(), copy_calls(typed_calls), patched=True)
        except Exception as error:  # noqa: BLE001
            result.errors.append(f"patch compare ({dtype}): {first_line(error)}")
            continue
        if dtype == torch.float32 or result.stock_code is None:
            result.stock_code, result.patched_code = code_stats(stock_src), code_stats(patched_src)
        stock_cmp, patched_cmp = compare(eager, stock_out), compare(eager, patched_out)
        # Within tolerance: close to eager at the dtype's tolerance, or no further from
        # eager than stock Inductor already is (in bf16 stock keeps float32 intermediates
        # that eager rounds, so stock itself can sit outside a plain allclose).
        acceptable = patched_cmp.equal or patched_cmp.max_abs_diff <= stock_cmp.max_abs_diff
        result.numerics.append(PatchNumerics(
            str(dtype).replace("torch.", ""), stock_cmp.max_abs_diff, patched_cmp.max_abs_diff,
            tolerance(dtype)[0], acceptable))


def recommend(result: BenchResult) -> str:
    """Recommend the patch only where it is faster, beyond noise, and within tolerance.

    Identical generated code (the same kernels, buffers and loads) is "no difference",
    whatever the timings say: they can only differ by noise then. Otherwise a call counts
    as faster or slower only by more than its margin: the measured spread of the baseline
    and the patched timing together, at least MIN_GAIN. The baseline is the control build
    (stock codegen, same extra pass) when there is one.
    """
    by_key = {(t.variant, t.call): t for t in result.timings}
    gains = []
    for (variant, call), patched in by_key.items():
        if not variant.endswith("+patch"):
            continue
        mode = variant[:-6]
        baseline = by_key.get((mode + "+control", call), by_key.get((mode, call)))
        if baseline is not None and patched.median_ms > 0:
            margin = max(MIN_GAIN, baseline.spread + patched.spread)
            gains.append((mode, call, baseline.median_ms / patched.median_ms - 1.0, margin))
    if not gains:
        return "no patched timings: nothing to recommend"
    text = ", ".join(f"{mode} call {call}: {gain:+.1%} (noise ±{margin:.1%})" for mode, call, gain, margin in gains)
    stock = result.stock_code
    if stock is not None and stock == result.patched_code:
        return (f"no difference: the patched build generates the same kernels, buffers and loads as stock "
                f"({stock.kernels}, {stock.buffers}, {stock.loads}); the timings differ by noise only ({text})")
    if any(not n.patched_within_tolerance for n in result.numerics):
        bad = ", ".join(n.dtype for n in result.numerics if not n.patched_within_tolerance)
        return f"keep stock: the patched build is outside tolerance in {bad}"
    faster = [g for g in gains if g[2] > g[3]]
    slower = [g for g in gains if g[2] < -g[3]]
    if faster and not slower:
        return f"use the patch: faster everywhere ({text})" if len(faster) == len(gains) else \
            f"use the patch only for the faster calls ({text})"
    if faster:
        return f"use the patch only for the faster calls ({text})"
    if slower:
        return f"keep stock: not faster ({text})"
    return f"keep stock: no difference beyond the measured spread ({text})"


def run_bench(fresh_model: Callable[[], Callable], calls: Sequence[Call], device: str, patch_mode: str,
              warmup: int = 10, iters: int = 50, inner: int = 10, control: bool = False) -> BenchResult:
    """The whole benchmark of one target; `control` adds stock builds keyed like patched ones.

    The timed variants share one model (only speed is read from them); the patch
    comparison, which compares outputs, builds a fresh model for every run."""
    import torch

    result = BenchResult(device=device)
    variants = [v for v in VARIANTS if patch_mode != "off" or not v.endswith("+patch")]
    if patch_mode == "on":
        variants = ["eager", "default+patch", "reduce-overhead+patch"]
    if control and patch_mode == "compare":
        variants = [v for variant in variants
                    for v in ((variant, variant.replace("+patch", "+control")) if variant.endswith("+patch")
                              else (variant,))]
    if not device.startswith("cuda"):
        # reduce-overhead's gain is CUDA graph replay; on CPU it only adds compile time.
        variants = [v for v in variants if not v.startswith("reduce-overhead")]
    bench_variants(fresh_model(), calls, device, variants, warmup, iters, result, inner)
    if patch_mode == "compare":
        dtypes = [torch.float32, torch.bfloat16]
        compare_patch(fresh_model, calls, result, dtypes)
        result.recommendation = recommend(result)
    return result

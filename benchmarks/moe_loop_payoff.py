"""Does the MoE loop fix pay? The experts loop over `nonzero()` against the loop over every expert.

compile-lint's JIT207 fix (compile_lint/fixes/index_loops.py) rewrites transformers' eager
experts loop

    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert_idx in expert_hit: ...

into `for expert_idx in range(num_experts + 1):` with
`torch._dynamo.config.capture_dynamic_output_shape_ops = True`, so the block compiles as one
graph. The price: every expert runs its gather, two matmuls and its `index_add_` even when no
token picked it (on a GPU, kernel launches on empty tensors), while the original pays a
`nonzero()` device-to-host sync and one graph break per layer, then runs only the experts hit.
This script times, per size (tokens x experts x top-k, Mixtral-like widths):

- `eager-original`, `compiled-original` (default torch.compile: it breaks at `nonzero()`),
- `eager-fixed`, `compiled-fixed` (default torch.compile with the capture setting: one graph),
- `compiled-fixed-ro` (mode="reduce-overhead"; CUDA graphs, where the unbacked sizes allow),

and checks every variant's output against `eager-original` (max abs diff). Few tokens (decode:
1 or 4 tokens, so most experts get none) is where the fix costs most; many tokens (every
expert hit) where it costs nothing but the breaks it removes.

    python benchmarks/moe_loop_payoff.py --out benchmarks/results/moe_loop_payoff        # on the GPU
    python benchmarks/moe_loop_payoff.py --device cpu --quick --out /tmp/moe              # CPU smoke test

Writes OUT.json and OUT.md; the committed results say on which machine they were measured
(benchmarks/fix_payoff_device.sh runs it on the GPU machine with fix_payoff.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable

import torch
import torch._dynamo
from torch import nn

# (tokens, hidden, intermediate, experts, top_k): Mixtral 8x7B widths (8 experts) and Qwen2-MoE-like
# (60 small experts), decode to prefill, in the order they are measured: the ones that decide
# first, so that a time budget (--budget-s) cuts the rest. The report sorts them.
MIXTRAL, QWEN = (4096, 14336, 8, 2), (2048, 1408, 60, 4)
SIZES = [(tokens, *shape) for tokens, shape in ((1, MIXTRAL), (4096, MIXTRAL), (1, QWEN), (512, MIXTRAL),
                                                 (16, QWEN), (512, QWEN), (4, MIXTRAL), (64, MIXTRAL))]
QUICK = [(tokens, 64, 128, 8, 2) for tokens in (1, 16, 256)] + [(1, 64, 128, 64, 2), (256, 64, 128, 64, 2)]


class Experts(nn.Module):
    """transformers 5.23's MixtralExperts (eager implementation), original or as the fix writes it."""

    def __init__(self, hidden: int, intermediate: int, experts: int, fixed: bool) -> None:
        super().__init__()
        self.num_experts = experts
        self.fixed = fixed
        self.gate_up_proj = nn.Parameter(torch.randn(experts, 2 * intermediate, hidden) / hidden ** 0.5)
        self.down_proj = nn.Parameter(torch.randn(experts, hidden, intermediate) / intermediate ** 0.5)
        self.act_fn = nn.SiLU()

    def forward(self, hidden_states: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor):
        return (self._fixed if self.fixed else self._original)(hidden_states, top_k_index, top_k_weights)

    def _expert(self, hidden_states, top_k_weights, expert_mask, expert_idx, final_hidden_states):
        top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
        current_state = hidden_states[token_idx]
        gate, up = nn.functional.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
        current_hidden_states = self.act_fn(gate) * up
        current_hidden_states = nn.functional.linear(current_hidden_states, self.down_proj[expert_idx])
        current_hidden_states = current_hidden_states * top_k_weights[token_idx, top_k_pos, None]
        final_hidden_states.index_add_(0, token_idx, current_hidden_states.to(final_hidden_states.dtype))

    def _original(self, hidden_states, top_k_index, top_k_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        with torch.no_grad():
            expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts + 1)
            expert_mask = expert_mask.permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert_idx = expert_idx[0]
            if expert_idx == self.num_experts:
                continue
            self._expert(hidden_states, top_k_weights, expert_mask, expert_idx, final_hidden_states)
        return final_hidden_states

    def _fixed(self, hidden_states, top_k_index, top_k_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        with torch.no_grad():
            expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts + 1)
            expert_mask = expert_mask.permute(2, 1, 0)
        for expert_idx in range(self.num_experts + 1):
            if expert_idx == self.num_experts:
                continue
            self._expert(hidden_states, top_k_weights, expert_mask, expert_idx, final_hidden_states)
        return final_hidden_states


def routing(tokens: int, experts: int, top_k: int, device: str, dtype: torch.dtype, seed: int = 0):
    """Hidden states and a top-k routing (indices, normalised weights) as transformers' router makes them."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    logits = torch.randn(tokens, experts, generator=generator)
    weights, index = torch.topk(logits.softmax(-1), top_k, dim=-1)
    weights = weights / weights.sum(-1, keepdim=True)
    return index.to(device), weights.to(device=device, dtype=dtype)


def timer(device: str) -> Callable[[Callable[[], Any], int], float]:
    """A function timing `inner` calls of `run`, in ms per call (CUDA events on a GPU)."""
    def time_it(run: Callable[[], Any], inner: int) -> float:
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                run()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / inner
        began = time.perf_counter()
        for _ in range(inner):
            run()
        return (time.perf_counter() - began) * 1000 / inner
    return time_it


def measure(size: tuple, device: str, dtype: torch.dtype, warmup: int, repeats: int, inner: int) -> dict:
    """Every variant at one size: median ms per call, spread, compile seconds, graph breaks, max abs diff."""
    tokens, hidden, intermediate, experts, top_k = size
    torch.manual_seed(0)
    original = Experts(hidden, intermediate, experts, fixed=False).to(device=device, dtype=dtype).eval()
    fixed = Experts(hidden, intermediate, experts, fixed=True).to(device=device, dtype=dtype).eval()
    fixed.load_state_dict(original.state_dict())
    x = torch.randn(tokens, hidden, device=device, dtype=dtype)
    index, weights = routing(tokens, experts, top_k, device, dtype)
    hit = int(torch.unique(index).numel())
    variants: dict[str, Callable[[], Any]] = {}
    compile_seconds: dict[str, float] = {}
    errors: dict[str, str] = {}
    breaks: dict[str, int] = {}

    def build(name: str, model: nn.Module, mode: str | None, capture: bool) -> None:
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=capture):
            compiled = torch.compile(model, mode=mode) if mode else torch.compile(model)
            began = time.perf_counter()
            try:
                with torch.no_grad():
                    for _ in range(3):  # reduce-overhead records on the third call
                        compiled(x, index, weights)
                if device == "cuda":
                    torch.cuda.synchronize()
            except Exception as error:  # a variant that fails is reported, not fatal
                errors[name] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:300]
                return
        compile_seconds[name] = round(time.perf_counter() - began, 2)
        breaks[name] = sum(torch._dynamo.utils.counters["graph_break"].values())

        def run() -> Any:
            with torch.no_grad(), torch._dynamo.config.patch(capture_dynamic_output_shape_ops=capture):
                return compiled(x, index, weights)
        variants[name] = run

    def eager(model: nn.Module) -> Callable[[], Any]:
        def run() -> Any:
            with torch.no_grad():
                return model(x, index, weights)
        return run

    variants["eager-original"] = eager(original)
    variants["eager-fixed"] = eager(fixed)
    build("compiled-original", original, None, capture=False)
    build("compiled-fixed", fixed, None, capture=True)
    if device == "cuda":
        build("compiled-fixed-ro", fixed, "reduce-overhead", capture=True)
    reference = variants["eager-original"]().float()
    diffs = {name: float((run().float() - reference).abs().max()) for name, run in variants.items()}
    time_it = timer(device)
    for run in variants.values():
        for _ in range(warmup):
            run()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):  # rotating rounds: drift hits every variant alike
        for name, run in variants.items():
            samples[name].append(time_it(run, inner))
    timings = {}
    for name, values in samples.items():
        median = statistics.median(values)
        quartiles = statistics.quantiles(values, n=4) if len(values) >= 4 else [median, median, median]
        timings[name] = {"ms": round(median, 4), "spread": round((quartiles[2] - quartiles[0]) / median, 3)}
    base = timings.get("compiled-original", timings["eager-original"])["ms"]
    return {
        "tokens": tokens, "hidden": hidden, "intermediate": intermediate, "experts": experts, "top_k": top_k,
        "experts_hit": hit, "timings": timings, "compile_s": compile_seconds, "graph_breaks": breaks,
        "errors": errors, "max_abs_diff_vs_eager_original": diffs,
        "fixed_over_original_compiled": round(base / timings["compiled-fixed"]["ms"], 3)
        if "compiled-fixed" in timings else None,
    }


def markdown(report: dict) -> str:
    """The results as a Markdown table."""
    lines = [
        "# MoE experts loop: `nonzero()` loop vs loop over every expert (JIT207 fix)", "",
        f"Command: `{report['command']}`. Machine: {report['machine']}; torch {report['torch']}; {report['dtype']}.",
        "", "| tokens | hidden x inter | experts (hit) / top-k | eager orig | compiled orig (breaks) | eager fixed "
        "| compiled fixed (breaks) | reduce-overhead fixed | compiled fixed / compiled orig | max abs diff |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in sorted(report["rows"], key=lambda row: (row["experts"], row["tokens"])):
        t, b = row["timings"], {name: row["graph_breaks"].get(name, "-") for name in ("compiled-original",
                                                                                 "compiled-fixed")}

        def cell(name: str) -> str:
            if name in row["errors"]:
                return "error"
            return f"{t[name]['ms']:.3f}" if name in t else "-"
        lines.append(
            f"| {row['tokens']} | {row['hidden']} x {row['intermediate']} | {row['experts']} ({row['experts_hit']}) / "
            f"{row['top_k']} | {cell('eager-original')} | {cell('compiled-original')} ({b['compiled-original']}) "
            f"| {cell('eager-fixed')} | {cell('compiled-fixed')} ({b['compiled-fixed']}) "
            f"| {cell('compiled-fixed-ro')} | {row['fixed_over_original_compiled']}x "
            f"| {max(row['max_abs_diff_vs_eager_original'].values()):.3g} |")
    errors = [f"- {row['tokens']} tokens, {name}: {error}" for row in report["rows"]
              for name, error in row["errors"].items()]
    if errors:
        lines += ["", "Errors:", *errors]
    if report.get("skipped"):
        lines += ["", "Skipped for the time budget (tokens, hidden, intermediate, experts, top-k): "
                  + ", ".join(str(tuple(size)) for size in report["skipped"])]
    return "\n".join(lines) + "\n"


def main() -> int:
    """Time every size, print and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32"))
    parser.add_argument("--quick", action="store_true", help="small sizes (a CPU smoke test)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--inner", type=int, default=10)
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (CPU: one thread keeps a shared machine's "
                        "noise down)")
    parser.add_argument("--budget-s", type=float, default=float("inf"),
                        help="start no new size after this many seconds (the rest are listed as skipped)")
    parser.add_argument("--out", required=True, help="results prefix (.json and .md are added)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    deadline, rows, skipped = time.monotonic() + args.budget_s, [], []
    for size in QUICK if args.quick else SIZES:
        if time.monotonic() > deadline:
            skipped.append(size)
            continue
        rows.append(measure(size, args.device, dtype, args.warmup, args.repeats, args.inner))
        print(f"[moe] {size}: compiled fixed / compiled original {rows[-1]['fixed_over_original_compiled']}x",
              file=sys.stderr, flush=True)
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or "cpu"
    report = {"command": "python benchmarks/moe_loop_payoff.py " + " ".join(sys.argv[1:]),
              "machine": f"{device_name}, {os.cpu_count()} CPU cores", "torch": torch.__version__,
              "dtype": args.dtype, "rows": rows, "skipped": skipped}
    with open(args.out + ".json", "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1)
    with open(args.out + ".md", "w", encoding="utf-8") as handle:
        handle.write(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())

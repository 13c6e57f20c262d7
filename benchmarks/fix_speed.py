"""What `--fix` buys on the bundled examples, on a GPU: eager vs compiled original vs compiled fixed.

The fixed copy is made beforehand (where compile-lint and libcst are installed):

    cp -r examples /tmp/examples_fixed && compile-lint --fix --unsafe-fixes /tmp/examples_fixed

then, on the GPU machine (needs only torch):

    python benchmarks/fix_speed.py --original examples --fixed /tmp/examples_fixed --out fix_speed.json

Each side runs in its own process (both copies import their models as `models.*`). Per
verify target of examples/targets.py: eager, `torch.compile` (default) and
`mode="reduce-overhead"` (CUDA graphs) of the original and of the fixed code; a sample
is one pass over the target's example calls (so a recompile trap shows in the timing).
Prints a markdown table with speedups over the compiled original last.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

TARGETS = ("transformer_block", "score_filter", "moe_router_fixed_temperature", "moe_router", "detection_head")
MODES = ("eager", "default", "reduce-overhead")


def _to(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to(item, device) for item in value)
    if isinstance(value, dict):
        return {key: _to(item, device) for key, item in value.items()}
    return value


def _first(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().float().cpu().clone()
    if isinstance(value, (list, tuple)):
        return [_first(item) for item in value]
    return value


def run_side(folder: str, out: str, targets: list[str], warmup: int, iters: int) -> None:
    """Time every target of the examples copy in `folder` (this process imports only it)."""
    import torch
    import torch._dynamo

    sys.path.insert(0, os.path.abspath(folder))
    module = importlib.import_module("targets")
    results: dict[str, Any] = {}
    for name in targets:
        entry: dict[str, Any] = {}
        for mode in MODES:
            torch._dynamo.reset()
            torch.manual_seed(0)
            model, calls = getattr(module, name)()
            model = model.to("cuda").eval()
            calls = [_to(call if isinstance(call, tuple) else (call,), "cuda") for call in calls]
            fn = model if mode == "eager" else torch.compile(model, mode=None if mode == "default" else mode)
            try:
                with torch.no_grad():
                    started = time.perf_counter()
                    outputs = [_first(fn(*call)) for call in calls]
                    torch.cuda.synchronize()
                    entry[f"{mode}_first_pass_s"] = round(time.perf_counter() - started, 2)
                    for _ in range(warmup):
                        for call in calls:
                            fn(*call)
                    samples = []
                    for _ in range(iters):
                        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        start.record()
                        for call in calls:
                            fn(*call)
                        end.record()
                        end.synchronize()
                        samples.append(start.elapsed_time(end))
                entry[f"{mode}_ms"] = statistics.median(samples)
                entry[f"{mode}_outputs"] = outputs
            except Exception as error:  # noqa: BLE001 - one failing build must not hide the rest
                text = str(error).strip().splitlines()
                entry[f"{mode}_error"] = f"{type(error).__name__}: {text[0] if text else ''}"[:200]
        results[name] = entry
    torch.save(results, out)


def max_diff(a: Any, b: Any) -> float:
    """Largest absolute difference between two nested outputs (inf when shapes differ)."""
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return float((a - b).abs().max()) if a.shape == b.shape else float("inf")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return max([max_diff(x, y) for x, y in zip(a, b)] or [0.0])
    return 0.0 if a == b else float("inf")


def main(argv: list[str] | None = None) -> int:
    """Both sides, then the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--original", help="the examples folder as written")
    parser.add_argument("--fixed", help="a copy after `compile-lint --fix --unsafe-fixes`")
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--out", required=True, help="JSON file for the results")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    targets = args.targets.split(",")
    if args.side:
        run_side(args.side, args.out, targets, args.warmup, args.iters)
        return 0
    import torch

    sides = {}
    for label, folder in (("original", args.original), ("fixed", args.fixed)):
        out = args.out + f".{label}.pt"
        subprocess.run([sys.executable, os.path.abspath(__file__), "--side", folder, "--out", out,
                        "--targets", args.targets, "--warmup", str(args.warmup), "--iters", str(args.iters)],
                       check=True)
        sides[label] = torch.load(out, weights_only=False)
        os.remove(out)
    rows = []
    for name in targets:
        original, fixed = sides["original"][name], sides["fixed"][name]
        row: dict[str, Any] = {"target": name}
        for label, entry in (("original", original), ("fixed", fixed)):
            for mode in MODES:
                if f"{mode}_ms" in entry:
                    row[f"{label}_{mode}_ms"] = entry[f"{mode}_ms"]
                if f"{mode}_error" in entry:
                    row[f"{label}_{mode}_error"] = entry[f"{mode}_error"]
        if "eager_outputs" in original and "eager_outputs" in fixed:
            row["fixed_vs_original_eager_max_abs_diff"] = max_diff(original["eager_outputs"], fixed["eager_outputs"])
        rows.append(row)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows}, handle, indent=1)
    print("| target | eager ms | compiled original ms | compiled fixed ms | fixed / original (default) | "
          "reduce-overhead original ms | reduce-overhead fixed ms | fixed / original (reduce-overhead) | "
          "fixed reduce-overhead vs eager | fixed vs original eager, max abs diff |")
    print("|" + " --- |" * 10)
    for row in rows:
        def ms(key: str) -> str:
            return f"{row[key]:.3f}" if key in row else "error"

        def ratio(a: str, b: str) -> str:
            return f"{row[a] / row[b]:.2f}x" if a in row and b in row else "-"

        print(f"| {row['target']} | {ms('original_eager_ms')} | {ms('original_default_ms')} | "
              f"{ms('fixed_default_ms')} | "
              f"{ratio('original_default_ms', 'fixed_default_ms')} | {ms('original_reduce-overhead_ms')} | "
              f"{ms('fixed_reduce-overhead_ms')} | "
              f"{ratio('original_reduce-overhead_ms', 'fixed_reduce-overhead_ms')} | "
              f"{ratio('original_eager_ms', 'fixed_reduce-overhead_ms')} | "
              f"{row.get('fixed_vs_original_eager_max_abs_diff', '-')} |")
    errors = [f"- {row['target']} {key}: {value}" for row in rows for key, value in row.items()
              if key.endswith("_error")]
    if errors:
        print("\n" + "\n".join(errors))
    return 0


if __name__ == "__main__":
    sys.exit(main())

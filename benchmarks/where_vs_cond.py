"""`torch.where` or `torch.cond` for a tensor-valued branch? Measured, on a GPU.

Three realistic modules with a branch on tensor data, each written three ways: the broken
original (`if h.mean() > 0:`, a graph break), the `torch.where` rewrite (both arms run,
one graph) and the `torch.cond` rewrite (one arm runs, one graph):

- cheap: the arms differ only in values (`h * 2 + x` vs `h * 0.5 - x`);
- per-arm: each arm calls its own MLP (Linear, GELU, Linear; d -> 4d -> d);
- heavy-cheap: one arm runs two MLPs, the other scales its input; timed with the
  condition true (heavy arm taken) and false (cheap arm taken).

Each is timed eager, `torch.compile` (default) and `torch.compile(mode="reduce-overhead")`
(CUDA graphs), per size and dtype, and the table gives the speedup over the compiled
broken original (default mode). Outputs of every form are checked against the broken
original's eager output first.

    python benchmarks/where_vs_cond.py --out results.json [--budget-s 300] [--quick]

Needs only torch (and a GPU for meaningful numbers). Prints a markdown table last.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any, Callable

import torch
from torch import nn

SIZES = {"small": (4, 128, 1024), "large": (16, 512, 2048)}   # (batch, sequence, hidden)
CONFIGS = [("small", "bfloat16"), ("large", "bfloat16"), ("large", "float32"), ("small", "float32")]
MODES = ("eager", "default", "reduce-overhead")


class MLP(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(nn.functional.gelu(self.up(x)))


# -- (i) cheap arms: values differ, work does not --------------------------------------

class CheapBase(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.proj, self.norm = nn.Linear(d, d), nn.LayerNorm(d)


class CheapBroken(CheapBase):
    def forward(self, x):
        h = self.proj(x)
        if h.mean() > 0:  # noqa: JIT101 - the broken original, on purpose
            out = h * 2.0 + x
        else:
            out = h * 0.5 - x
        return self.norm(out)


class CheapWhere(CheapBase):
    def forward(self, x):
        h = self.proj(x)
        out = torch.where(h.mean() > 0, h * 2.0 + x, h * 0.5 - x)
        return self.norm(out)


class CheapCond(CheapBase):
    def forward(self, x):
        h = self.proj(x)
        out = torch.cond(h.mean() > 0, lambda h, x: h * 2.0 + x, lambda h, x: h * 0.5 - x, (h, x))
        return self.norm(out)


# -- (ii) per-arm submodules -----------------------------------------------------------

class PerArmBase(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.norm, self.mlp_a, self.mlp_b = nn.LayerNorm(d), MLP(d), MLP(d)


class PerArmBroken(PerArmBase):
    def forward(self, x):
        h = self.norm(x)
        if x.mean() > 0:  # noqa: JIT101 - the broken original, on purpose
            out = self.mlp_a(h)
        else:
            out = self.mlp_b(h)
        return x + out


class PerArmWhere(PerArmBase):
    def forward(self, x):
        h = self.norm(x)
        out = torch.where(x.mean() > 0, self.mlp_a(h), self.mlp_b(h))
        return x + out


class PerArmCond(PerArmBase):
    def forward(self, x):
        h = self.norm(x)
        out = torch.cond(x.mean() > 0, lambda h: self.mlp_a(h), lambda h: self.mlp_b(h), (h,))
        return x + out


# -- (iii) a heavy arm and a cheap arm ---------------------------------------------------

class HeavyBase(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.heavy = nn.Sequential(MLP(d), MLP(d))
        self.scale = nn.Parameter(torch.full((d,), 0.5))


class HeavyBroken(HeavyBase):
    def forward(self, x):
        if x.mean() > 0:  # noqa: JIT101 - the broken original, on purpose
            out = self.heavy(x)
        else:
            out = x * self.scale
        return out + x


class HeavyWhere(HeavyBase):
    def forward(self, x):
        out = torch.where(x.mean() > 0, self.heavy(x), x * self.scale)
        return out + x


class HeavyCond(HeavyBase):
    def forward(self, x):
        out = torch.cond(x.mean() > 0, lambda x: self.heavy(x), lambda x: x * self.scale, (x,))
        return out + x


CASES: dict[str, dict[str, type]] = {
    "cheap": {"broken": CheapBroken, "where": CheapWhere, "cond": CheapCond},
    "per-arm": {"broken": PerArmBroken, "where": PerArmWhere, "cond": PerArmCond},
    "heavy-cheap": {"broken": HeavyBroken, "where": HeavyWhere, "cond": HeavyCond},
}


def median_ms(fn: Callable, x: torch.Tensor, warmup: int, iters: int, inner: int) -> float:
    """Median milliseconds per call: `iters` samples of `inner` back-to-back calls, CUDA events."""
    with torch.no_grad():
        for _ in range(warmup):
            fn(x)
        torch.cuda.synchronize()
        samples = []
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                fn(x)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / inner)
    return statistics.median(samples)


def build(mode: str, model: nn.Module) -> Callable:
    """The callable for one mode; Dynamo's caches are reset so no build reuses another's."""
    import torch._dynamo

    torch._dynamo.reset()
    if mode == "eager":
        return model
    return torch.compile(model, mode=None if mode == "default" else mode, dynamic=False)


def tolerance(dtype: torch.dtype) -> float:
    return 3e-2 if dtype == torch.bfloat16 else 1e-3


def measure_one(case: str, size: str, dtype_name: str, condition: str, args: argparse.Namespace) -> list[dict]:
    """Every form x mode of one case at one size, dtype and branch direction."""
    dtype = getattr(torch, dtype_name)
    batch, seq, d = SIZES[size]
    generator = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(batch, seq, d, device="cuda", generator=generator, dtype=dtype)
    # The branch taken: shift the input so the condition is true or false for every form
    # (the cheap case reads proj(x): its bias decides instead).
    x = x.abs() + 0.1 if condition == "true" else -x.abs() - 0.1
    rows = []
    reference = None
    for form, cls in CASES[case].items():
        torch.manual_seed(0)
        model = cls(d).to("cuda", dtype).eval()
        if case == "cheap":
            with torch.no_grad():
                model.proj.bias.fill_(1.0 if condition == "true" else -1.0)
        with torch.no_grad():
            out = model(x).float()
        if reference is None:
            reference = out
        error = float((out - reference).abs().max() / (reference.abs().max() + 1e-12))
        row: dict[str, Any] = {"case": case, "size": size, "shape": [batch, seq, d], "dtype": dtype_name,
                               "condition": condition, "form": form, "rel_err_vs_broken": error,
                               "equal": error <= tolerance(dtype)}
        for mode in MODES:
            try:
                fn = build(mode, model)
                started = time.perf_counter()
                with torch.no_grad():
                    fn(x)
                torch.cuda.synchronize()
                row[f"{mode}_first_call_s"] = round(time.perf_counter() - started, 2)
                row[f"{mode}_ms"] = median_ms(fn, x, args.warmup, args.iters, args.inner)
            except Exception as error:  # noqa: BLE001 - one failing build must not hide the rest
                text = str(error).strip().splitlines()
                row[f"{mode}_error"] = f"{type(error).__name__}: {text[0] if text else ''}"[:200]
        rows.append(row)
    base = next(r for r in rows if r["form"] == "broken").get("default_ms")
    for row in rows:
        for mode in MODES:
            if base and row.get(f"{mode}_ms"):
                row[f"{mode}_speedup"] = base / row[f"{mode}_ms"]
    return rows


def table(rows: list[dict]) -> str:
    """Markdown: ms per call and speedup over the compiled (default) broken original."""
    lines = ["| case | size | dtype | branch taken | form | outputs | eager ms | default ms | reduce-overhead ms | "
             "speedup default | speedup reduce-overhead |", "|" + " --- |" * 11]
    for row in rows:
        def cell(mode: str) -> str:
            return f"{row[mode + '_ms']:.3f}" if f"{mode}_ms" in row else "error"

        def speed(mode: str) -> str:
            return f"{row[mode + '_speedup']:.2f}x" if f"{mode}_speedup" in row else "-"

        taken = {"true": "first arm", "false": "second arm"}[row["condition"]]
        lines.append(f"| {row['case']} | {'x'.join(map(str, row['shape']))} | {row['dtype']} | {taken} | "
                     f"{row['form']} | "
                     f"{'equal' if row['equal'] else 'DIFFER %.2g' % row['rel_err_vs_broken']} | "
                     f"{cell('eager')} | "
                     f"{cell('default')} | {cell('reduce-overhead')} | {speed('default')} | "
                     f"{speed('reduce-overhead')} |")
    errors = [f"- {r['case']} {r['size']} {r['dtype']} {r['form']}: {r[k]}" for r in rows for k in r
              if k.endswith("_error")]
    return "\n".join(lines + ([""] + errors if errors else []))


def main(argv: list[str] | None = None) -> int:
    """Measure, within the time budget; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file for every measurement")
    parser.add_argument("--budget-s", type=float, default=300, help="stop starting new configurations after this")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=15)
    parser.add_argument("--inner", type=int, default=5)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows: list[dict] = []
    skipped = []
    plan = [(case, size, dtype, condition) for size, dtype in CONFIGS for case in CASES
            for condition in (("true", "false") if case == "heavy-cheap" else ("true",))]
    for case, size, dtype, condition in plan:
        if time.perf_counter() - started > args.budget_s:
            skipped.append(f"{case} {size} {dtype} {condition}")
            continue
        rows.extend(measure_one(case, size, dtype, condition, args))
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows,
                       "skipped": skipped}, handle, indent=1)
        print(f"[{time.perf_counter() - started:.0f}s] {case} {size} {dtype} {condition} done",
              file=sys.stderr, flush=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "rows": rows,
                   "skipped": skipped}, handle, indent=1)
    print(table(rows))
    if skipped:
        print("\nskipped (time budget): " + ", ".join(skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())

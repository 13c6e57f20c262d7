"""Does a fix pay on the GPU? Every fix shape of the proof harness, timed compiled-fixed over
compiled-original (and eager), with the branch rewrites' cost model calibrated beside them.

Sections (`--sections`, in this order by default; each stops starting work once `--budget-s`
has passed, and what it skipped is listed):

- `examples`: examples/ copied, `compile-lint --fix --unsafe-fixes` on the copy, then
  `compile-lint verify --bench` of its fixable targets (on CUDA that includes
  `reduce-overhead`, where a buffer rebound in forward once failed); pass = no JIT904/JIT903
  and no benchmark error.
- `counter`: JIT501's in-place counter: the fixed transformer block and a warm-up scale at
  a realistic size, eager / default / `reduce-overhead`, the buffer checked to stay one tensor.
- `print`: a `print` in forward against its `is_compiling()` guard, at two sizes.
- `branches`: a branch on tensor data as the broken `if`, `torch.where` (both arms run),
  `torch.cond` (one arm runs) and the taken arm alone, for arms of 0 (elementwise), 1 and 4
  matmuls at a few sizes: the numbers behind `tensor-branch-fix = "auto"` (an untaken arm's
  cost, where - arm, against cond's overhead, cond - arm; fixes/branches/cost_model.py).
- `shapes`: every rule example whose fix the proof harness proves (tests/test_fix_proof.py),
  original and fixed at the examples' own sizes (launch overhead dominates there).

Timing: every variant of one comparison is built and warmed up first (`--warmup` passes),
then sampled in rotating rounds (`--repeats` samples of `--inner` passes; a pass is one run
over the example calls; CUDA events on a GPU, perf_counter on CPU). Noise: each variant's
interquartile range over its median (`spread`), and the drift between the medians of its
odd and even samples (`drift`). A ratio counts as faster or slower only beyond the sum of
both sides' spreads (at least 2%); else "same".

On the device (torch 2.11, CUDA, no libcst: carry its cp312 wheel), from the repository root:

    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \\
        --platform manylinux_2_28_x86_64 -d benchmarks/.cache/devwheels libcst==1.9.0     # here, once
    bash benchmarks/fix_payoff_device.sh          # there (see that script), carrying benchmarks/.cache/devwheels

On CPU, a smoke test: `python benchmarks/fix_payoff.py --device cpu --quick --out DIR`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from compile_lint.verifier.analysis import compare  # noqa: E402
from compile_lint.verifier.probe import load_module_from_source  # noqa: E402
from fix_payoff_sides import case_side, compiled, fix_tags, own_namespace, raising, with_settings  # noqa: E402
from fix_payoff_verify import verdict_lines, verify_slow_fix  # noqa: E402

SECTIONS = ("examples", "counter", "print", "branches", "shapes")
MIN_NOISE = 0.02
EXAMPLE_TARGETS = ("transformer_block", "score_filter", "moe_router_fixed_temperature", "clean_score_filter")


class Settings:
    """What the command line asked for, and the clock of the whole run."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.device, self.warmup, self.repeats, self.inner = args.device, args.warmup, args.repeats, args.inner
        self.quick, self.deadline = args.quick, time.monotonic() + args.budget_s
        self.shape_modes = tuple(args.shape_modes.split(","))
        self.verify_below = args.verify_below
        self.dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def modes(self) -> tuple[str, ...]:
        """Compile modes worth timing here: CUDA graphs only on CUDA."""
        return ("default", "reduce-overhead") if self.device.startswith("cuda") else ("default",)


# ----- timing ------------------------------------------------------------------------------

def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _sample_ms(run: Callable[[], Any], device: str, inner: int) -> float:
    if device.startswith("cuda"):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            run()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / inner
    started = time.perf_counter()
    for _ in range(inner):
        run()
    return (time.perf_counter() - started) * 1000.0 / inner


def _stats(samples: list[float]) -> dict:
    median = statistics.median(samples)
    quartiles = statistics.quantiles(samples, n=4) if len(samples) > 1 else [median] * 3
    halves = [statistics.median(samples[0::2]), statistics.median(samples[1::2])] if len(samples) > 3 else [median] * 2
    return {"median_ms": median, "spread": (quartiles[2] - quartiles[0]) / median if median else 0.0,
            "drift": abs(halves[0] / halves[1] - 1.0) if halves[1] else 0.0, "samples": len(samples)}


def time_variants(runs: dict[str, Callable[[], Any]], settings: Settings,
                  first_outputs: Optional[dict[str, Any]] = None) -> dict[str, dict]:
    """Each variant's stats (or its error), all warmed up first, then sampled in rotating rounds.
    A variant's first call (its compile) is timed as `first_s`, and what it returned is kept in
    `first_outputs` when given; a failing variant is left out."""
    results: dict[str, dict] = {}
    ready: dict[str, Callable[[], Any]] = {}
    with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):  # prints cost the same either way
        for name, run in runs.items():
            try:
                started = time.perf_counter()
                output = run()
                _sync(settings.device)
                if first_outputs is not None:
                    first_outputs[name] = output
                first_s = time.perf_counter() - started
                for _ in range(settings.warmup):
                    run()
                _sync(settings.device)
                ready[name], results[name] = run, {"first_s": round(first_s, 3)}
            except Exception as error:  # noqa: BLE001 - one failing build must not hide the others
                first_line = (str(error).strip().splitlines() or [""])[0]
                results[name] = {"error": f"{type(error).__name__}: {first_line}"[:300]}
        samples: dict[str, list[float]] = {name: [] for name in ready}
        names = list(ready)
        for round_index in range(settings.repeats):
            shift = round_index % max(1, len(names))
            for name in names[shift:] + names[:shift]:
                samples[name].append(_sample_ms(ready[name], settings.device, settings.inner))
    for name in ready:
        results[name].update(_stats(samples[name]))
    return results


def ratio(results: dict[str, dict], base: str, other: str) -> Optional[dict]:
    """`base` time over `other` time (above 1: `other` is faster) and whether that is beyond the noise."""
    if "median_ms" not in results.get(base, {}) or "median_ms" not in results.get(other, {}):
        return None
    value = results[base]["median_ms"] / results[other]["median_ms"]
    noise = max(MIN_NOISE, results[base]["spread"] + results[other]["spread"])
    verdict = "faster" if value > 1 + noise else "slower" if value < 1 - noise else "same"
    return {"ratio": round(value, 4), "noise": round(noise, 4), "verdict": verdict}


# ----- section: fix shapes ------------------------------------------------------------------


def fix_shapes(settings: Settings, selected: Optional[list[str]], report: dict,
               save: Callable[[], None] = lambda: None) -> None:
    """Every fixed rule example: eager / compiled original and fixed, per compile mode; `save` after each
    (a run killed at its time limit keeps the cases it finished)."""
    from compile_lint.testing import case_id, example_cases

    rows, skipped = [], []
    fixed_cases = example_cases("invalid", lambda rule, example: example.fixed is not None)
    cases = {case_id(case): case for case in fixed_cases}
    if selected:  # in the order asked for, so that a time budget cuts the last ones
        ordered = [name for item in selected for name in cases if name == item or name.startswith(item + "-")]
        cases = {name: cases[name] for name in dict.fromkeys(ordered)}
    for name, (rule, _index, example) in cases.items():
        if settings.out_of_time():
            skipped.append(name)
            continue
        fixed_code = own_namespace(example.fixed)
        modes = ["default", *(mode for mode in settings.shape_modes if mode != "default")]
        if rule.code == "JIT501" and "reduce-overhead" in settings.modes() and "reduce-overhead" not in modes:
            modes.append("reduce-overhead")  # the in-place counter must replay under CUDA graphs
        row: dict[str, Any] = {"case": name, "rule": rule.code, "applicability": rule.fix_applicability,
                               "tags": fix_tags(example.code, example.fixed), "modes": {}}
        for mode in modes:
            torch._dynamo.reset()
            runs, changes = {}, {}
            for side, code, calls in (("original", example.code, example.calls),
                                      ("fixed", fixed_code, example.fixed_calls or example.calls)):
                for variant in ("eager", mode) if mode == "default" else (mode,):
                    try:
                        runs[f"{side} {variant}"], changes[f"{side} {variant}"] = case_side(
                            code, example.entry, calls, variant, settings.device)
                    except Exception as error:  # noqa: BLE001 - e.g. an original that fails at import
                        runs[f"{side} {variant}"] = raising(error)
            with_settings(runs, changes)
            if any(changes.values()):
                row["settings"] = sorted({key for changed in changes.values() for key in changed})
            outputs: dict[str, Any] = {}
            timed = time_variants(runs, settings, outputs)
            row["modes"][mode] = {"timings": timed,
                                  "fixed_over_original": ratio(timed, f"original {mode}", f"fixed {mode}")}
            if mode == "default":
                row["fixed_vs_eager"] = ratio(timed, "original eager", f"fixed {mode}")
                # First passes, fresh models: the compiled fixed code against the original run eagerly.
                row["outputs_equal"] = (compare(outputs["original eager"], outputs[f"fixed {mode}"]).equal
                                        if {"original eager", f"fixed {mode}"} <= set(outputs) else None)
        speed = (row["modes"]["default"].get("fixed_over_original") or {}).get("ratio")
        left_s = settings.deadline - time.monotonic()
        if speed is not None and speed < settings.verify_below and left_s > 60:
            # Slow: does the payoff check of --fix --verify --bench say so (fix_payoff_verify.py)?
            row["verifier"] = verify_slow_fix(example.code, example.entry, example.calls, rule.code,
                                              timeout_s=min(300.0, left_s))
            print(f"[shapes] {name}: --fix --verify --bench: {row['verifier']['verdict']}", file=sys.stderr, flush=True)
        rows.append(row)
        report["shapes"] = {"rows": rows, "skipped": skipped}
        save()
        print(f"[shapes] {name} {row['tags']}: fixed/original default {speed}", file=sys.stderr, flush=True)
    torch._dynamo.reset()
    report["shapes"] = {"rows": rows, "skipped": skipped}


# ----- section: branches (the auto cost model) ------------------------------------------------

class BranchModel(nn.Module):
    """A branch on tensor data whose arms run `depth` matmuls each (0: elementwise only)."""

    def __init__(self, width: int, depth: int, form: str) -> None:
        super().__init__()
        self.form = form
        self.arm_a = nn.ModuleList(nn.Linear(width, width, bias=False) for _ in range(depth))
        self.arm_b = nn.ModuleList(nn.Linear(width, width, bias=False) for _ in range(depth))

    def first(self, h: torch.Tensor) -> torch.Tensor:
        for layer in self.arm_a:
            h = torch.tanh(layer(h))
        return h * 2.0 + 1.0

    def second(self, h: torch.Tensor) -> torch.Tensor:
        for layer in self.arm_b:
            h = torch.relu(layer(h))
        return h * 0.5 - 1.0

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if self.form == "arm":  # the taken arm alone: what any form must pay
            return self.first(h)
        if self.form == "where":
            return torch.where(h.mean() > 0, self.first(h), self.second(h))
        if self.form == "cond":
            return torch.cond(h.mean() > 0, self.first, self.second, (h,))
        if h.mean() > 0:  # noqa: JIT101 - the broken original, on purpose
            return self.first(h)
        return self.second(h)


BRANCH_SIZES = {"small": (1, 16, 256), "medium": (8, 512, 1024), "large": (16, 1024, 2048)}


def branches(settings: Settings, report: dict) -> None:
    """where / cond / broken / the arm alone, for 0, 1 and 4 matmuls per arm, per size and mode."""
    sizes = {"tiny": (1, 8, 64)} if settings.quick else BRANCH_SIZES
    depths = (0, 1) if settings.quick else (0, 1, 4)
    rows, skipped = [], []
    for size, (batch, tokens, width) in sizes.items():
        for depth in depths:
            for mode in settings.modes():
                if settings.out_of_time():
                    skipped.append(f"{size} depth {depth} {mode}")
                    continue
                torch._dynamo.reset()
                x = torch.randn(batch, tokens, width, device=settings.device, dtype=settings.dtype).abs() + 0.1
                runs = {}
                for form in ("broken", "where", "cond", "arm"):
                    torch.manual_seed(0)
                    model = BranchModel(width, depth, form).to(settings.device, settings.dtype).eval()
                    fn = compiled(model, mode)
                    runs[form] = (lambda fn=fn: fn(x))
                timed = time_variants(runs, settings)
                ms = {form: timed[form].get("median_ms") for form in timed}
                row = {"size": size, "shape": [batch, tokens, width], "depth": depth, "mode": mode, "timings": timed,
                       "where_over_broken": ratio(timed, "broken", "where"),
                       "cond_over_broken": ratio(timed, "broken", "cond"),
                       "cond_over_where": ratio(timed, "where", "cond")}
                if ms.get("arm") and ms.get("where") and ms.get("cond"):
                    row["untaken_arm_ms"] = ms["where"] - ms["arm"]
                    row["cond_overhead_ms"] = ms["cond"] - ms["arm"]
                rows.append(row)
                print(f"[branches] {size} depth {depth} {mode}: {ms}", file=sys.stderr, flush=True)
    report["branches"] = {"rows": rows, "skipped": skipped}


# ----- sections: the print guard and the in-place counter --------------------------------------

class Printing(nn.Module):
    def __init__(self, width: int, guarded: bool) -> None:
        super().__init__()
        self.guarded = guarded
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.up(x))
        if not self.guarded:
            print("hidden", h.shape)
        elif not torch.compiler.is_compiling():
            print("hidden", h.shape)
        return x + self.down(h)


def print_guard(settings: Settings, report: dict) -> None:
    rows = []
    for size, (batch, tokens, width) in ({"tiny": (1, 8, 64)} if settings.quick else
                                         {"small": (1, 16, 256), "medium": (8, 512, 1024)}).items():
        if settings.out_of_time():
            break
        torch._dynamo.reset()
        x = torch.randn(batch, tokens, width, device=settings.device, dtype=settings.dtype)
        runs = {}
        for label, guarded in (("original", False), ("guarded", True)):
            for mode in ("eager",) + settings.modes():  # a model of its own per build
                torch.manual_seed(0)
                fn = compiled(Printing(width, guarded).to(settings.device, settings.dtype).eval(), mode)
                runs[f"{label} {mode}"] = (lambda fn=fn: fn(x))
        timed = time_variants(runs, settings)
        rows.append({"size": size, "shape": [batch, tokens, width], "timings": timed,
                     **{f"guarded_over_original {mode}": ratio(timed, f"original {mode}", f"guarded {mode}")
                        for mode in settings.modes()}})
    torch._dynamo.reset()
    report["print"] = {"rows": rows}


def counter(settings: Settings, report: dict) -> None:
    """JIT501's fix of examples/models/transformer_block.py, original vs fixed, eager/default/reduce-overhead."""
    from compile_lint.engine.api import fix_text
    from compile_lint.settings.config import Config

    path = os.path.join(ROOT, "examples", "models", "transformer_block.py")
    with open(path, encoding="utf-8") as handle:
        original = handle.read()
    fixed = fix_text(original, path, Config(select=("JIT501",)), unsafe=True).text
    width = 32 if settings.quick else 1024
    x = torch.randn(2, 8 if settings.quick else 256, width, device=settings.device)
    runs, models = {}, {}
    for label, code in (("original", original), ("fixed", fixed)):
        for mode in ("eager",) + settings.modes():
            torch.manual_seed(0)
            model = load_module_from_source(code).TransformerBlock(dim=width, heads=8, hidden=4 * width)
            models[f"{label} {mode}"] = model = model.to(settings.device).eval()
            fn = compiled(model, mode)
            runs[f"{label} {mode}"] = (lambda fn=fn: fn(x))
    buffers = {name: (model.calls, model.calls.data_ptr())
               for name, model in models.items() if name.startswith("fixed")}
    timed = time_variants(runs, settings)
    kept = {name: models[name].calls is buffer and buffer.data_ptr() == address
            for name, (buffer, address) in buffers.items()}
    report["counter"] = {"fix": "\n".join(line for line in fixed.splitlines() if "calls" in line), "timings": timed,
                         "buffer_kept_in_place": kept,
                         **{f"fixed_over_original {mode}": ratio(timed, f"original {mode}", f"fixed {mode}")
                            for mode in settings.modes()},
                         **{f"fixed {mode}_over_eager": ratio(timed, "original eager", f"fixed {mode}")
                            for mode in settings.modes()}}
    torch._dynamo.reset()


# ----- section: the bundled examples' verify --bench -------------------------------------------

def examples(settings: Settings, targets: list[str], report: dict) -> None:
    """examples/ fixed with --fix --unsafe-fixes, then `verify --bench` per target, each a subprocess."""
    rows, work = [], tempfile.mkdtemp(prefix="fix-payoff-examples-")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    try:
        copy = os.path.join(work, "examples")
        shutil.copytree(os.path.join(ROOT, "examples"), copy)
        fixed = subprocess.run([sys.executable, "-m", "compile_lint", "--fix", "--unsafe-fixes", "--show-fixes",
                                "--no-cache", "."], cwd=copy, env=env, capture_output=True, text=True)
        report["examples_fix"] = {"exit": fixed.returncode, "fixed": [line for line in fixed.stdout.splitlines()
                                                                    if line.startswith("Fixed ")]}
        for target in targets:
            if settings.out_of_time():
                rows.append({"target": target, "skipped": "time budget"})
                continue
            report_path = os.path.join(work, f"{target}.json")
            command = ["verify", "--bench", "--inductor-patch=off", "--device", settings.device,
                       "--warmup", str(settings.warmup), "--iters", str(settings.repeats),
                       "--inner", str(settings.inner),
                       "--timeout", "280", "--report", report_path, f"targets.py:{target}"]
            done = subprocess.run([sys.executable, "-m", "compile_lint", *command], cwd=copy, env=env,
                                  capture_output=True, text=True)
            result = {}
            if os.path.exists(report_path):
                with open(report_path, encoding="utf-8") as handle:
                    result = json.load(handle)["results"][0]
            codes = re.findall(r"\bJIT9\d\d\b", done.stdout)
            bench = result.get("bench") or {}
            rows.append({"target": target, "command": "compile-lint " + " ".join(command), "exit": done.returncode,
                         "runtime_codes": sorted(set(codes)), "bench_errors": bench.get("errors", []),
                         "timings": bench.get("timings", []),
                         "verdict": [line for line in done.stdout.splitlines()
                                     if line.startswith(f"targets.py:{target} [")],
                         "passes": done.returncode in (0, 1) and not {"JIT903", "JIT904"} & set(codes)
                         and not bench.get("errors")})
            print(f"[examples] {target}: exit {done.returncode}, {sorted(set(codes))}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report["examples"] = rows


# ----- the report --------------------------------------------------------------------------------

def _fmt(item: Optional[dict]) -> str:
    return f"{item['ratio']:.2f}x ({item['verdict']}, noise {item['noise']:.0%})" if item else "-"


def render(report: dict) -> str:
    """The markdown summary of every section that ran."""
    env = report["env"]
    lines = [f"# Fix payoff on {env['device_name']}", "",
             f"torch {env['torch']}, triton {env.get('triton')}, Python {env['python']}; "
             f"command: `{env['command']}`", ""]
    for row in report.get("examples", []):
        lines.append(f"- examples `{row['target']}`: " + ("skipped" if "skipped" in row else
                     f"{'passes' if row['passes'] else 'FAILS'} (exit {row['exit']}, runtime findings "
                     f"{', '.join(row['runtime_codes']) or 'none'}, bench errors {len(row['bench_errors'])})"))
    if "counter" in report:
        item = report["counter"]
        lines += ["", "## JIT501 in-place counter (transformer block)", "",
                  *(f"- fixed over original, {key.split(' ', 1)[1]}: {_fmt(value)}" for key, value in item.items()
                    if key.startswith("fixed_over_original")),
                  f"- buffer kept in place: {item['buffer_kept_in_place']}"]
    for row in report.get("print", {}).get("rows", []):
        lines.append(f"- print guard, {row['size']} {row['shape']}: " + "; ".join(
            f"{key.split(' ', 1)[1]} {_fmt(value)}" for key, value in row.items() if key.startswith("guarded_over")))
    if report.get("branches", {}).get("rows"):
        lines += ["", "## where vs cond (over the compiled broken `if`)", "",
                  "| size | matmuls per arm | mode | broken ms | where | cond | untaken arm ms | cond overhead ms |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for row in report["branches"]["rows"]:
            broken = row["timings"].get("broken", {}).get("median_ms")
            lines.append(f"| {row['size']} {row['shape']} | {row['depth']} | {row['mode']} | "
                         f"{broken if broken is None else f'{broken:.4f}'} | {_fmt(row['where_over_broken'])} | "
                         f"{_fmt(row['cond_over_broken'])} | {row.get('untaken_arm_ms', float('nan')):.4f} | "
                         f"{row.get('cond_overhead_ms', float('nan')):.4f} |")
    shapes = report.get("shapes", {}).get("rows", [])
    if shapes:
        lines += ["", "## Fix shapes (compiled fixed over compiled original)", "",
                  "| case | fix | applicability | default | reduce-overhead | fixed vs eager | outputs equal |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for row in shapes:
            modes = row["modes"]
            lines.append(f"| {row['case']} | {', '.join(row['tags'])} | {row['applicability']} | "
                         f"{_fmt(modes.get('default', {}).get('fixed_over_original'))} | "
                         f"{_fmt(modes.get('reduce-overhead', {}).get('fixed_over_original'))} | "
                         f"{_fmt(row.get('fixed_vs_eager'))} | {row['outputs_equal']} |")
        values = [row["modes"]["default"]["fixed_over_original"]["ratio"] for row in shapes
                  if row["modes"].get("default", {}).get("fixed_over_original")]
        slower = [row["case"] for row in shapes if (row["modes"].get("default", {}).get("fixed_over_original") or {})
                  .get("verdict") == "slower"]
        if values:
            geomean = math.exp(sum(map(math.log, values)) / len(values))
            lines += ["", f"Geomean {geomean:.3f}x over {len(values)} cases (worst {min(values):.2f}x); "
                          f"slower beyond the noise (default mode): {', '.join(slower) or 'none'}."]
        lines += verdict_lines(shapes)
    skipped = [item for key in ("shapes", "branches") for item in report.get(key, {}).get("skipped", [])]
    if skipped:
        lines += ["", f"Skipped for the time budget: {', '.join(skipped)}."]
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for fix_payoff.json and fix_payoff.md")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated, of {', '.join(SECTIONS)}")
    parser.add_argument("--cases", help="fix shapes to time: JIT101, JIT501-0, ... (default: all)")
    parser.add_argument("--shape-modes", default="default",
                        help="compile modes for the fix shapes (JIT501's always adds reduce-overhead on CUDA)")
    parser.add_argument("--targets", default=",".join(EXAMPLE_TARGETS), help="the examples' verify targets")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=30, help="timed samples per variant")
    parser.add_argument("--inner", type=int, default=5, help="passes per sample")
    parser.add_argument("--budget-s", type=float, default=540.0, help="start no new work after this")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a CPU smoke test)")
    parser.add_argument("--verify-below", type=float, default=0.9,
                        help="a fix shape slower than this (compiled fixed over compiled original, default mode) "
                             "is also run through --fix --verify --bench (fix_payoff_verify.py); 0: never")
    args = parser.parse_args(argv)
    settings = Settings(args)
    torch._inductor.config.fallback_random = True  # compiled random draws equal eager's (as verify does)
    os.makedirs(args.out, exist_ok=True)
    triton = sys.modules.get("triton") or (__import__("triton") if torch.cuda.is_available() else None)
    report: dict = {"env": {"torch": torch.__version__, "triton": getattr(triton, "__version__", None),
                            "python": platform.python_version(), "device": settings.device,
                            "device_name": torch.cuda.get_device_name() if settings.device.startswith("cuda")
                            else f"CPU ({os.cpu_count()} cores)",
                            "command": " ".join(["python", "benchmarks/fix_payoff.py", *(argv or sys.argv[1:])]),
                            "settings": {key: getattr(args, key)
                                         for key in ("warmup", "repeats", "inner", "budget_s")}}}
    started = time.monotonic()

    def save(report: dict) -> None:
        with open(os.path.join(args.out, "fix_payoff.json"), "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1, default=str)

    for section in args.sections.split(","):
        print(f"[{time.monotonic() - started:.0f}s] {section} ...", file=sys.stderr, flush=True)
        if section == "examples":
            examples(settings, args.targets.split(","), report)
        elif section == "counter":
            counter(settings, report)
        elif section == "print":
            print_guard(settings, report)
        elif section == "branches":
            branches(settings, report)
        elif section == "shapes":
            fix_shapes(settings, args.cases.split(",") if args.cases else None, report, lambda: save(report))
        else:
            parser.error(f"unknown section {section!r}")
        save(report)
    report["env"]["wall_s"] = round(time.monotonic() - started, 1)
    save(report)
    text = render(report)
    with open(os.path.join(args.out, "fix_payoff.md"), "w", encoding="utf-8") as handle:
        handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A GraphMend-style table on real models: graph breaks before and after `compile-lint --fix`.

GraphMend (arXiv 2509.16248) counts, per Hugging Face model, the graph breaks Dynamo reports
before and after its rewrites, the models fully fixed (no break left) and whether outputs
stay equal. This script does the same for the eleven models of issue 40 that break when
built tiny with random weights (transformers' base models; the MoE ones with their eager
experts loop, where the config offers other implementations; timm's sequencer2d_s):

1. Each model is built (seed 0, eval mode) from the installed libraries in a process of its
   own and called once at batch 2, length 16 (benchmarks/sweep_catalog.py builds and feeds
   it): its eager outputs are saved, and the library files the call runs are recorded.
   It is built a second time in another process, to compare the original with itself
   (a parameter made with `torch.empty` and never initialised differs run to run).
2. The installed transformers and timm are copied twice into a temporary directory (never
   changed in place), and the files the models ran are fixed there with the CLI:
   `compile-lint --fix` in one copy, `compile-lint --fix --unsafe-fixes` in the other.
3. Each model is built again from each copy. Graph breaks are counted by Dynamo (torch CPU,
   backend "eager", the default compile, one call): every record of the graph-break log,
   as benchmarks/sweep_probe.py reads it (`explain()` under-counts). `fullgraph=True` is
   tried too. Eager outputs are compared with the original's (max abs difference), and the
   compiled outputs with the side's own eager ones.

    python benchmarks/graphmend_table.py                     # the eleven models, writes the results
    python benchmarks/graphmend_table.py --models transformers/mixtral -j 1 --out /tmp/t

Writes benchmarks/results/graphmend_table.{md,json} (or --out PREFIX). Exits 1 when a fix
changed a model's outputs.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_OUT = os.path.join(HERE, "results", "graphmend_table")
LIBRARIES = ("transformers", "timm")
MODELS = (
    "transformers/big_bird", "transformers/dbrx", "transformers/gpt_oss", "transformers/led",
    "transformers/longformer", "transformers/mixtral", "transformers/nllb_moe", "transformers/qwen2_moe",
    "transformers/reformer", "transformers/switch_transformers", "timm/sequencer2d_s",
)
# transformers model types spelled otherwise than the model's folder.
MODEL_TYPES = {"nllb_moe": "nllb-moe"}
# Where the sweep's tiny config skips the code that breaks at the sweep's sizes (batch 2, 16 tokens):
# BigBird falls back to full attention below (5 + 2 * num_random_blocks) * block_size tokens, and
# the sweep's 2-layer Switch Transformers and NLLB-MoE have no sparse (MoE) layer.
CONFIG_CHANGES = {
    "big_bird": {"block_size": 2, "num_random_blocks": 1},
    "switch_transformers": {"encoder_sparse_step": 1, "decoder_sparse_step": 1},
    "nllb_moe": {"encoder_sparse_step": 1, "decoder_sparse_step": 1},
}
SIDES = ("original", "again", "fix", "unsafe")  # "again": the original built a second time
CHILD_TIMEOUT = 1800


# --- the child: one model from one copy of the libraries -----------------------------------

def _flat_tensors(value: Any, prefix: str = "out") -> dict[str, Any]:
    """Every tensor in a model output (ModelOutput, dict, tuple, list), by a path name."""
    import torch

    found: dict[str, Any] = {}
    if isinstance(value, torch.Tensor):
        found[prefix] = value.detach().cpu()
    elif isinstance(value, dict) or hasattr(value, "items"):
        for key, item in value.items():
            found.update(_flat_tensors(item, f"{prefix}.{key}"))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found.update(_flat_tensors(item, f"{prefix}[{index}]"))
    return found


def max_abs_diff(left: dict[str, Any], right: dict[str, Any]) -> Optional[float]:
    """The largest absolute difference between two flattened outputs (NaN in both places is equal);
    None when their names or shapes differ."""
    import torch

    if left.keys() != right.keys():
        return None
    worst = 0.0
    for name, a in left.items():
        b = right[name]
        if a.shape != b.shape or a.dtype != b.dtype:
            return None
        if a.numel() == 0:
            continue
        if a.is_floating_point() or a.is_complex():
            both_nan = torch.isnan(a) & torch.isnan(b)
            difference = torch.where(both_nan, torch.zeros_like(a), (a - b).abs())
            if torch.isnan(difference).any():
                return float("inf")
            worst = max(worst, float(difference.max()))
        else:
            worst = max(worst, float((a.long() - b.long()).abs().max()))
    return worst


def _build(name: str):
    """The model (eval, seed 0) and its first call's inputs, built by benchmarks/sweep_catalog.py."""
    import torch

    import sweep_catalog

    library, _, model_name = name.partition("/")
    if library == "timm":
        variant = next(v for v in sweep_catalog.timm_variants(name, model_name) if v.name == "eval")
        model, make_inputs = variant.build()
    elif model_name == "dbrx":
        return _dbrx()
    else:
        architecture = sweep_catalog.TransformersArchitecture(MODEL_TYPES.get(model_name, model_name))
        architecture.resolve()
        # The MoE models: the eager loop over experts, not grouped/batched matmuls.
        if hasattr(architecture.config, "_experts_implementation"):
            architecture.config._experts_implementation = "eager"
        for key, value in CONFIG_CHANGES.get(model_name, {}).items():
            setattr(architecture.config, key, value)
        variant = next(v for v in architecture.variants(name) if v.name == "base/eval")
        model, make_inputs = variant.build()
    torch.manual_seed(0)
    return model.eval(), make_inputs(2, 16)


def _dbrx():
    """DBRX, built by hand: transformers 5.23's default DbrxConfig does not build or run.

    Its attention reads `attn_config.rope_theta`, which the config no longer defines (the
    rope settings moved to `rope_parameters`; the attention only stores it), and clamps
    q/k/v with `clip_qkv`, which defaults to None (`clamp(min=None, max=None)` raises).
    The config below is the sweep's tiny sizes with `clip_qkv=8` (dbrx-instruct's value).
    """
    import torch
    import transformers
    from transformers.models.dbrx.configuration_dbrx import DbrxAttentionConfig

    import sweep_catalog

    DbrxAttentionConfig.rope_theta = 10000.0
    config = transformers.DbrxConfig(
        d_model=32, n_heads=4, n_layers=2, max_seq_len=128, vocab_size=256,
        attn_config={"kv_n_heads": 2, "clip_qkv": 8.0},
        ffn_config={"ffn_hidden_size": 64, "moe_num_experts": 4, "moe_top_k": 2},
    )
    config._experts_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.DbrxModel(config).eval()
    torch.manual_seed(0)
    return model, sweep_catalog.make_transformers_inputs("text", model, config, 2, 16)


def child(name: str, root: str, result_path: str, outputs_path: str, record_files: bool) -> int:
    """Measure `name` built from the libraries under `root` ("" for the installed ones)."""
    if root:
        sys.path.insert(0, root)
    sys.path.insert(0, HERE)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import warnings

    warnings.filterwarnings("ignore")
    import torch
    import torch._dynamo

    torch.set_num_threads(1)
    from realworld_models import ensure_torchvision_importable

    ensure_torchvision_importable()
    import sweep_probe

    # Only the model's own library is imported: a copy of the other one that a fix broke is not its failure.
    library = name.partition("/")[0]
    module = __import__(library)
    roots = {library: os.path.dirname(os.path.abspath(module.__file__))}
    if root and not roots[library].startswith(root):
        raise SystemExit(f"{library} imported from {roots[library]}, not from the copy {root}")
    paths = sweep_probe.PathMap(roots)
    result: dict[str, Any] = {"model": name, "root": root,
                              "versions": {"torch": torch.__version__, library: module.__version__}}
    started = time.perf_counter()
    model, inputs = _build(name)
    with torch.no_grad():
        torch.manual_seed(0)
        eager = _flat_tensors(model(**inputs))
    torch.save(eager, outputs_path)
    if record_files:
        def call() -> None:
            with torch.no_grad():
                torch.manual_seed(0)
                model(**inputs)
        result["executed_files"] = sorted(sweep_probe._executed_lines(call, paths))
    collector = sweep_probe._Collector(paths)
    with sweep_probe._dynamo_logs(collector):
        torch._dynamo.reset()
        torch._dynamo.utils.graph_break_dup_warning_checker.reset()
        graphs: list = []
        compiled = torch.compile(model, backend=sweep_probe._counting_backend(graphs))
        collector.messages.clear()
        error = None
        try:
            with torch.no_grad():
                torch.manual_seed(0)
                compiled_out = _flat_tensors(compiled(**inputs))
            result["compiled_vs_eager"] = max_abs_diff(eager, compiled_out)
        except Exception as exc:  # the verdict itself: recorded, not raised
            error = sweep_probe._error_line(exc)
        breaks = []
        for logger, message in collector.messages:
            if "graph_breaks" in logger or message.startswith("Graph break"):
                parsed = sweep_probe.parse_graph_break(message, paths)
                if parsed:
                    breaks.append({key: parsed[key] for key in ("location", "site", "gb_type", "graceful_fallback")})
        result.update(breaks=breaks, graphs=len(graphs), compile_error=error)
        torch._dynamo.reset()
        try:
            with torch.no_grad():
                torch.manual_seed(0)
                torch.compile(model, backend="eager", fullgraph=True)(**inputs)
            result["fullgraph"] = {"ok": True, "error": None}
        except Exception as exc:  # any failure means fullgraph does not hold
            result["fullgraph"] = {"ok": False, "error": sweep_probe._error_line(exc)}
    result["seconds"] = round(time.perf_counter() - started, 1)
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


# --- the parent --------------------------------------------------------------------------

def installed_root(library: str) -> str:
    """The installed package folder of `library`, found without importing it."""
    spec = importlib.util.find_spec(library)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{library} is not installed: pip install the realworld extra")
    return os.path.abspath(list(spec.submodule_search_locations)[0])


def run_child(name: str, side: str, root: str, work: str, record_files: bool = False) -> dict:
    """One child run; its result, or the error it ended with."""
    stem = os.path.join(work, "runs", f"{name.replace('/', '__')}.{side}")
    command = [sys.executable, os.path.abspath(__file__), "--child", name, "--root", root,
               "--result", stem + ".json", "--outputs", stem + ".pt"] + (["--record-files"] if record_files else [])
    # Dynamo's trace log is long: it goes to a file, not into memory.
    with open(stem + ".log", "w", encoding="utf-8") as log:
        try:
            process = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=CHILD_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            return {"model": name, "side": side, "error": f"timed out after {CHILD_TIMEOUT} s"}
    if process.returncode != 0 or not os.path.exists(stem + ".json"):
        with open(stem + ".log", encoding="utf-8", errors="replace") as log:
            tail = ([line for line in log.read().splitlines() if line.strip()] or ["failed"])[-1]
        return {"model": name, "side": side, "error": tail[:300]}
    with open(stem + ".json", encoding="utf-8") as handle:
        result = json.load(handle)
    result["side"] = side
    result["outputs"] = stem + ".pt"
    return result


def copy_libraries(target: str) -> None:
    """Copy the installed transformers and timm under `target` (no bytecode)."""
    for library in LIBRARIES:
        shutil.copytree(installed_root(library), os.path.join(target, library),
                        ignore=shutil.ignore_patterns("__pycache__"))


def lint_copy(root: str, files: list[str], flags: list[str], tool: str) -> dict:
    """Run the CLI (compile_lint imported from `tool`) on `files` (relative to `root`) in the copy:
    findings first, then the fix."""
    cli = [sys.executable, "-m", "compile_lint", "--no-cache", "--exit-zero"]
    environment = dict(os.environ, PYTHONPATH=tool)
    report = subprocess.run([*cli, *flags, "--output-format", "json", *files], cwd=root, capture_output=True,
                            text=True, check=False, env=environment)
    findings = json.loads(report.stdout or "[]")
    before = {path: open(os.path.join(root, path), encoding="utf-8").read() for path in files}
    fixed = subprocess.run([*cli, *flags, "--fix", *files], cwd=root, capture_output=True, text=True, check=False,
                           env=environment)
    changed = {}
    for path in files:
        with open(os.path.join(root, path), encoding="utf-8") as handle:
            after = handle.read()
        if after != before[path]:
            changed[path] = _changed_line_count(before[path], after)
    return {
        "command": "compile-lint --no-cache --exit-zero " + " ".join([*flags, "--fix"]) + " FILES",
        "findings": len(findings),
        "findings_with_fix": "{} safe, {} unsafe".format(
            sum(1 for finding in findings if (finding.get("fix") or {}).get("applicability") == "safe"),
            sum(1 for finding in findings if (finding.get("fix") or {}).get("applicability") == "unsafe")),
        "by_code": _by_code(findings),
        "files_changed": changed,
        "fix_stderr_tail": fixed.stderr.strip().splitlines()[-3:],
    }


def _by_code(findings: list[dict]) -> dict[str, list[int]]:
    """code -> [findings, with a fix]."""
    counts: dict[str, list[int]] = {}
    for finding in findings:
        entry = counts.setdefault(finding["code"], [0, 0])
        entry[0] += 1
        entry[1] += bool(finding.get("fix"))
    return dict(sorted(counts.items()))


def _changed_line_count(before: str, after: str) -> int:
    import difflib

    return sum(1 for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---")))


def main(argv: Optional[list[str]] = None) -> int:
    """Parse the arguments; run the child, or the whole table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated library/model names")
    parser.add_argument("--out", default=DEFAULT_OUT, help="results prefix (.md and .json are added)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="child processes at once")
    parser.add_argument("--tool", default=REPO, help="the compile-lint source tree to fix with (default: this "
                        "one; a `git archive` of another commit measures that commit)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--root", default="", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--outputs", help=argparse.SUPPRESS)
    parser.add_argument("--record-files", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child, args.root, args.result, args.outputs, args.record_files)
    models = [name for name in args.models.split(",") if name]
    command = "python benchmarks/graphmend_table.py" + ("" if args.models == ",".join(MODELS) else
                                                        f" --models {args.models}") + (
        "" if args.tool == REPO else " --tool TREE")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="compile-lint-graphmend-") as work:
        os.makedirs(os.path.join(work, "runs"))
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            originals = list(pool.map(lambda name: run_child(name, "original", "", work, record_files=True), models))
            again = list(pool.map(lambda name: run_child(name, "again", "", work), models))
        files = sorted({path for result in originals for path in result.get("executed_files", [])})
        roots = {side: os.path.join(work, side) for side in ("fix", "unsafe")}
        lints = {}
        for side, flags in (("fix", []), ("unsafe", ["--unsafe-fixes"])):
            copy_libraries(roots[side])
            lints[side] = lint_copy(roots[side], files, flags, args.tool)
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            fixed = {side: list(pool.map(lambda name, s=side: run_child(name, s, roots[s], work), models))
                     for side in ("fix", "unsafe")}
        rows = [table_row(name, {"original": originals[i], "again": again[i], "fix": fixed["fix"][i],
                                 "unsafe": fixed["unsafe"][i]}) for i, name in enumerate(models)]
    report = {
        "command": command, "seconds": round(time.perf_counter() - started),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "versions": {key: value for r in originals for key, value in r.get("versions", {}).items()},
        "compile_lint_commit": _commit(args.tool), "files_linted": files, "lint": lints, "models": rows,
    }
    report["totals"] = totals(rows)
    write_report(report, args.out)
    print(markdown(report))
    return 1 if report["totals"]["changed_outputs"] else 0


def _commit(tool: str) -> str:
    """The commit of the compile-lint tree used (a `git archive` keeps it in its COMMIT file, if written)."""
    marker = os.path.join(tool, "COMMIT")
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as handle:
            return handle.read().strip()
    done = subprocess.run(["git", "-C", tool, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=False)
    dirty = subprocess.run(["git", "-C", tool, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return done.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


def table_row(name: str, sides: dict[str, dict]) -> dict:
    """One model's numbers: breaks per side, fully fixed, output differences."""
    import torch

    outputs = {side: torch.load(result["outputs"]) for side, result in sides.items()
               if "outputs" in result and os.path.exists(result["outputs"])}
    row: dict[str, Any] = {"model": name}
    for side, result in sides.items():
        if "error" in result:
            row[side] = {"error": result["error"]}
            continue
        row[side] = {
            "breaks": len(result["breaks"]), "sites": sorted({b["location"] for b in result["breaks"]}),
            "gb_types": _count([b["gb_type"] for b in result["breaks"]]),
            "compile_error": result["compile_error"], "fullgraph": result["fullgraph"],
            "compiled_vs_eager": result.get("compiled_vs_eager"), "seconds": result["seconds"],
        }
        if side != "original" and "original" in outputs and side in outputs:
            row[side]["vs_original"] = max_abs_diff(outputs["original"], outputs[side])
    return row


def _count(items: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _changed(row: dict, side: str) -> bool:
    """Whether `side`'s eager outputs differ from the original's by more than the original from itself."""
    entry, again = row.get(side, {}), row.get("again", {})
    difference = entry.get("vs_original")
    if difference is None:
        return "error" not in entry
    return difference > max(again.get("vs_original") or 0.0, 0.0)


def totals(rows: list[dict]) -> dict:
    """Sums over the models: breaks per side, removed, fully fixed, changed outputs."""
    total: dict[str, Any] = {"models": len(rows)}
    total["breaks_original"] = sum(row["original"].get("breaks", 0) for row in rows)
    for side in ("fix", "unsafe"):
        # A side that fails (the fixed library does not import, the model does not run) removes nothing.
        total[f"breaks_{side}"] = sum(row[side]["breaks"] if "breaks" in row[side] else row["original"].get("breaks", 0)
                                      for row in rows)
        total[f"errors_{side}"] = sum(1 for row in rows if "error" in row[side])
    for side in ("fix", "unsafe"):
        removed = total["breaks_original"] - total[f"breaks_{side}"]
        total[f"removed_{side}"] = removed
        total[f"removed_{side}_percent"] = round(100 * removed / total["breaks_original"], 1) \
            if total["breaks_original"] else 0.0
        total[f"whole_{side}"] = sum(1 for row in rows if row[side].get("breaks") == 0
                                     and not row[side].get("compile_error") and row["original"].get("breaks"))
    total["changed_outputs"] = sum(1 for row in rows for side in ("fix", "unsafe") if _changed(row, side))
    return total


def _diff_text(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def markdown(report: dict) -> str:
    """The results as a Markdown page."""
    total = report["totals"]
    lines = [
        "# GraphMend-style table: graph breaks before and after `compile-lint --fix` (issue 40)", "",
        f"Command: `{report['command']}` ({report['seconds']} s on {report['machine']}; compile-lint "
        f"{report['compile_lint_commit']}). Versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items())
        + ". Breaks: records of Dynamo's graph-break log, default compile, backend \"eager\", one call "
        "(batch 2, length 16), eval mode, no_grad. Fixes applied with the CLI to copies of the libraries "
        "(the files the models ran).", "",
        "| model | breaks | after --fix | after --fix --unsafe-fixes | fullgraph=True (orig / unsafe) "
        "| max abs diff: original vs itself / --fix / --unsafe-fixes | compiled vs eager (unsafe) |",
        "| --- | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for row in report["models"]:
        cells = []
        for side in ("original", "fix", "unsafe"):
            entry = row[side]
            cells.append(f"error: {entry['error']}" if "error" in entry else
                         str(entry["breaks"]) + (" (error)" if entry.get("compile_error") else ""))
        fullgraph = " / ".join("error" if "error" in row[s] else "ok" if row[s]["fullgraph"]["ok"] else "fails"
                               for s in ("original", "unsafe"))
        diffs = " / ".join(_diff_text(row[s].get("vs_original")) for s in ("again", "fix", "unsafe"))
        lines.append(f"| {row['model']} | {' | '.join(cells)} | {fullgraph} | {diffs} | "
                     f"{_diff_text(row['unsafe'].get('compiled_vs_eager'))} |")
    lines += [
        f"| **all {total['models']}** | **{total['breaks_original']}** | **{total['breaks_fix']}** | "
        f"**{total['breaks_unsafe']}** | | | |", "",
        f"Removed: `--fix` {total['removed_fix']} of {total['breaks_original']} ({total['removed_fix_percent']}%), "
        f"`--fix --unsafe-fixes` {total['removed_unsafe']} ({total['removed_unsafe_percent']}%). "
        f"Models fully fixed (0 breaks): {total['whole_fix']} / {total['whole_unsafe']}. "
        f"Changed outputs: {total['changed_outputs']}. Models that fail after the fix (counted as not fixed): "
        f"{total['errors_fix']} / {total['errors_unsafe']}.", "",
        "## Lint of the copies", "",
        "| run | findings | with a fix | files changed | lines changed |", "| --- | ---: | ---: | ---: | ---: |",
    ]
    for lint in report["lint"].values():
        lines.append(f"| `{lint['command']}` | {lint['findings']} | {lint['findings_with_fix']} | "
                     f"{len(lint['files_changed'])} | {sum(lint['files_changed'].values())} |")
    lines += ["", "## Breaks left after `--fix --unsafe-fixes`", ""]
    for row in report["models"]:
        entry = row["unsafe"]
        if entry.get("breaks"):
            lines.append(f"- {row['model']}: " + "; ".join(f"{k} x{v}" for k, v in entry["gb_types"].items())
                         + " at " + ", ".join(entry["sites"]))
    return "\n".join(lines) + "\n"


def write_report(report: dict, prefix: str) -> None:
    """Write PREFIX.json and PREFIX.md."""
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    with open(prefix + ".json", "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1)
        handle.write("\n")
    with open(prefix + ".md", "w", encoding="utf-8") as handle:
        handle.write(markdown(report))


if __name__ == "__main__":
    sys.exit(main())

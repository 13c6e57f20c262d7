"""Label the reach corpus on the real compiler: break sites with user stacks, clean traced lines.

    python benchmarks/reach_run.py --out DIR                       # every unit of reach_catalog.py
    python benchmarks/reach_run.py --out DIR --libraries kornia,whisper
    python benchmarks/reach_run.py --out DIR --units whisper/Whisper --unit-timeout 300
    python benchmarks/reach_run.py --truth DIR/reach_raw.jsonl.gz   # -> results/reach_ground_truth.json

Each unit (benchmarks/reach_catalog.py) runs in a subprocess of its own, one at a time
(niced; a unit that hangs or crashes costs that unit), CPU, backend "eager". Per entry and
mode it builds the model afresh (seed 0) for each of three measurements, so every compile
sees a first call as a user's would (lazy initialisation, k-means codebook init):

1. the library lines one eager call runs (`sys.settrace`);
2. the default compile (fullgraph=False) with the graph-break log and the `trace_source`
   log (`torch._logging.set_logs(graph_breaks=True, trace_source=True)`): every break's
   gb_type, GB id, location and user stack (the library's frames and the whole stack,
   torch and other libraries included), and every line Dynamo traced; a run that logged
   no break and raised nothing is *clean*: its traced lines are certainly traceable;
3. `fullgraph=True` separately: ok, or the error with its gb_type and user stack (under
   fullgraph=True Dynamo captures `.item()` and data-dependent shapes, so the two differ).

Paths are relative to the folder holding the package ("whisper/decoding.py"), and only the
unit's own library counts as "the code under test": a break inside torch or inside another
library is attributed to the innermost frame of the unit's library (the stack is kept).
The probe, log reading and line sets are benchmarks/sweep_probe.py's; the ground truth is
benchmarks/sweep_truth.py's `build_truth` over these records, plus the configs, units and
whole stacks per site (`reach_truth`).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import subprocess
import sys
import time
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))

DEFAULT_TRUTH = os.path.join(HERE, "results", "reach_ground_truth.json")
_FROM_USER_CODE = "from user code:"


# ----------------------------------------------------------------------------- one unit (child)

class _EntryRunner:
    """sweep_probe._compiled_calls' runner for one entry: compiles the module or the method."""

    def __init__(self, model, entry, mode: str):
        import torch

        self.model, self.entry, self.mode = model, entry, mode
        self.grad = torch.enable_grad if mode == "train" else torch.no_grad
        self.last_error: Optional[BaseException] = None

    def eager(self, inputs):
        args, kwargs = inputs
        with self.grad():
            return self.entry.target(self.model)(*args, **kwargs)

    def compiled(self, backend, fullgraph: bool):
        import torch

        target = torch.compile(self.entry.target(self.model), backend=backend, fullgraph=fullgraph)

        def call(inputs):
            args, kwargs = inputs
            try:
                with self.grad():
                    return target(*args, **kwargs)
            except BaseException as error:
                self.last_error = error
                raise

        return call

    def restore(self) -> None:
        pass


def _set_mode(model, mode: str) -> None:
    import torch

    module = model if isinstance(model, torch.nn.Module) else getattr(model, "model", None)
    if isinstance(module, torch.nn.Module):
        module.train(mode == "train")


def _fresh(unit, entry, mode: str):
    import torch

    torch.manual_seed(0)
    model = unit.build()
    _set_mode(model, mode)
    torch.manual_seed(0)
    return model, entry.inputs(model)


_HARNESS = tuple(os.path.join(HERE, name) for name in ("reach_run.py", "reach_catalog.py", "reach_catalog_new_kinds.py",
                                                         "reach_catalog_round6.py", "reach_units.py", "sweep_probe.py"))
_USER_PROJECTS = os.path.join(HERE, "reach_users") + os.sep


def _frames(text: str, paths) -> list[dict]:
    """Every frame of a user stack but the harness's, library-relative where it is the
    library's, a user project's as "<user>reach_users/LIB/FILE", else tagged
    ("<outside>torch/nn/modules/module.py")."""
    import sweep_probe

    def name(path: str) -> str:
        if path.startswith(_USER_PROJECTS):
            return "<user>" + os.path.relpath(path, HERE)
        return paths(path) or sweep_probe._outside(path)

    return [{"file": name(path), "line": int(line), "function": function.strip()}
            for path, line, function in sweep_probe._FRAME.findall(text) if not path.startswith(_HARNESS)]


def _full_stacks(messages, paths) -> list[dict]:
    """The graph-break records of one call, each with its whole user stack (torch frames too)."""
    import sweep_probe

    found = []
    for logger, message in messages:
        if "graph_breaks" in logger or message.startswith("Graph break"):
            parsed = sweep_probe.parse_graph_break(message, paths)
            if parsed:
                parsed["call"] = 1
                tail = message.split("User code traceback:", 1)[1] if "User code traceback:" in message else ""
                parsed["user_stack"] = [f"{f['file']}:{f['line']}" for f in _frames(tail, paths)]
                found.append(parsed)
    return found


def _fullgraph_break(error: BaseException, paths) -> Optional[dict]:
    """gb_type, site and user stack of a fullgraph=True failure (its message says "from user code:")."""
    text = str(error)
    if _FROM_USER_CODE not in text:
        return None
    head, _, tail = text.partition(_FROM_USER_CODE)
    lines = [line.strip() for line in head.strip().splitlines() if line.strip()]
    gb_type = lines[0] if lines else type(error).__name__
    if gb_type.startswith("Failed to handle graph break gracefully") and len(lines) > 1:
        gb_type = next((line for line in lines[1:] if not line.startswith(("Explanation:", "Hint:"))), gb_type)
    frames = _frames(tail, paths)
    own = [f for f in frames if not f["file"].startswith("<")]
    gb_id = re.search(r"/gb/(gb\d+)\.html", head)
    return {"gb_type": gb_type[:200], "gb_id": gb_id.group(1) if gb_id else None,
            "site": {"file": own[-1]["file"], "line": own[-1]["line"]} if own else None,
            "frames": own, "user_stack": [f"{f['file']}:{f['line']}" for f in frames]}


def probe_entry(unit, entry, mode: str, paths, budget: float) -> dict:
    """The three measurements of one entry in one mode (module docstring), as a JSON-ready record."""
    import torch
    import torch._dynamo

    import sweep_probe

    started = time.perf_counter()
    record = {"unit": unit.key, "variant": f"{entry.name}-{mode}", "entry": entry.name, "mode": mode,
              "lint_entry": entry.lint_entry, "user_site": entry.user_site, "status": "ok",
              "protocol": "default-first", "calls": 1,
              "recompiles": []}
    try:
        model, inputs = _fresh(unit, entry, mode)
        runner = _EntryRunner(model, entry, mode)
        record["executed"] = sweep_probe._executed_lines(lambda: runner.eager(inputs), paths)
    except Exception as error:
        record.update(status="eager-error", error=sweep_probe._error_line(error))
        return record
    collector = sweep_probe._Collector(paths)
    with sweep_probe._dynamo_logs(collector):
        model, inputs = _fresh(unit, entry, mode)
        runner = _EntryRunner(model, entry, mode)
        default = sweep_probe._compiled_calls(runner, [inputs], collector, paths, fullgraph=False, budget=budget)
        breaks = _full_stacks(collector.messages, paths)
        clean = not breaks and default["calls_ok"] == 1
        record.update(breaks=breaks, graphs=default["graphs"], compile_error=default["error"], default_clean=clean)
        record["traced_clean" if clean else "traced_breaking_run"] = sweep_probe._group(default["traced_all"])
        model, inputs = _fresh(unit, entry, mode)
        runner = _EntryRunner(model, entry, mode)
        verdict = sweep_probe._compiled_calls(runner, [inputs], collector, paths, fullgraph=True, budget=budget)
        fullgraph = {"ok": verdict["calls_ok"] == 1, "error": verdict["error"]}
        if not fullgraph["ok"] and runner.last_error is not None:
            fullgraph["break"] = _fullgraph_break(runner.last_error, paths)
        record["fullgraph"] = fullgraph
    torch._dynamo.reset()
    record["seconds"] = round(time.perf_counter() - started, 2)
    return record


def child_main(key: str, budget: float) -> int:
    """Probe every entry and mode of one unit; one JSON line per record on stdout."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    answer = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    import reach_catalog
    import sweep_probe

    reach_catalog.prepare_imports()
    unit = reach_catalog.unit(key)
    paths = sweep_probe.PathMap({unit.library: reach_catalog.package_root(unit.library)})
    for entry in unit.entries:
        for mode in entry.modes:
            try:
                record = probe_entry(unit, entry, mode, paths, budget)
            except Exception as error:  # a harness failure is the unit's result, not the run's end
                record = {"unit": unit.key, "variant": f"{entry.name}-{mode}", "mode": mode,
                          "status": "probe-error", "error": sweep_probe._error_line(error)}
            answer.write(json.dumps(record) + "\n")
    return 0


# ----------------------------------------------------------------------------- the run (parent)

def environment() -> dict:
    import importlib.metadata

    import reach_catalog

    versions = {}
    for dist in list(reach_catalog.LIBRARIES) + ["torch"]:
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    return {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "torch": versions.pop("torch"), "libraries": versions, "host": platform.node()}


def run(keys: list[str], out_dir: str, unit_timeout: float, budget: float) -> str:
    os.makedirs(out_dir, exist_ok=True)
    raw = os.path.join(out_dir, "reach_raw.jsonl.gz")
    started = time.time()
    info = {"environment": environment(), "argv": sys.argv[1:], "units": keys, "units_done": []}

    def write_info() -> None:  # after every unit: a run cut short still says what measured it
        info["seconds"] = round(time.time() - started)
        with open(os.path.join(out_dir, "reach_run.json"), "w", encoding="utf-8") as handle:
            json.dump(info, handle, indent=1)

    write_info()
    with gzip.open(raw, "wt", encoding="utf-8") as sink:
        for key in keys:
            mark = time.perf_counter()
            command = ["nice", "-n", "10", sys.executable, os.path.abspath(__file__), "--child", key,
                       "--budget", str(budget)]
            try:
                completed = subprocess.run(command, capture_output=True, text=True, timeout=unit_timeout, cwd=HERE,
                                           env=dict(os.environ, PYTHONWARNINGS="ignore", HF_HUB_OFFLINE="1"))
                lines, status = completed.stdout.splitlines(), f"exit {completed.returncode}"
            except subprocess.TimeoutExpired as expired:
                out = expired.stdout or b""
                lines = (out.decode() if isinstance(out, bytes) else out).splitlines()
                status = f"timeout after {unit_timeout:.0f} s"
            records = [json.loads(line) for line in lines if line.startswith("{")]
            for record in records:
                sink.write(json.dumps(record) + "\n")
            if not records:
                sink.write(json.dumps({"unit": key, "status": "unit-error", "reason": status}) + "\n")
            sink.flush()
            summary = ", ".join(f"{r.get('variant')}: {r['status']}" + (
                f" {len(r.get('breaks', []))} breaks, fullgraph {'ok' if r['fullgraph']['ok'] else 'fails'}"
                if r["status"] == "ok" else f" ({r.get('error')})") for r in records)
            print(f"{key} [{time.perf_counter() - mark:.0f} s, {status}]: {summary}", flush=True)
            info["units_done"].append(key)
            write_info()
    return raw


# ----------------------------------------------------------------------------- the ground truth

def read(raw_paths: list[str]) -> tuple[list[dict], dict]:
    """Records of raw files (tagged with source and torch, as sweep_truth expects) and their run infos."""
    import sweep_truth

    records, sources = [], {}
    for path in raw_paths:
        info_path = os.path.join(os.path.dirname(path), "reach_run.json")
        info = json.load(open(info_path, encoding="utf-8")) if os.path.isfile(info_path) else {}
        name = os.path.basename(os.path.dirname(os.path.abspath(path))) + "/" + os.path.basename(path)
        sources[name] = info
        torch_version = info.get("environment", {}).get("torch", "?")
        for record in sweep_truth._lines(path):  # a file cut off mid-write gives what it holds
            record["source"], record["torch"] = name, torch_version
            records.append(record)
    return records, sources


def reach_truth(records: list[dict], sources: dict) -> dict:
    """sweep_truth.build_truth over the records, plus what the reach corpus adds per site:
    library, units, entries and configs ("default", "fullgraph") that broke there, and the
    whole user stacks (torch and other libraries' frames included); fullgraph-only sites."""
    import reach_catalog
    import sweep_truth

    usable = [r for r in records if r.get("variant")]
    truth = sweep_truth.build_truth(usable, sources)
    by_key = {(s["file"], s["line"]): s for s in truth["sites"]}
    for site in truth["sites"]:
        site.update(configs=["default"], entries=set(), units=set(), user_stacks=[])
    for record in usable:
        if record.get("status") != "ok":
            continue
        for item in record.get("breaks", []):
            site = by_key.get((item["site"]["file"], item["site"]["line"])) if item.get("site") else None
            if site is None:
                continue
            site["entries"].add(record["entry"])
            site["units"].add(record["unit"])
            if item.get("user_stack") and item["user_stack"] not in site["user_stacks"]:
                site["user_stacks"].append(item["user_stack"])
        fullgraph = (record.get("fullgraph") or {}).get("break")
        if fullgraph and fullgraph.get("site"):
            key = (fullgraph["site"]["file"], fullgraph["site"]["line"])
            site = by_key.get(key)
            if site is None:
                site = by_key[key] = {
                    "file": key[0], "line": key[1], "gb_type": fullgraph["gb_type"],
                    "gb_types": {fullgraph["gb_type"]: [record["torch"]]}, "gb_id": fullgraph.get("gb_id"),
                    "modes": set(), "runs": set(), "torch": [record["torch"]], "configs": ["fullgraph"],
                    "entries": set(), "units": set(), "user_stacks": [],
                    "stack": [f"{f['file']}:{f['line']}" for f in fullgraph["frames"]],
                    "reproduced_on_newest_torch": True, "fullgraph_only": True}
                truth["sites"].append(site)
            elif "fullgraph" not in site["configs"]:
                site["configs"] = site["configs"] + ["fullgraph"]
            if site.get("fullgraph_only"):
                site["modes"].add(record["mode"])
                site["runs"].add(record["unit"] + "/" + record["variant"])
            site["entries"].add(record["entry"])
            site["units"].add(record["unit"])
            if fullgraph["user_stack"] not in site["user_stacks"]:
                site["user_stacks"].append(fullgraph["user_stack"])
    for site in truth["sites"]:
        site["library"] = reach_catalog.PACKAGE_OF.get(site["file"].split("/", 1)[0], site["file"].split("/", 1)[0])
        for name in ("entries", "units", "modes", "runs"):
            site[name] = sorted(site[name])
        site["user_stacks"] = site["user_stacks"][:4]
    truth["sites"].sort(key=lambda s: (s["file"], s["line"]))
    truth["meta"]["counts"] = dict(truth["meta"]["counts"], **per_library_counts(truth),
                                   sites=len(truth["sites"]),
                                   fullgraph_only_sites=sum(1 for s in truth["sites"] if s.get("fullgraph_only")))
    truth["meta"]["libraries"] = {dist: version for dist, (version, _) in reach_catalog.LIBRARIES.items()}
    truth["meta"]["entry_points"] = {package: reach_catalog.entry_points(package)
                                     for _, package in reach_catalog.LIBRARIES.values()}
    truth["meta"]["site_key"] = ("(file, line), the file relative to the folder holding the package; the site "
                                 "is the innermost frame of the user stack in the unit's own library")
    return truth


def per_library_counts(truth: dict) -> dict:
    """Per import package: default-compile sites, fullgraph-only sites, clean traced lines per mode, runs."""
    from sweep_probe import from_ranges

    out: dict[str, dict] = {}
    for site in truth["sites"]:
        row = out.setdefault(site["file"].split("/", 1)[0], {})
        kind = "fullgraph_only_sites" if site.get("fullgraph_only") else "sites"
        row[kind] = row.get(kind, 0) + 1
    for mode, files in truth.get("clean", {}).items():
        for path, ranges in files.items():
            row = out.setdefault(path.split("/", 1)[0], {})
            row[f"clean_lines_{mode}"] = row.get(f"clean_lines_{mode}", 0) + len(from_ranges(ranges))
    for run in truth.get("runs", []):
        row = out.setdefault(run["run"].split("/", 1)[0], {})
        row["runs_ok" if run.get("status") == "ok" else "runs_failed"] = \
            row.get("runs_ok" if run.get("status") == "ok" else "runs_failed", 0) + 1
    return {"by_library": dict(sorted(out.items()))}


def write_truth(raw_paths: list[str], out: str) -> dict:
    records, sources = read(raw_paths)
    truth = reach_truth(records, sources)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(truth, handle, indent=None, separators=(",", ":"), sort_keys=False)
        handle.write("\n")
    return truth


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="folder for reach_raw.jsonl.gz and reach_run.json")
    parser.add_argument("--libraries", help="comma-separated import packages (default: all)")
    parser.add_argument("--units", help="comma-separated unit keys (library/name)")
    parser.add_argument("--unit-timeout", type=float, default=420, help="seconds per unit (all its entries)")
    parser.add_argument("--budget", type=float, default=120, help="seconds per compiled call")
    parser.add_argument("--truth", nargs="*", help="raw files -> the ground truth (--truth-out)")
    parser.add_argument("--truth-out", default=DEFAULT_TRUTH)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--list", action="store_true", help="print the unit keys")
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child, args.budget)
    import reach_catalog

    if args.truth:
        truth = write_truth(args.truth, args.truth_out)
        print(json.dumps(truth["meta"]["counts"], indent=1))
        print(f"wrote {args.truth_out}")
        return 0
    libraries = args.libraries.split(",") if args.libraries else None
    keys = [u.key for u in reach_catalog.units(libraries)]
    if args.units:
        wanted = args.units.split(",")
        unknown = set(wanted) - set(keys)
        if unknown:
            parser.error(f"unknown units: {', '.join(sorted(unknown))}")
        keys = [k for k in keys if k in wanted]
    if args.list:
        print("\n".join(keys))
        return 0
    if not args.out:
        parser.error("--out DIR is required to run")
    raw = run(keys, args.out, args.unit_timeout, args.budget)
    print(f"wrote {raw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

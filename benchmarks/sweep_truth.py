"""Turn the sweep's raw results into the ground truth compile-lint is scored against.

    python benchmarks/sweep_truth.py RAW.jsonl.gz [RAW2.jsonl.gz ...] [--out PATH]

Each RAW file is a `sweep_raw*.jsonl.gz` of benchmarks/sweep_run.py; the `sweep_run*.json`
beside it (same name, `raw` -> `run`, or `sweep_run.json` in the same folder) says which
torch measured it. Several sources merge: the committed truth combines the H200 run
(torch 2.11, 16 cores: every architecture, fullgraph verdicts, recompiles) with the local
re-measurement on torch 2.13 (the default compile of every run the H200 saw pass
fullgraph=True). Output, per library file (paths relative to site-packages, e.g.
"transformers/models/ctrl/modeling_ctrl.py"):

- `sites`: every distinct graph-break site (file, line, gb_type). The site is where Dynamo
  says the break happened when that is library code, else the innermost library frame of
  the break's user stack (the library call that led into torch code Dynamo cannot trace).
  Each site lists the modes (eval/train) and runs (unit/variant) that hit it, the torch
  versions that logged it, the GB id, whether Dynamo skipped the whole frame ("Failed to
  handle graph break gracefully"), and the library frames of its stack (outermost first);
- `clean`: per mode, the lines Dynamo traced in runs whose *default* compile
  (fullgraph=False) logged no graph break and raised nothing: traced, certainly without a
  break, in that mode (a `trace_source` log record names every line Dynamo steps onto);
- `fullgraph_clean`: per mode, lines traced by `fullgraph=True` compiles that succeeded in
  runs whose default compile was not measured. Not certain: fullgraph=True captures
  `.item()`, `.tolist()` and data-dependent shapes as unbacked values where the default
  compile breaks (DESIGN.md; re-measured here, see benchmarks/results/sweep.md);
- `executed`: per mode, the lines one eager call ran (sys.settrace): reached, compiled or not;
- `traced_in_breaking_runs`: per mode, lines Dynamo traced in runs that broke somewhere;
- `recompiles`: recompiles on the third call (after automatic dynamic), with the guard.

Plus `runs` (one summary per run and per unit that could not be built, with the reason)
and `meta` (versions, machines, counts). Line sets are stored as "1-3,7,9-10".
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
from collections import Counter, defaultdict
from typing import Iterable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))

from sweep_probe import from_ranges, to_ranges  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "results", "sweep_ground_truth.json")
# Break types fullgraph=True does not raise (it captures the value as an unbacked symbol)
# while the default compile breaks: DESIGN.md's table, measured again by the sweep (the
# truth adds every type its default-compile runs hit where fullgraph=True had passed).
FULLGRAPH_LENIENT = (
    "Unsupported Tensor.item() call with capture_scalar_outputs=False",
    "Data dependent operator",
    "Dynamic shape operator",
)
MODES = ("eval", "train")
LINE_SETS = ("clean", "fullgraph_clean", "executed", "traced_in_breaking_runs")
_GUARD_SOURCE = re.compile(r"#\s*(.+?)\s*#\s*((?:transformers|timm|diffusers)/[^\s:]+\.py):(\d+)")


def run_info(raw_path: str) -> dict:
    """The sweep_run*.json written beside a raw file (environment, stats, argv), or {}."""
    folder, name = os.path.split(raw_path)
    for candidate in (name.replace("sweep_raw", "sweep_run").replace(".jsonl.gz", ".json"), "sweep_run.json"):
        path = os.path.join(folder, candidate)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
    return {}


def read_records(paths: Iterable[str]) -> list[dict]:
    """Every record of the raw files, tagged with its source; within one source a later
    record of the same (unit, variant) replaces an earlier one, and a unit some source
    measured drops the "not-run" records other sources left for it."""
    by_key: dict[tuple, dict] = {}
    for path in paths:
        torch_version = run_info(path).get("environment", {}).get("torch", "?")
        source = os.path.basename(path)
        for record in _lines(path):
            record["source"], record["torch"] = source, torch_version
            by_key[(source, record.get("unit"), record.get("variant"))] = record
    measured = {unit for (_, unit, variant) in by_key if variant is not None}
    return [r for (_, unit, variant), r in by_key.items()
            if variant is not None or unit not in measured or r.get("status") != "not-run"]


def _lines(path: str):
    """The JSON records of one raw file; a file cut off mid-write (a run stopped, a stream
    still open) yields what it holds."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        try:
            for line in handle:
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue
        except EOFError:
            return


class _Lines:
    """mode -> file -> set of lines, for one kind of line set."""

    def __init__(self) -> None:
        self.data: dict[str, dict[str, set[int]]] = {m: defaultdict(set) for m in MODES}

    def add(self, mode: str, ranges: dict[str, str]) -> None:
        for path, text in ranges.items():
            self.data[mode][path] |= from_ranges(text)

    def ranges(self) -> dict:
        return {m: {p: to_ranges(v) for p, v in sorted(self.data[m].items()) if v} for m in MODES}


def build_truth(records: list[dict], sources: Optional[dict] = None) -> dict:
    """The ground-truth document (see the module docstring)."""
    sites: dict[tuple, dict] = {}
    lines = {kind: _Lines() for kind in LINE_SETS}
    recompiles: dict[tuple, dict] = {}
    runs: dict[str, dict] = {}
    unattributed = Counter()
    by_location = _sites_by_location(records)
    default_measured = {(r["unit"], r.get("variant")) for r in records
                        if r.get("protocol") == "default-first" and r.get("status") == "ok"}
    for record in records:
        run = record["unit"] + ("/" + record["variant"] if record.get("variant") else "")
        mode = record.get("mode")
        summary = runs.setdefault(run, {"run": run})
        tag = "torch " + record["torch"]
        if record.get("status") != "ok":
            if summary.get("status") in (None, "not-run"):  # a later source that tried the unit says why
                summary.update(status=record.get("status"), reason=record.get("reason") or record.get("error"))
            continue
        summary.update(status="ok", mode=mode)
        summary.pop("reason", None)
        measured = summary.setdefault("measured", {})
        fullgraph = record.get("fullgraph") or {}
        entry = {"breaks": len(record.get("breaks", [])), "calls": record.get("calls")}
        if record.get("protocol") == "default-first":
            entry["default_clean"] = record.get("default_clean")
            if fullgraph.get("ok") is not None:
                entry["fullgraph"] = fullgraph["ok"]
        else:
            entry.update(fullgraph=fullgraph.get("ok"), recompiles=len(record.get("recompiles", [])))
            if fullgraph.get("error"):
                entry["fullgraph_error"] = fullgraph["error"][:160]
        measured[tag] = entry
        lines["executed"].add(mode, record.get("executed", {}))
        lines["traced_in_breaking_runs"].add(mode, record.get("traced_breaking_run", {}))
        if record.get("protocol") == "default-first":
            if record.get("default_clean"):
                lines["clean"].add(mode, record.get("traced_clean", {}))
        elif fullgraph.get("ok") and (record["unit"], record.get("variant")) not in default_measured:
            lines["fullgraph_clean"].add(mode, record.get("traced_clean", {}))
        for item in record.get("breaks", []):
            site = _site(item, by_location, record["unit"].split("/", 1)[0])
            if not site:
                unattributed[item["gb_type"]] += 1
                continue
            entry = sites.setdefault((site[0], site[1]), {
                "file": site[0], "line": site[1], "gb_types": {}, "gb_id": item.get("gb_id"),
                "explanation": item.get("explanation", ""), "location": item.get("location"),
                "graceful_fallback": False, "modes": set(), "torch": set(), "runs": set(), "calls": set(),
                "stack": None,
            })
            entry["gb_types"].setdefault(item["gb_type"], set()).add(record["torch"])
            entry["modes"].add(mode)
            entry["torch"].add(record["torch"])
            entry["runs"].add(run)
            entry["calls"].add(item.get("call"))
            entry["graceful_fallback"] |= bool(item.get("graceful_fallback"))
            stack = [f"{f['file']}:{f['line']}" for f in item.get("frames", []) if not f["file"].startswith("<")]
            if stack and (entry["stack"] is None or len(stack) < len(entry["stack"])):
                entry["stack"] = stack  # the shortest stack seen: the break's own frames, least harness
        for item in record.get("recompiles", []):
            guard = _GUARD_SOURCE.search(item.get("reason", ""))
            file, line = (guard.group(2), int(guard.group(3))) if guard else (item.get("file"), item.get("line"))
            key = (file, line, item.get("function"))
            entry = recompiles.setdefault(key, {"file": file, "line": line, "function": item.get("function"),
                                                "guard": item.get("reason", "")[:240], "modes": set(), "runs": set()})
            entry["modes"].add(mode)
            entry["runs"].add(run)
    reproduced = _reproduced_on_newest(records, sites)
    site_rows = []
    for key, entry in sorted(sites.items()):
        row = _jsonable(entry)
        row["gb_types"] = {gb: sorted(versions) for gb, versions in entry["gb_types"].items()}
        row["gb_type"] = _main_gb_type(entry["gb_types"])
        row["stack"] = row["stack"] or []
        row["reproduced_on_newest_torch"] = reproduced.get(key)
        site_rows.append(row)
    line_sets = {kind: line_set.ranges() for kind, line_set in lines.items()}
    files = sorted({s["file"] for s in site_rows}.union(*(m.keys() for d in line_sets.values() for m in d.values())))
    return {
        "meta": {"sources": sources or {}, "counts": _counts(runs, site_rows, files, unattributed),
                 "fullgraph_lenient_gb_types": _lenient_types(records),
                 "line_sets": "per mode, file -> line ranges '1-3,7'"},
        "sites": site_rows,
        **line_sets,
        "recompiles": sorted((_jsonable(r) for r in recompiles.values()),
                             key=lambda r: (str(r["file"]), r["line"] or 0)),
        "runs": sorted(runs.values(), key=lambda r: r["run"]),
    }


def _main_gb_type(gb_types: dict[str, set[str]]) -> str:
    """The break type the newest torch logged at a site (versions name some types differently)."""
    return max(gb_types, key=lambda gb: (_version_key(max(gb_types[gb], key=_version_key)), gb))


def _version_key(version: str) -> tuple:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def _reproduced_on_newest(records: list[dict], sites: dict) -> dict[tuple, Optional[bool]]:
    """Per site seen only on older torch: whether the newest torch's default compile of the
    same runs hits it too (None when the newest torch measured none of those runs).

    compile-lint is calibrated on the newest; a break an older Dynamo logged and the newest
    traces cleanly (e.g. `copy.deepcopy` of a config object) is no longer a miss.
    """
    versions = {r["torch"] for r in records if r.get("status") == "ok"}
    if not versions:
        return {}
    newest = max(versions, key=_version_key)
    measured: dict[str, set[tuple]] = {}
    for record in records:
        if record.get("status") == "ok" and record["torch"] == newest and record.get("protocol") == "default-first":
            run = record["unit"] + "/" + record["variant"]
            measured.setdefault(run, set()).update(
                (b["site"]["file"], b["site"]["line"]) for b in record.get("breaks", []) if b.get("site"))
    result: dict[tuple, Optional[bool]] = {}
    for key, entry in sites.items():
        if newest in entry["torch"]:
            result[key] = True
            continue
        rechecked = [run for run in entry["runs"] if run in measured]
        result[key] = any(key in measured[run] for run in rechecked) if rechecked else None
    return result


def _lenient_types(records: list[dict]) -> list[str]:
    """FULLGRAPH_LENIENT plus the break types of default compiles of runs another source saw
    pass fullgraph=True (the run's fullgraph verdict came first, the default compile later)."""
    passed = {(r["unit"], r.get("variant")) for r in records if r.get("status") == "ok"
              and r.get("protocol") != "default-first" and (r.get("fullgraph") or {}).get("ok")}
    found = set(FULLGRAPH_LENIENT)
    for record in records:
        if record.get("protocol") == "default-first" and (record["unit"], record.get("variant")) in passed:
            found.update(item["gb_type"] for item in record.get("breaks", []))
    return sorted(found)


def _site(item: dict, by_location: dict, library: str = "") -> Optional[tuple]:
    """(file, line) of a break record's library site, recovering deduplicated records (from
    the full records of the same gb_type and location, those of the record's own library
    first: a location such as "<string>:1" can be every library's)."""
    site = item.get("site")
    if site:
        return site["file"], site["line"]
    if item.get("frames"):
        return None
    # Logged as "user stack suppressed due to duplicate graph break" (the H200 run predates
    # the probe's reset of that checker): the earlier full record with the same gb_type and
    # location names the site, when only one does.
    candidates = by_location.get((item["gb_type"], item.get("location")), set())
    own = {candidate for candidate in candidates if candidate[0].split("/", 1)[0] == library}
    candidates = own if len(candidates) > 1 and own else candidates
    return next(iter(candidates)) if len(candidates) == 1 else None


def _sites_by_location(records: list[dict]) -> dict[tuple, set[tuple]]:
    """(gb_type, Dynamo's location) -> the library sites full graph-break records give it."""
    found: dict[tuple, set[tuple]] = defaultdict(set)
    for record in records:
        for item in record.get("breaks", []) if record.get("status") == "ok" else ():
            if item.get("site") and item.get("frames"):
                found[(item["gb_type"], item.get("location"))].add((item["site"]["file"], item["site"]["line"]))
    return found


def _counts(runs: dict, site_rows: list, files: list, unattributed: Counter) -> dict:
    ok = [r for r in runs.values() if r.get("status") == "ok"]
    units = {r["run"].split("/")[0] + "/" + r["run"].split("/")[1] for r in runs.values()}
    measured_units = {r["run"].split("/")[0] + "/" + r["run"].split("/")[1] for r in ok}
    by_library = Counter(u.split("/")[0] for u in measured_units)
    return {
        "units": len(units), "units_measured": len(measured_units), "units_measured_by_library": dict(by_library),
        "runs": len(ok), "runs_not_measured": len(runs) - len(ok),
        "runs_by_library_and_mode": {f"{lib}/{mode}": n for (lib, mode), n in sorted(
            Counter((r["run"].split("/")[0], r.get("mode")) for r in ok).items())},
        "sites": len(site_rows), "sites_by_mode": dict(Counter(m for s in site_rows for m in s["modes"])),
        "files": len(files), "breaks_not_attributed_to_a_site": dict(unattributed),
    }


def _jsonable(entry: dict) -> dict:
    return {k: sorted(v, key=str) if isinstance(v, set) else v for k, v in entry.items()}


def main(argv: Optional[list[str]] = None) -> int:
    """Read raw results, write the ground truth, print its counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw", nargs="+", help="sweep_raw*.jsonl.gz files of benchmarks/sweep_run.py")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"where to write (default {os.path.relpath(DEFAULT_OUT)})")
    args = parser.parse_args(argv)
    sources = {os.path.basename(path): run_info(path) for path in args.raw}
    truth = build_truth(read_records(args.raw), sources)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(truth, handle, indent=0)
        handle.write("\n")
    print(json.dumps(truth["meta"]["counts"], indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

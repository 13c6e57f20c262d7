"""Compare two sweep measurements of the same runs (e.g. torch 2.11 on the H200 and 2.13 here).

    python benchmarks/sweep_crosscheck.py BASE.jsonl.gz [BASE2.jsonl.gz ...] --against OTHER.jsonl.gz [--out FILE.md]

For every run (unit/variant) measured in both, it compares the default compile's break
sites (file, line, gb_type) and the fullgraph=True verdict where both measured one, and
prints a table of agreements and the runs that differ. The sweep's ground truth was
measured on the H200's torch 2.11 while compile-lint is calibrated on torch 2.13: this is
how the committed results check the older compiler's verdicts against the newer one.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))

from sweep_truth import read_records, run_info  # noqa: E402


def _sites(record: dict) -> set[tuple]:
    return {(b["site"]["file"], b["site"]["line"], b["gb_type"]) for b in record.get("breaks", []) if b.get("site")}


def _first_call_sites(record: dict) -> set[tuple]:
    """Sites of the first (static-shape) call only: the part every protocol measures."""
    return {(b["site"]["file"], b["site"]["line"], b["gb_type"])
            for b in record.get("breaks", []) if b.get("site") and b.get("call", 1) == 1}


def compare(base: list[dict], other: list[dict]) -> dict:
    """Per-run agreement of the two measurements (runs measured ok in both)."""
    mine = {(r["unit"], r.get("variant")): r for r in base if r.get("status") == "ok"}
    rows = []
    for record in other:
        key = (record["unit"], record.get("variant"))
        if record.get("status") != "ok" or key not in mine:
            continue
        old = mine[key]
        old_sites, new_sites = _first_call_sites(old), _first_call_sites(record)
        old_fullgraph = (old.get("fullgraph") or {}).get("ok")
        new_fullgraph = (record.get("fullgraph") or {}).get("ok")
        # A base run that compiled fullgraph=True first measured the default compile only
        # when that failed; otherwise its default-compile sites are unknown, not empty.
        measured_default = old.get("protocol") == "default-first" or old_fullgraph is False
        rows.append({
            "run": f"{key[0]}/{key[1]}", "comparable": measured_default,
            "sites_base": sorted(old_sites), "sites_other": sorted(new_sites),
            "same_sites": old_sites == new_sites,
            "fullgraph_base": old_fullgraph, "fullgraph_other": new_fullgraph,
            "same_fullgraph": None if None in (new_fullgraph, old_fullgraph) else old_fullgraph == new_fullgraph,
            "base_breaks_default": bool(old.get("breaks")) or old.get("default_clean") is False,
            "other_breaks_default": bool(record.get("breaks")),
        })
    return {"rows": rows}


def markdown(result: dict, base_label: str, other_label: str, command: str) -> str:
    """The comparison as a results file."""
    rows = [r for r in result["rows"] if r["comparable"]]
    hidden = [r for r in result["rows"] if not r["comparable"] and r["other_breaks_default"]]
    unknown = [r for r in result["rows"] if not r["comparable"]]
    same_sites = sum(r["same_sites"] for r in rows)
    judged = [r for r in rows if r["same_fullgraph"] is not None]
    out = [
        f"# Sweep cross-check: {base_label} against {other_label}", "",
        f"Command: `{command}`", "",
        f"Runs whose default compile both measured: {len(rows)}. Same break sites on the first (static) call: "
        f"{same_sites}/{len(rows)}. Same fullgraph=True verdict where both compiled it: "
        f"{sum(r['same_fullgraph'] for r in judged)}/{len(judged)}.", "",
        f"Runs the base saw pass fullgraph=True (so it did not compile them by default): {len(unknown)}; "
        f"of these, {len(hidden)} break under the other's default compile (breaks fullgraph=True captures as "
        "unbacked values, or version differences).", "",
        "| run | fullgraph (base / other) | sites only in base | sites only in other |", "| --- | --- | --- | --- |",
    ]
    for row in rows + hidden:
        if row["comparable"] and row["same_sites"] and row["same_fullgraph"] in (True, None):
            continue
        only_base = sorted(set(map(tuple, row["sites_base"])) - set(map(tuple, row["sites_other"])))
        only_other = sorted(set(map(tuple, row["sites_other"])) - set(map(tuple, row["sites_base"])))
        fmt = lambda sites: "<br>".join(f"{f}:{ln} ({t[:50]})" for f, ln, t in sites[:4]) or "-"  # noqa: E731
        out.append(f"| {row['run']} | {row['fullgraph_base']} / {row['fullgraph_other']} | {fmt(only_base)} | "
                   f"{fmt(only_other)} |")
    return "\n".join(out) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    """Compare, print the summary, write --out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", nargs="+", help="raw files of the first measurement")
    parser.add_argument("--against", required=True, nargs="+", help="raw files of the second measurement")
    parser.add_argument("--out", help="markdown file to write")
    args = parser.parse_args(argv)
    result = compare(read_records(args.base), read_records(args.against))
    label = lambda paths: "torch " + (run_info(paths[0]).get("environment", {}).get("torch") or "?")  # noqa: E731
    command = "python benchmarks/sweep_crosscheck.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = markdown(result, label(args.base), label(args.against), command)
    print(text.split("\n\n| run")[0])
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

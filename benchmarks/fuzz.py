"""Long fuzzing runs: `python benchmarks/fuzz.py --minutes N [--jobs J] [--out FILE]`.

Generates programs (rule examples combined and transformed, and hypothesmith programs
from the Python grammar), checks the properties in fuzz_programs.py on each, and
reports how many programs were tried (and how many distinct), crashes and bad outputs.
With --jobs J, J fresh interpreters (spawned, so each seeds Hypothesis from its own
entropy) fuzz side by side and the report adds them up.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import re
import time
from collections import Counter

from hypothesis import HealthCheck, Phase, given, settings

from fuzz_programs import check_program, example_programs, grammar_programs


def run(strategy, deadline: float, counts: Counter, failures: list, distinct: set) -> None:
    """Draw programs from `strategy` until `deadline`, checking each; `distinct` gets their digests."""

    # Batches of fresh random programs; problems are collected, never raised, so
    # Hypothesis neither stops nor shrinks, and every batch draws new programs.
    @settings(max_examples=25, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def probe(code: str) -> None:
        if time.monotonic() > deadline:
            return
        counts["programs"] += 1
        distinct.add(hashlib.blake2b(code.encode("utf-8", "surrogatepass"), digest_size=8).digest())
        problems = check_program(code)
        for problem in problems:
            kind = "crashes" if "crashed" in problem else "bad outputs"
            counts[kind] += 1
            counts[PROBLEM + re.sub(r"\d+", "N", problem)] += 1  # its shape, whatever the lines
            if len(failures) < 20:
                failures.append((problem, code))

    while time.monotonic() < deadline:
        probe()


GENERATORS = ("rule examples, transformed", "hypothesmith grammar")
PROBLEM = "problem: "


def fuzz_generator(name: str, seconds: float) -> tuple[Counter, list, set]:
    """One process's run of one generator: counts, the first failures, the programs' digests."""
    strategy = example_programs() if name == GENERATORS[0] else grammar_programs()
    counts: Counter = Counter()
    failures: list = []
    distinct: set = set()
    run(strategy, time.monotonic() + seconds, counts, failures, distinct)
    return counts, failures, distinct


def main() -> int:
    """Run for the given minutes, split between the two generators, and print a report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--jobs", type=int, default=1, help="processes fuzzing side by side (default 1)")
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args()
    half = args.minutes * 60 / 2
    command = f"python benchmarks/fuzz.py --minutes {args.minutes:g}"
    command += f" --jobs {args.jobs}" if args.jobs > 1 else ""
    report = ["# Fuzzing report", "", f"Command: `{command}`", ""]
    report.append("| generator | programs | distinct | crashes | bad outputs |")
    report.append("| --- | ---: | ---: | ---: | ---: |")
    all_failures = []
    totals: Counter = Counter()
    for name in GENERATORS:
        if args.jobs > 1:
            with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
                parts = pool.starmap(fuzz_generator, [(name, half)] * args.jobs)
        else:
            parts = [fuzz_generator(name, half)]
        counts: Counter = sum((part[0] for part in parts), Counter())
        distinct = set().union(*(part[2] for part in parts))
        for part in parts:
            all_failures.extend(part[1])
        totals.update(counts)
        totals["distinct"] += len(distinct)
        report.append(f"| {name} | {counts['programs']} | {len(distinct)} | {counts['crashes']} "
                      f"| {counts['bad outputs']} |")
    report.append(f"| all | {totals['programs']} | {totals['distinct']} | {totals['crashes']} "
                  f"| {totals['bad outputs']} |")
    shapes = sorted((key[len(PROBLEM):], count) for key, count in totals.items() if key.startswith(PROBLEM))
    if shapes:
        report += ["", "| problem | programs |", "| --- | ---: |"] + [f"| {shape} | {n} |" for shape, n in shapes]
    for problem, code in all_failures[:5]:
        report += ["", f"## {problem}", "", "```python", code, "```"]
    text = "\n".join(report) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    return 1 if all_failures else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Long fuzzing runs: `python benchmarks/fuzz.py --minutes N [--out FILE]`.

Generates programs (rule examples combined and transformed, and hypothesmith programs
from the Python grammar), checks the properties in fuzz_programs.py on each, and
reports how many programs were tried, crashes and bad outputs.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from hypothesis import HealthCheck, Phase, given, settings

from fuzz_programs import check_program, example_programs, grammar_programs


def run(strategy, deadline: float, counts: Counter, failures: list) -> None:
    """Draw programs from `strategy` until `deadline`, checking each."""

    # Batches of fresh random programs; problems are collected, never raised, so
    # Hypothesis neither stops nor shrinks, and every batch draws new programs.
    @settings(max_examples=25, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def probe(code: str) -> None:
        if time.monotonic() > deadline:
            return
        counts["programs"] += 1
        problems = check_program(code)
        for problem in problems:
            kind = "crashes" if "crashed" in problem else "bad outputs"
            counts[kind] += 1
            if len(failures) < 20:
                failures.append((problem, code))

    while time.monotonic() < deadline:
        probe()


def main() -> int:
    """Run for the given minutes, split between the two generators, and print a report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args()
    half = args.minutes * 60 / 2
    report = ["# Fuzzing report", "", f"Command: `python benchmarks/fuzz.py --minutes {args.minutes:g}`", ""]
    report.append("| generator | programs | crashes | bad outputs |")
    report.append("| --- | ---: | ---: | ---: |")
    all_failures = []
    for name, strategy in (("rule examples, transformed", example_programs()),
                           ("hypothesmith grammar", grammar_programs())):
        counts: Counter = Counter()
        failures: list = []
        run(strategy, time.monotonic() + half, counts, failures)
        report.append(f"| {name} | {counts['programs']} | {counts['crashes']} | {counts['bad outputs']} |")
        all_failures.extend(failures)
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

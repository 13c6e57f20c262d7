"""Real corpus sweep: lint and fix every file of the reference corpus on a temporary copy.

`python benchmarks/sweep.py [--fraction F] [--jobs N] [--out FILE]`

The corpus is the one `speed.py` uses (transformers' models/, timm and diffusers, pinned,
fetched by `pip download --no-deps` into benchmarks/.cache/). For every file: linting must
not crash; fixing (safe and unsafe fixes) must not crash, must leave a file that parses,
and fixing the fixed file again must change nothing. Reports files, lines, findings per
rule, fixes applied, crashes and bad outputs; any nonzero bad count exits 1.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import traceback
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from importlib import metadata

import libcst as cst

from compile_lint import __version__
from compile_lint.engine.api import lint_source
from compile_lint.engine.source import SourceError, read_source
from compile_lint.fixes.apply import fix_text
from compile_lint.settings.config import Config
from speed import PINNED, ensure_corpus

CONFIG = Config(select=("ALL",))


def sweep_file(path: str) -> dict:
    """Lint and fix one file in memory (the copy is the string); what happened."""
    result: dict = {"path": path, "lines": 0, "codes": Counter(), "fixes": 0, "problems": []}
    try:
        source = read_source(path)
    except SourceError as error:
        result["problems"].append(("unreadable", str(error)))
        return result
    result["lines"] = source.text.count("\n")
    try:
        findings = lint_source(source.text, path, CONFIG).diagnostics
        result["codes"] = Counter(d.code for d in findings)
    except Exception:  # noqa: BLE001 - a crash is what we count
        result["problems"].append(("lint crash", traceback.format_exc(limit=3)))
        return result
    try:
        once = fix_text(source.text, path, CONFIG, unsafe=True)
        result["fixes"] = len(once.applied)
        if once.error:
            result["problems"].append(("fix refused", once.error))
        if once.changed:
            try:
                cst.parse_module(once.text)
                compile(once.text, path, "exec", dont_inherit=True)
            except Exception as error:  # noqa: BLE001
                result["problems"].append(("fixed file does not parse", f"{type(error).__name__}: {error}"))
            twice = fix_text(once.text, path, CONFIG, unsafe=True)
            if twice.text != once.text:
                result["problems"].append(("not idempotent", f"{len(twice.applied)} more fixes"))
    except Exception:  # noqa: BLE001
        result["problems"].append(("fix crash", traceback.format_exc(limit=3)))
    return result


def main() -> int:
    """Sweep the corpus and print (and optionally write) the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fraction", type=float, default=1.0, help="sweep every 1/F-th file")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", help="also write the report (markdown) to this file")
    args = parser.parse_args()
    base, files = ensure_corpus(args.fraction)
    paths = [os.path.join(base, f) for f in files]
    start = time.monotonic()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(sweep_file, paths, chunksize=4))
    seconds = time.monotonic() - start
    codes: Counter = Counter()
    problems: Counter = Counter()
    examples: dict = {}
    for result in results:
        codes.update(result["codes"])
        for kind, detail in result["problems"]:
            problems[kind] += 1
            examples.setdefault(kind, (os.path.relpath(result["path"], base), detail))
    lines = sum(r["lines"] for r in results)
    fixes = sum(r["fixes"] for r in results)
    fixed_files = sum(1 for r in results if r["fixes"])
    report = [
        "# Corpus sweep",
        "",
        f"Command: `python benchmarks/sweep.py --fraction {args.fraction:g} --jobs {args.jobs}`",
        f"compile-lint {__version__}, Python {platform.python_version()}, libcst {metadata.version('libcst')}, "
        f"{os.cpu_count()} cores ({platform.machine()})",
        f"Corpus: transformers {PINNED['transformers']} models/, timm {PINNED['timm']}, "
        f"diffusers {PINNED['diffusers']}",
        "",
        "| files | lines | findings | files fixed | fixes applied | lint crashes | fix crashes "
        "| fixed files that do not parse | not idempotent | fixes refused | seconds |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {len(results)} | {lines:,} | {sum(codes.values())} | {fixed_files} | {fixes} | {problems['lint crash']} "
        f"| {problems['fix crash']} | {problems['fixed file does not parse']} | {problems['not idempotent']} "
        f"| {problems['fix refused']} | {seconds:.0f} |",
        "",
        "Findings per rule (all rules selected, off-by-default ones included):",
        "",
        "| code | findings | per 1k lines |",
        "| --- | ---: | ---: |",
    ]
    report += [f"| {code} | {count} | {1000 * count / max(lines, 1):.3f} |" for code, count in sorted(codes.items())]
    for kind, (path, detail) in examples.items():
        report += ["", f"First '{kind}': `{path}`", "", "```", detail.strip(), "```"]
    text = "\n".join(report) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    bad = sum(problems[k] for k in ("lint crash", "fix crash", "fixed file does not parse", "not idempotent"))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Audit of what unsafe fixes rest on: every unsafe fix applied to the real-world tree.

For every Python file of the installed transformers, timm and diffusers, fix the text in
memory as `compile-lint --fix --unsafe-fixes` does (the same `fix_text`, to a fixed point;
nothing is written) and record, for each unsafe fix applied, the operands it rests on and
their kind (`Fix.rests_on`, from analysis/kinds/certainty.tensor_evidence):

    tensor                    a tensor in eager code too (evidence)
    python value              a number, size or flag, which stays what it was
    tensor only under Dynamo  a random.uniform/randint/randrange draw (a float eagerly)
    tensor by default         an untyped forward parameter, an unknown submodule's output
    not a tensor              data read into Python, a container, an unknown object

Exits 1 when an applied fix rests on an operand of the last three kinds, or when an unsafe
fix of a rule that rewrites into torch ops (REWRITING_RULES) records no operand at all,
unless its new code runs only under torch.compile (`torch.compiler.is_compiling()`
guards: eager runs keep the original code).

Usage (from the repository root):

    python benchmarks/fix_operands.py                 # default rules, 2 processes
    python benchmarks/fix_operands.py --select ALL --jobs 2
    python benchmarks/fix_operands.py --files-from benchmarks/results/fix_realworld.json   # quick

Writes benchmarks/results/fix_operands.{md,json} (or --out PREFIX) and prints the summary.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import sys
import time
from collections import Counter
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

from compile_lint.analysis.kinds.certainty import SAFE_OPERANDS  # noqa: E402
from fix_realworld import LIBRARIES, installed_root, read_and_lint  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "results", "fix_operands")
# Rules whose unsafe fixes turn Python calls or values into torch ops, or select with
# torch.where / torch.cond: each must say what it rests on.
REWRITING_RULES = frozenset({"JIT101", "JIT103", "JIT201", "JIT202", "JIT203", "JIT304", "JIT404"})
# Files checked by name in the report (the new-user issue's examples).
WATCHED = ("timm/data/naflex_transforms.py", "timm/data/transforms.py")


def library_files() -> list[tuple[str, str]]:
    """(path, library-relative path) of every .py file of the installed libraries."""
    files = []
    for library in LIBRARIES:
        root = installed_root(library)
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(names):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    files.append((path, library + "/" + os.path.relpath(path, root).replace(os.sep, "/")))
    return files


def audit_one(job: tuple[str, str, tuple]) -> Optional[dict]:
    """Fix one file in memory; the unsafe fixes applied and what each rests on (None: nothing to record)."""
    from compile_lint.fixes.apply import fix_text

    path, relpath, select = job
    linted = read_and_lint(path, relpath, select)
    if isinstance(linted, dict):
        return dict(linted, fixes=[])
    text, findings, config = linted
    record = {"path": relpath, "findings": Counter(d.code for d in findings), "fixes": []}
    if not any(d.fix is not None and d.fix.applicability == "unsafe" for d in findings):
        return record if relpath in WATCHED else None
    outcome = fix_text(text, path, config, unsafe=True)
    if outcome.error:
        record["fix_error"] = outcome.error
    for diagnostic in outcome.applied:
        fix = diagnostic.fix
        if fix is None or fix.applicability != "unsafe":
            continue
        record["fixes"].append({
            "code": diagnostic.code, "line": diagnostic.line, "message": fix.message,
            "rests_on": [list(operand) for operand in fix.rests_on],
            # the new code runs only under torch.compile (eager runs keep the original), where
            # Dynamo's kinds are the truth: `if torch.compiler.is_compiling(): torch._assert_async(...)`
            # (the file's own helper spells it too: transformers' `is_torchdynamo_compiling()`).
            "compiled_only": any(re.search(r"\b\w*compiling\(\)", edit.content) for edit in fix.edits),
        })
    return record


def problems_of(fix: dict) -> list[str]:
    """Why an applied fix breaks the contract (empty: it rests on evidence only)."""
    found = [f"`{source}` is a {evidence}" for source, evidence in fix["rests_on"] if evidence not in SAFE_OPERANDS]
    if fix["code"] in REWRITING_RULES and not fix["rests_on"] and not fix["compiled_only"]:
        found.append("records no operand")
    return found


def render(records: list[dict], seconds: float, files: int, command: str) -> tuple[str, dict, bool]:
    fixes = [dict(fix, path=r["path"]) for r in records for fix in r["fixes"]]
    by_code = Counter(fix["code"] for fix in fixes)
    evidence = Counter(e for fix in fixes for _, e in fix["rests_on"])
    bad = [(fix, problems_of(fix)) for fix in fixes if problems_of(fix)]
    errors = [r for r in records if r.get("error") or r.get("fix_error")]
    watched = {r["path"]: r for r in records if r["path"] in WATCHED}
    lines = [
        "# What unsafe fixes rest on (real-world tree)", "",
        f"Command: `{command}`", "",
        f"{files} files linted and fixed in memory in {seconds:.0f} s; {len(fixes)} unsafe fixes applied, "
        f"{len(bad)} resting on an operand that is no tensor in eager code (must be 0).", "",
        "| code | unsafe fixes applied | operands recorded |", "| --- | ---: | ---: |",
    ]
    for code in sorted(by_code):
        recorded = sum(len(f["rests_on"]) for f in fixes if f["code"] == code)
        lines.append(f"| {code} | {by_code[code]} | {recorded} |")
    lines += ["", "| operand kind | count |", "| --- | ---: |"]
    lines += [f"| {kind} | {count} |" for kind, count in sorted(evidence.items())]
    lines += ["", "## Watched files", ""]
    for path in WATCHED:
        record = watched.get(path)
        found = dict(sorted(record["findings"].items())) if record else {}
        applied = Counter(f["code"] for f in record["fixes"]) if record else Counter()
        lines.append(f"- `{path}`: findings {found or 'none'}; unsafe fixes applied {dict(applied) or 'none'}")
    if bad:
        lines += ["", "## Fixes resting on no evidence", ""]
        lines += [f"- `{fix['path']}:{fix['line']}` {fix['code']} ({fix['message']}): {'; '.join(why)}"
                  for fix, why in bad]
    if errors:
        lines += ["", "## Files that failed", ""]
        lines += [f"- `{r['path']}`: {r.get('error') or r.get('fix_error')}" for r in errors]
    summary = {
        "command": command, "files": files, "seconds": round(seconds, 1), "unsafe_fixes_applied": len(fixes),
        "by_code": dict(sorted(by_code.items())), "operand_kinds": dict(sorted(evidence.items())),
        "without_evidence": [{"path": f["path"], "line": f["line"], "code": f["code"], "problems": why}
                             for f, why in bad],
        "watched": {path: {"findings": dict(watched[path]["findings"]) if path in watched else {},
                           "unsafe_fixes_applied": ([f["code"] for f in watched[path]["fixes"]]
                                                    if path in watched else [])}
                    for path in WATCHED},
        "fixes": fixes,
    }
    return "\n".join(lines) + "\n", summary, not bad


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--select", default="", help="rule codes (comma-separated) or ALL; default: the default rules")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=DEFAULT_OUT, help="output prefix (.md and .json are written)")
    parser.add_argument("--files-from", metavar="JSON",
                        help="only the files a fix_realworld.py result offered a fix in (and the watched ones): "
                             "quick, for a tree whose other files get no fix")
    args = parser.parse_args(argv)
    select = tuple(code.strip() for code in args.select.split(",") if code.strip())
    files = library_files()
    if args.files_from:
        with open(args.files_from, encoding="utf-8") as handle:
            records = json.load(handle)["records"].values()
        offered = {r["path"] for r in records if any(f.get("fix") for f in r.get("findings", []))} | set(WATCHED)
        files = [(path, relpath) for path, relpath in files if relpath in offered]
    start = time.perf_counter()
    jobs = [(path, relpath, select) for path, relpath in files]
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        records = [r for r in pool.map(audit_one, jobs, chunksize=16) if r is not None]
    seconds = time.perf_counter() - start
    command = "python benchmarks/fix_operands.py" + (f" --select {args.select}" if args.select else "") + (
        f" --files-from {os.path.relpath(args.files_from, REPO)}" if args.files_from else "")
    report, summary, ok = render(records, seconds, len(files), command)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".md", "w", encoding="utf-8") as handle:
        handle.write(report)
    with open(args.out + ".json", "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1, sort_keys=True)
        handle.write("\n")
    print(report)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

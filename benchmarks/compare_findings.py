"""Findings before and after a restructure: the CLI's JSON (fixes included) and its --unsafe-fixes --diff.

    python benchmarks/compare_findings.py write OUT [--work DIR] [--jobs N] [--trees examples,rule-examples]
    python benchmarks/compare_findings.py compare BEFORE AFTER

`write` lints three trees with `python -m compile_lint --select ALL --no-cache`, once with
`--output-format json` and once with `--unsafe-fixes --diff`, and writes every output, in
order, to OUT:

- examples/ of this repository;
- every rule's invalid and valid example, one file each (`JIT101_invalid_0.py`, ...);
- the real-world files the benchmarks use (benchmarks/speed.py's corpus): transformers'
  `models/`, timm and diffusers, copied from the installed packages.

The trees are copied into `--work` (default: a temporary directory; give the same one to
both runs, so that reported paths match) with `respect-gitignore = false`. `compare` says
whether two outputs are byte-identical and prints the first lines that differ.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBTREES = {"transformers": "transformers/models", "timm": "timm", "diffusers": "diffusers"}
TREES = ("examples", "rule-examples", "realworld")


def _copy_tree(source: str, target: str) -> int:
    """The .py files under `source` copied to `target`; how many."""
    count = 0
    for directory, _, names in os.walk(source):
        for name in sorted(names):
            if name.endswith(".py"):
                relative = os.path.relpath(os.path.join(directory, name), source)
                os.makedirs(os.path.join(target, os.path.dirname(relative)), exist_ok=True)
                shutil.copyfile(os.path.join(directory, name), os.path.join(target, relative))
                count += 1
    return count


def _write_rule_examples(target: str) -> int:
    from compile_lint.rules import ALL_RULES

    os.makedirs(target, exist_ok=True)
    count = 0
    for rule in ALL_RULES:
        for kind in ("invalid", "valid"):
            for index, example in enumerate(getattr(rule, kind)):
                with open(os.path.join(target, f"{rule.code}_{kind}_{index}.py"), "w", encoding="utf-8") as handle:
                    handle.write(example.code)
                count += 1
    return count


def prepare(work: str, trees: tuple[str, ...] = TREES) -> dict[str, int]:
    """The trees under `work`; their file counts."""
    shutil.rmtree(work, ignore_errors=True)
    counts = {}
    if "examples" in trees:
        counts["examples"] = _copy_tree(os.path.join(REPO, "examples"), os.path.join(work, "examples"))
    if "rule-examples" in trees:
        counts["rule-examples"] = _write_rule_examples(os.path.join(work, "rule-examples"))
    real = 0
    for package, subtree in SUBTREES.items() if "realworld" in trees else ():
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            sys.exit(f"{package} is not installed (pip install -e .[realworld])")
        root = os.path.dirname(list(spec.submodule_search_locations)[0])
        real += _copy_tree(os.path.join(root, subtree), os.path.join(work, "realworld", subtree))
    if "realworld" in trees:
        counts["realworld"] = real
    for tree in counts:
        with open(os.path.join(work, tree, "compile-lint.toml"), "w", encoding="utf-8") as handle:
            handle.write("respect-gitignore = false\n")
    return counts


def write(out: str, work: str, jobs: int, trees: tuple[str, ...] = TREES) -> None:
    counts = prepare(work, trees)
    sections = []
    for tree, count in counts.items():
        for extra in (["--output-format", "json"], ["--unsafe-fixes", "--diff"]):
            command = [sys.executable, "-m", "compile_lint", "--select", "ALL", "--no-cache", "--exit-zero",
                       "--jobs", str(jobs), *extra, "."]
            done = subprocess.run(command, cwd=os.path.join(work, tree), capture_output=True, text=True)
            header = f"== {tree} ({count} files): {' '.join(extra)} -> exit {done.returncode}"
            print(header, f"{len(done.stdout)} characters", file=sys.stderr)
            sections.append(f"{header}\n{done.stdout}\n== stderr\n{done.stderr}\n")
    with open(out, "w", encoding="utf-8") as handle:
        handle.write("".join(sections))
    print(f"{sum(counts.values())} files ({counts}) -> {out}", file=sys.stderr)


def compare(before: str, after: str) -> int:
    with open(before, encoding="utf-8") as a, open(after, encoding="utf-8") as b:
        old, new = a.read(), b.read()
    if old == new:
        print(f"identical: {len(old)} characters")
        return 0
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), before, after, lineterm="", n=1)
    for number, line in enumerate(diff):
        if number >= 60:
            print("...")
            break
        print(line)
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    writer = commands.add_parser("write")
    writer.add_argument("out")
    writer.add_argument("--work", default=None)
    writer.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    writer.add_argument("--trees", default=",".join(TREES), help="a quick check: only these of " + ", ".join(TREES))
    comparer = commands.add_parser("compare")
    comparer.add_argument("before")
    comparer.add_argument("after")
    args = parser.parse_args()
    if args.command == "compare":
        return compare(args.before, args.after)
    work = args.work or tempfile.mkdtemp(prefix="compare-findings-")
    write(args.out, work, args.jobs, tuple(args.trees.split(",")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

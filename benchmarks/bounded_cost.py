"""What one big file costs to lint: the CPU time, the peak memory and the findings (issue 41, item 2).

Usage: python benchmarks/bounded_cost.py [--cases long_forward,untyped_forward,sibling,small_modules,quiet_modules]
           [--statements 20000] [--modules 10000] [--tree LABEL=DIR ...] [--timeout 900] [--out FILE]

The inputs are made here, in a temporary directory removed afterwards, never committed:

- `long_forward`: one `forward(self, x: torch.Tensor, i: int)` of `--statements` lines
  `x = x + i`, ending in a tensor `if` and a `print` (two graph breaks) and `return x`;
- `untyped_forward`: the same with `forward(self, x, i)` (no annotation: a fix must look
  for evidence that `x` is a tensor through every binding of `x`);
- `sibling`: a 12-line module file beside the `long_forward` file, linted alone (the
  project index covers the directory, so it reads the big file too);
- `small_modules`: `--modules` nn.Module classes of one `print(x)` and one `return` each
  (50,003 lines for 10,000: one finding per class);
- `quiet_modules`: the same with a `pass` for the `print` (no finding: the lint's floor).

Beside each lint, the floor of any libcst-based linter on the file linted: a bare
`libcst.parse_module` of it in a child process (its CPU time and peak RSS).

Each run is the CLI as a user starts it, `python -m compile_lint --no-cache --output-format
json FILE` in that directory (the default rules, the project index built afresh), as a child
process: its wall time, its CPU time and peak resident memory (the child's and its
pool's, from `wait4`), and the findings by code. `--tree LABEL=DIR` runs the same cases
with the `compile_lint` of another checkout or `git archive` (DIR first on `PYTHONPATH`),
each case on every tree in turn: a before/after in one run, under the same load. A run
past `--timeout` is stopped and reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Callable, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ("long_forward", "untyped_forward", "sibling", "small_modules", "quiet_modules")


def long_forward(statements: int, annotated: bool = True) -> str:
    """One forward of `statements` simple statements, then a tensor `if` and a `print`."""
    params = "self, x: torch.Tensor, i: int" if annotated else "self, x, i"
    lines = ["import torch", "import torch.nn as nn", "", "", "class Net(nn.Module):", f"    def forward({params}):"]
    lines += ["        x = x + i"] * statements
    lines += ["        if x.sum() > 0:", "            x = x * 2", "        print(x)", "        return x", ""]
    return "\n".join(lines)


SIBLING = '''import torch
import torch.nn as nn


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)
'''


def small_modules(modules: int, statement: str = "print(x)") -> str:
    """`modules` classes of five lines each (with the three lines of imports: 5 * modules + 3 lines)."""
    lines = ["import torch", "import torch.nn as nn", ""]
    for index in range(modules):
        lines += [f"class M{index}(nn.Module):", "    def forward(self, x):", f"        {statement}",
                  f"        return x + {index}", ""]
    return "\n".join(lines) + "\n"


def case_files(case: str, statements: int, modules: int) -> tuple[dict[str, str], str]:
    """The files of `case` (name -> text) and the one to lint."""
    if case == "long_forward":
        return {"model.py": long_forward(statements)}, "model.py"
    if case == "untyped_forward":
        return {"model.py": long_forward(statements, annotated=False)}, "model.py"
    if case == "sibling":
        return {"model.py": long_forward(statements), "small.py": SIBLING}, "small.py"
    if case == "small_modules":
        return {"model.py": small_modules(modules)}, "model.py"
    if case == "quiet_modules":
        return {"model.py": small_modules(modules, "pass")}, "model.py"
    raise ValueError(case)


PARSE = "import libcst, sys; libcst.parse_module(open(sys.argv[1], encoding='utf-8').read())"


def run_cli(tree: str, directory: str, target: str, timeout: float) -> dict:
    """One lint of `target` in `directory` by `tree`'s compile_lint: wall and CPU seconds, peak RSS (MB),
    findings by code."""
    command = [sys.executable, "-m", "compile_lint", "--no-cache", "--output-format", "json", target]
    result = _run(command, directory, timeout, tree)
    stdout, stderr = result.pop("stdout"), result.pop("stderr")
    if not result["timed_out"]:
        try:
            findings = json.loads(stdout)
        except json.JSONDecodeError:
            findings = []
            result["error"] = (stderr or stdout).strip().splitlines()[-1:] or ["no output"]
        result["findings"] = dict(sorted(Counter(f["code"] for f in findings).items()))
        result["messages"] = [f"{f['line']}: {f['code']} {f['message'][:80]}" for f in findings
                              if f["code"] == "JIT000"]
    return result


def parse_floor(directory: str, target: str, timeout: float) -> dict:
    """A bare libcst parse of `target`: CPU seconds and peak RSS (MB)."""
    result = _run([sys.executable, "-c", PARSE, target], directory, timeout)
    return {"parse_cpu_s": result["cpu_s"], "parse_peak_rss_mb": result["peak_rss_mb"],
            "parse_exit": result["exit"]}


def _run(command: list[str], directory: str, timeout: float, tree: Optional[str] = None) -> dict:
    """Run `command` in `directory` (`tree` first on PYTHONPATH): wall, CPU, peak RSS, exit, output."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")]))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        child = subprocess.Popen(command, cwd=directory, stdout=out, stderr=err, env=env, start_new_session=True)
        deadline = start + timeout
        status, usage = 0, None
        timed_out = False
        try:
            while True:
                pid, status, usage = os.wait4(child.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    timed_out = True
                    os.killpg(child.pid, signal.SIGKILL)
                    _, status, usage = os.wait4(child.pid, 0)
                    break
                time.sleep(0.05)
        except BaseException:  # stopped meanwhile: the lint (and its pool) stops too
            os.killpg(child.pid, signal.SIGKILL)
            os.wait4(child.pid, 0)
            raise
        wall = time.monotonic() - start
        child.returncode = os.waitstatus_to_exitcode(status)  # already reaped: keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "exit": child.returncode,
        "timed_out": timed_out,
        "stdout": stdout,
        "stderr": stderr,
    }


def measure(tree: str, case: str, statements: int, modules: int, timeout: float) -> dict:
    """Make `case`'s files in a temporary directory, lint its target, remove the directory."""
    files, target = case_files(case, statements, modules)
    directory = tempfile.mkdtemp(prefix="compile-lint-bounded-")
    try:
        for name, text in files.items():
            with open(os.path.join(directory, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        lines = sum(text.count("\n") + (not text.endswith("\n")) for text in files.values())
        result = run_cli(tree, directory, target, timeout)
        result.update(case=case, tree=tree, target=target, lines_in_directory=lines)
        result.update(parse_floor(directory, target, timeout))
        return result
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _describe(tree: str) -> str:
    """`tree` and its commit, when it is a git checkout."""
    commit = subprocess.run(["git", "-C", tree, "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    return f"{tree} @ {commit.stdout.strip()[:90]}" if commit.returncode == 0 else tree


def table(results: list[dict], label: Callable[[str], str]) -> str:
    """The results as a Markdown table."""
    rows = ["| tree | case | lines in dir | CPU s | wall s | peak RSS MB | libcst parse: CPU s, peak RSS MB "
            "| findings | JIT000 |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in results:
        if r["timed_out"]:
            findings, gave_up = f"stopped after {r['wall_s']} s", ""
        else:
            findings = ", ".join(f"{code} x{count}" for code, count in r["findings"].items()) or "none"
            gave_up = "; ".join(r["messages"])
        rows.append(f"| {label(r['tree'])} | {r['case']} ({r['target']}) | {r['lines_in_directory']:,} | "
                    f"{r['cpu_s']} | {r['wall_s']} | {r['peak_rss_mb']} | {r['parse_cpu_s']}, "
                    f"{r['parse_peak_rss_mb']} | {findings} | {gave_up} |")
    return "\n".join(rows)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--statements", type=int, default=20000)
    parser.add_argument("--modules", type=int, default=10000)
    parser.add_argument("--tree", action="append", metavar="LABEL=DIR",
                        help="a compile_lint tree to run (repeatable); default: this checkout")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--out", help="also write the table and the raw results (FILE.md, FILE.json)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so a stopped run removes its files
    trees = dict(entry.split("=", 1) for entry in args.tree) if args.tree else {"this": REPO}
    labels = {os.path.abspath(directory): label for label, directory in trees.items()}
    results = []
    for case in args.cases.split(","):
        for directory in labels:
            result = measure(directory, case, args.statements, args.modules, args.timeout)
            results.append(result)
            print(table([result], labels.__getitem__).splitlines()[-1], file=sys.stderr)
    load = os.getloadavg()
    header = [
        f"Command: python benchmarks/bounded_cost.py {' '.join(argv if argv is not None else sys.argv[1:])}",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load average after the run {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}",
        "",
        *[f"- {label}: {_describe(directory)}" for directory, label in labels.items()],
        "",
    ]
    text = "\n".join(header) + "\n" + table(results, labels.__getitem__) + "\n"
    print(text)
    if args.out:
        with open(args.out + ".md", "w", encoding="utf-8") as handle:
            handle.write(text)
        with open(args.out + ".json", "w", encoding="utf-8") as handle:
            json.dump({"trees": {label: _describe(directory) for directory, label in labels.items()},
                       "results": results}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""fix_payoff.py's check of a slow fix: does `compile-lint --fix --unsafe-fixes --verify --bench` say so?

A fix shape whose compiled fixed code runs below `--verify-below` (default 0.9x) of the compiled
original is written out as a project of its own (the rule example as `case.py`, a `targets.py`
whose factory builds the example's entry and calls, the target in pyproject.toml) and fixed with
the CLI and its payoff check (`--bench`), on the same device, the example's rule alone
(`--select`). Its verdict goes into the row: rolled back (case.py left unchanged, with the
warning's numbers), kept, or no fix written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TARGETS = """\
import torch

import case
from compile_lint.verifier.probe import resolve_entry


def make():
    torch.manual_seed(0)
    return resolve_entry(case, {entry!r}), {calls}
"""
PYPROJECT = """\
[tool.compile-lint.verify]
targets = ["targets.py:make"]
"""


def verify_slow_fix(code: str, entry: str, calls: str, rule_code: str, timeout_s: float = 300.0) -> dict[str, Any]:
    """The verdict of `--fix --unsafe-fixes --verify --bench` on the example `code` (its rule alone)."""
    work = tempfile.mkdtemp(prefix="fix-payoff-verify-")
    try:
        case_path = os.path.join(work, "case.py")
        with open(case_path, "w", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(code).lstrip("\n"))
        with open(os.path.join(work, "targets.py"), "w", encoding="utf-8") as handle:
            handle.write(TARGETS.format(entry=entry, calls=calls))
        with open(os.path.join(work, "pyproject.toml"), "w", encoding="utf-8") as handle:
            handle.write(PYPROJECT)
        with open(case_path, encoding="utf-8") as handle:
            before = handle.read()
        command = ["--fix", "--unsafe-fixes", "--verify", "--bench", "--no-cache", "--select", rule_code, "case.py"]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
        try:
            done = subprocess.run([sys.executable, "-m", "compile_lint", *command], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"command": "compile-lint " + " ".join(command), "verdict": f"timed out after {timeout_s:.0f} s"}
        with open(case_path, encoding="utf-8") as handle:
            after = handle.read()
        rollback = [line for line in done.stderr.splitlines() if "fix rolled back" in line]
        verdict = "rolled back" if rollback else "kept" if after != before else "no fix written"
        return {"command": "compile-lint " + " ".join(command), "exit": done.returncode, "verdict": verdict,
                "message": (rollback or [""])[0][:600],
                "stderr_tail": done.stderr[-800:] if verdict == "no fix written" else ""}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def verdict_lines(shapes: list[dict]) -> list[str]:
    """The report's lines for the fix shapes checked here (none when no row was)."""
    checked = [row for row in shapes if "verifier" in row]
    if not checked:
        return []
    lines = ["", "Below the verify threshold, `--fix --unsafe-fixes --verify --bench` on the example "
                 "(its rule alone, this device):", ""]
    for row in checked:
        verdict = row["verifier"]
        lines.append(f"- {row['case']} ({row['modes']['default']['fixed_over_original']['ratio']:.2f}x): "
                     f"{verdict['verdict']}" + (f": {verdict['message']}" if verdict.get("message") else ""))
    return lines

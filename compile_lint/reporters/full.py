"""`--output-format full`: each finding as ruff's `full` format shows it, with the code around it and the fix.

The header line is the concise one up to what breaks; below it the finding's line with two lines of
context either side, carets under the finding, and a `help:` line: its fix, else what to do by hand.
"""

from __future__ import annotations

from typing import Sequence

from compile_lint.core.diagnostics import Diagnostic
from compile_lint.reporters.finding_line import finding_line, help_text

CONTEXT_LINES = 2


def _help(d: Diagnostic) -> str:
    text = help_text(d)
    return f"  = help: {text}\n" if text else ""


def _snippet(d: Diagnostic, lines: list[str]) -> str:
    """The finding's line with its context, numbered, and carets under the finding."""
    first, last = max(1, d.line - CONTEXT_LINES), min(len(lines), d.line + CONTEXT_LINES)
    width = len(str(last))
    out = [f"{' ' * width} |\n"]
    for number in range(first, last + 1):
        text = lines[number - 1].expandtabs(1)
        out.append(f"{number:>{width}} | {text}\n".replace(" | \n", " |\n"))
        if number == d.line:
            span = (d.end_column - d.column) if d.end_line == d.line else len(text) - d.column + 1
            out.append(f"{' ' * width} | {' ' * (d.column - 1)}{'^' * max(1, span)} {d.code}\n")
    out.append(f"{' ' * width} |\n")
    return "".join(out)


def format_full(diagnostics: Sequence[Diagnostic], sources: dict[str, str]) -> str:
    """Every finding with its source context and fix, a blank line between findings."""
    blocks = []
    for d in diagnostics:
        lines = sources.get(d.path, "").splitlines()
        snippet = _snippet(d, lines) if 0 < d.line <= len(lines) else ""
        blocks.append(finding_line(d, with_help=False) + snippet + _help(d))
    return "".join(block + "\n" for block in blocks)

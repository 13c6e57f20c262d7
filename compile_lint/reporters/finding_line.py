"""The line every text format opens a finding with: `path:line:col: CODE [*] message`."""

from __future__ import annotations

from compile_lint.core.diagnostics import Diagnostic


def _fix_marker(diagnostic: Diagnostic) -> str:
    if diagnostic.fix is None:
        return ""
    return " [*]" if diagnostic.fix.applicability == "safe" else " [unsafe fix]"


def _confirmed(diagnostic: Diagnostic) -> str:
    return " (confirmed at runtime)" if diagnostic.confirmed else ""


def finding_line(d: Diagnostic) -> str:
    """`path:line:col: CODE [*] message`: the line each text format opens a finding with."""
    return f"{d.path}:{d.line}:{d.column}: {d.code}{_fix_marker(d)} {d.message}{_confirmed(d)}\n"

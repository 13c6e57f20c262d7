"""The line every text format opens a finding with: `path:line:col: CODE [*] message`."""

from __future__ import annotations

from typing import Optional

from compile_lint.core.diagnostics import Diagnostic


def _fix_marker(diagnostic: Diagnostic) -> str:
    if diagnostic.fix is None:
        return ""
    return " [*]" if diagnostic.fix.applicability == "safe" else " [unsafe fix]"


def _confirmed(diagnostic: Diagnostic) -> str:
    return " (confirmed at runtime)" if diagnostic.confirmed else ""


def finding_line(d: Diagnostic, with_help: bool = True) -> str:
    """`path:line:col: CODE [*] message`: the line each text format opens a finding with.

    Without `with_help` the message stops at what breaks: the format shows the help on a
    line of its own (`help_line`).
    """
    message = d.message if with_help else d.headline
    return f"{d.path}:{d.line}:{d.column}: {d.code}{_fix_marker(d)} {message}{_confirmed(d)}\n"


def help_text(d: Diagnostic) -> Optional[str]:
    """What to do about a finding, once: its fix (and the flags that apply it), else the message's help."""
    if d.fix is not None:
        how = "--fix" if d.fix.applicability == "safe" else "--fix --unsafe-fixes"
        return f"{d.fix.message} ({how})"
    if d.help is not None and d.help.startswith(_WITHHELD) and _BY_HAND in d.help:
        reason, step = d.help[len(_WITHHELD):].split(_BY_HAND, 1)
        return f"{step} (no automatic fix: {reason})"  # the step first, as ruff's help lines read
    return d.help


_WITHHELD = "no automatic fix: "
_BY_HAND = "; by hand: "

"""Grouped runtime records as findings, each joined with the static finding at its line.

A graph break is JIT900 and a recompile JIT901, the verifier's runtime codes: the same
meaning, read from a log instead of a run the verifier made. A static finding at the same
file and line joins it, preferring one whose rule predicts the logged graph-break type,
then one of the same kind (break, recompile), then any: the runtime finding then carries
that finding's position on the line and its fix, and names its code. Where no rule flags
the line the message says "seen at run time, no static rule": those lines are what the
static rules still miss.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from compile_lint.core.diagnostics import Diagnostic, Observed
from compile_lint.verifier.report import RUNTIME_BREAK, RUNTIME_RECOMPILE, display_path, friendly_function
from compile_lint.verifier.runtime_log.sites import Group, library_path

NO_STATIC_RULE = "seen at run time, no static rule"


@dataclass
class StaticFile:
    """What linting one site's file gave: its findings and text (for the source line under a finding)."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    text: str = ""


_GUARDED_NAME = re.compile(r"^(?:L\[['\"](?P<local>\w+)['\"]\]|(?P<name>\w+))")


def agreeing(static: StaticFile, group: Group) -> list[Diagnostic]:
    """The static findings that explain the group, best first.

    Those whose range holds the group's line: the same graph-break type, then the same kind,
    then the rest, each by column. For a recompile with none there, a recompile finding on
    the parameter the failed guard names, in the recompiled function's `def` line (JIT504
    flags `scale=1.0` where it is declared; Dynamo reports where it is read).
    """
    line = group.site.frame.line

    def rank(diagnostic: Diagnostic) -> int:
        if group.kind == "break" and (diagnostic.gb_type or "").lower() == group.reason.lower():
            return 0
        return 1 if diagnostic.kind == group.kind else 2

    here = sorted((d for d in static.diagnostics if d.line <= line <= d.end_line),
                  key=lambda d: (rank(d), d.line != line, d.column, d.code))
    if here or group.kind != "recompile" or group.definition is None:
        return here
    return [d for d in static.diagnostics if d.kind == "recompile" and _declares_guarded(d, group, static.text)]


def _declares_guarded(diagnostic: Diagnostic, group: Group, text: str) -> bool:
    """Whether a finding on the recompiled function's `def` line starts at the name the guard reads."""
    definition = group.definition
    name = _GUARDED_NAME.match(group.reason)
    if definition is None or name is None or diagnostic.line != definition.line:
        return False
    if os.path.abspath(definition.path) != os.path.abspath(group.site.frame.path):
        return False
    lines = text.splitlines()
    source = lines[diagnostic.line - 1] if diagnostic.line <= len(lines) else ""
    guarded = name["local"] or name["name"]
    return re.match(rf"{guarded}\b", source[diagnostic.column - 1:]) is not None


def _times(count: int) -> str:
    return "" if count == 1 else f" ({count} times)"


def _what(group: Group) -> str:
    if group.kind == "break":
        gb_id = f" ({group.gb_id})" if group.gb_id else ""
        text = f"graph break seen at run time{_times(group.count)}: {group.reason}{gb_id}"
        if group.then:
            text += f", then {', '.join(group.then)}"
        return text
    function = f" of {friendly_function(group.definition.function)}" if group.definition else ""
    return f"recompile{function} seen at run time{_times(group.count)}: guard failed: {group.reason}"


def _inside(group: Group) -> str:
    if not group.site.library:
        return ""
    frame = group.site.library[-1]
    function = f" in {frame.function}" if frame.function else ""
    return f"; inside a library, at {library_path(frame.path)}:{frame.line}{function}, called from here"


def _joined(best: Optional[Diagnostic], others: Sequence[Diagnostic], group: Group) -> str:
    if not group.site.in_project:
        return "; no frame of its stack lies in the project"
    if best is None:
        return f"; {NO_STATIC_RULE}"
    where = "here" if best.line <= group.site.frame.line <= best.end_line else f"at line {best.line}"
    also = f" (also: {', '.join(d.code for d in others)})" if others else ""
    return f"; static {best.code} {where}: {best.message}{also}"


def _columns(best: Optional[Diagnostic], line: int, text: str) -> tuple[int, int]:
    """The finding's columns: the static finding's on its line, else the line's code without its indent."""
    if best is not None and best.line == line and best.end_line == line:
        return best.column, best.end_column
    lines = text.splitlines()
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    if not source.strip():
        return 1, 1
    return len(source) - len(source.lstrip()) + 1, len(source.rstrip()) + 1


def group_finding(group: Group, static: StaticFile) -> Diagnostic:
    """One group as a JIT900/JIT901 finding at its site, with the agreeing static finding's fix."""
    code, name, kind = RUNTIME_BREAK if group.kind == "break" else RUNTIME_RECOMPILE
    frame = group.site.frame
    found = agreeing(static, group) if group.site.in_project else []
    best, others = (found[0], found[1:]) if found else (None, [])
    column, end_column = _columns(best, frame.line, static.text)
    observed = Observed(
        group.count,
        tuple((d.code, d.name) for d in found),
        tuple((display_path(f.path), f.line, f.function) for f in group.site.library))
    message = _what(group) + _inside(group) + _joined(best, others, group)
    return Diagnostic(display_path(frame.path), frame.line, column, frame.line, end_column, code, name, kind,  # type: ignore[arg-type]
                      message, group.reason if group.kind == "break" else None, group.gb_id,
                      fix=best.fix if best is not None else None, observed=observed)


def runtime_findings(groups: Sequence[Group], lint: Callable[[str], StaticFile]
                     ) -> tuple[list[Diagnostic], dict[str, str]]:
    """Every group as a finding, sorted as the linter sorts, and the text of each file named.

    `lint` is asked once per project file that holds a site.
    """
    files: dict[str, StaticFile] = {}
    out = []
    for group in groups:
        path = display_path(group.site.frame.path)
        if path not in files:
            files[path] = lint(path) if group.site.in_project and os.path.isfile(path) else StaticFile()
        out.append(group_finding(group, files[path]))
    sources = {path: static.text for path, static in files.items() if static.text}
    return sorted(out, key=Diagnostic.sort_key), sources

"""`--output-format gitlab`: a GitLab Code Quality report (the JSON array a `codequality` artifact holds).

Each finding has `description`, `check_name`, a `fingerprint`, a `severity` and
`location.path` / `location.lines.begin`, as GitLab reads them. The fingerprint names the
finding, not its line: it hashes the path, the code, the message and the source line's
text, so a finding keeps its fingerprint when lines above it are added or removed (GitLab
then shows it as neither fixed nor new); equal findings on equal lines are numbered apart.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Sequence

from compile_lint.core.diagnostics import Diagnostic

# GitLab's severities: info, minor, major, critical, blocker.
SEVERITIES = {"break": "major", "recompile": "major", "perf": "minor", "error": "critical"}


def _report_path(path: str) -> str:
    """The path GitLab resolves against the checkout: relative to CI_PROJECT_DIR when set, else as reported."""
    project = os.environ.get("CI_PROJECT_DIR")
    relative = os.path.relpath(os.path.abspath(path), project) if project else path
    return (path if relative.startswith(os.pardir) else relative).replace(os.sep, "/")


def fingerprint(d: Diagnostic, line_text: str, occurrence: int) -> str:
    """A stable id of the finding: the same for the same finding in the same code, wherever its line moves."""
    key = "\0".join((d.path.replace(os.sep, "/"), d.code, d.message, line_text.strip(), str(occurrence)))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def format_gitlab(diagnostics: Sequence[Diagnostic], sources: dict[str, str]) -> str:
    """The findings as a GitLab Code Quality JSON array."""
    seen: dict[tuple, int] = {}
    issues = []
    for d in diagnostics:
        lines = sources.get(d.path, "").splitlines()
        line_text = lines[d.line - 1] if 0 < d.line <= len(lines) else ""
        identity = (d.path, d.code, d.message, line_text.strip())
        occurrence = seen[identity] = seen.get(identity, -1) + 1
        issues.append({
            "description": f"{d.code}: {d.message}",
            "check_name": d.code,
            "fingerprint": fingerprint(d, line_text, occurrence),
            "severity": SEVERITIES.get(d.kind, "major"),
            "location": {"path": _report_path(d.path), "lines": {"begin": d.line, "end": d.end_line}},
        })
    return json.dumps(issues, indent=2) + "\n"

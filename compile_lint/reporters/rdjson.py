"""`--output-format rdjson`: reviewdog's Diagnostic Format, as ruff writes it.

One object: `diagnostics` (each with `code` {`value`}, `location` {`path`, `range`},
`message`, and `suggestions` when the finding has a fix: its edits), `severity` "WARNING",
`source` {`name`}. Keys sorted, two-space indents and no newline at the end, as ruff prints
it; paths absolute, as ruff's are. No `url`s: reviewdog links them from a pull request, and
compile-lint has no public page to link to (the JSON's `url` is relative to its source tree).
"""

from __future__ import annotations

import json
import os
from typing import Sequence

from compile_lint.core.diagnostics import Diagnostic


def _range(line: int, column: int, end_line: int, end_column: int) -> dict:
    return {"start": {"line": line, "column": column}, "end": {"line": end_line, "column": end_column}}


def _diagnostic(d: Diagnostic) -> dict:
    entry: dict = {
        "code": {"value": d.code},
        "location": {"path": os.path.abspath(d.path), "range": _range(d.line, d.column, d.end_line, d.end_column)},
        "message": d.message,
    }
    if d.fix is not None:
        entry["suggestions"] = [{"range": _range(edit.line, edit.column, edit.end_line, edit.end_column),
                                 "text": edit.content} for edit in d.fix.edits]
    return entry


def format_rdjson(diagnostics: Sequence[Diagnostic], sources: dict[str, str]) -> str:
    """The findings as one reviewdog rdjson object."""
    report = {"diagnostics": [_diagnostic(d) for d in diagnostics], "severity": "WARNING",
              "source": {"name": "compile-lint"}}
    return json.dumps(report, indent=2, sort_keys=True)

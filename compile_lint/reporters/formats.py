"""Output formats: text, concise text, JSON (the contract) and JSON lines, GitHub annotations, SARIF,
ruff's `pylint` and `azure` lines; ruff's `full`, `junit`, `gitlab` and `rdjson` are in their own
modules (reporters/full.py, junit.py, gitlab.py, rdjson.py)."""

from __future__ import annotations

import json
import os
import pathlib
import urllib.parse
from typing import Callable, Optional, Sequence

from compile_lint import __version__
from compile_lint.core.diagnostics import Diagnostic
from compile_lint.reporters.finding_line import finding_line, help_text
from compile_lint.reporters.full import format_full
from compile_lint.reporters.gitlab import format_gitlab
from compile_lint.reporters.junit import format_junit
from compile_lint.reporters.rdjson import format_rdjson

FORMATS = ("text", "concise", "full", "json", "json-lines", "github", "sarif", "junit", "gitlab", "pylint",
           "rdjson", "azure")


def format_concise(diagnostics: Sequence[Diagnostic], sources: dict[str, str]) -> str:
    """`path:line:col: CODE message`, one line per finding (editors' problem matchers)."""
    return "".join(finding_line(d) for d in diagnostics)


def format_text(diagnostics: Sequence[Diagnostic], sources: dict[str, str]) -> str:
    """The concise line up to what breaks, the source line with a caret under the finding, then a `help:`
    line (the fix, else what to do by hand)."""
    out = []
    for d in diagnostics:
        out.append(finding_line(d, with_help=False))
        lines = sources.get(d.path, "").splitlines()
        gutter = "      "
        if 0 < d.line <= len(lines):
            line = lines[d.line - 1].expandtabs(1)
            width = (d.end_column - d.column) if d.end_line == d.line else len(line) - d.column + 1
            gutter = f"{d.line:>5} | "
            out.append(f"{gutter}{line}\n")
            out.append(" " * (len(gutter) - 2) + "| " + " " * (d.column - 1) + "^" * max(1, width) + "\n")
        text = help_text(d)
        if text:
            out.append(" " * (len(gutter) - 2) + f"= help: {text}\n")
    return "".join(out)


def format_json(diagnostics: Sequence[Diagnostic], sources: dict[str, str]) -> str:
    """A JSON array of findings, as docs/findings.schema.json specifies."""
    return json.dumps([d.to_json() for d in diagnostics], indent=2) + "\n"


def format_json_lines(diagnostics: Sequence[Diagnostic], sources: dict[str, str]) -> str:
    """One finding per line, each the object `json` prints, without spaces (ruff's `json-lines`)."""
    return "".join(json.dumps(d.to_json(), separators=(",", ":")) + "\n" for d in diagnostics)


def format_pylint(diagnostics: Sequence[Diagnostic], sources: dict[str, str]) -> str:
    """`path:line: [CODE] message`, as pylint's parseable format and ruff's `pylint` print it."""
    return "".join(f"{d.path}:{d.line}: [{d.code}] {d.message}\n" for d in diagnostics)


def format_azure(diagnostics: Sequence[Diagnostic], sources: dict[str, str]) -> str:
    """Azure Pipelines logging commands, as ruff's `azure` writes them (absolute paths)."""
    return "".join(f"##vso[task.logissue type={'warning' if d.kind == 'perf' else 'error'};"
                   f"sourcepath={os.path.abspath(d.path)};linenumber={d.line};columnnumber={d.column};"
                   f"code={d.code};]{d.message}\n" for d in diagnostics)


def _escape_github(value: str, property_value: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if property_value:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def format_github(diagnostics: Sequence[Diagnostic], sources: dict[str, str]) -> str:
    """GitHub Actions workflow commands: `::error file=...,line=...::message`."""
    out = []
    for d in diagnostics:
        level = "warning" if d.kind == "perf" else "error"
        props = (
            f"file={_escape_github(d.path, True)},line={d.line},col={d.column},"
            f"endLine={d.end_line},endColumn={d.end_column},title={_escape_github(d.code + ' ' + d.name, True)}"
        )
        out.append(f"::{level} {props}::{_escape_github(d.code + ' ' + d.message)}\n")
    return "".join(out)


# SARIF's name for the directory relative artifact URIs rest on: the cwd of the run, declared
# in the run's originalUriBaseIds (GitHub code scanning maps it to the checkout).
SRCROOT = "%SRCROOT%"


def _artifact_location(path: str) -> dict:
    """A SARIF artifactLocation: a percent-encoded URI relative to %SRCROOT% (the cwd) for a
    path under the cwd, an absolute `file:` URI for an absolute path or one outside the cwd."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute) if not os.path.isabs(path) else None
    if relative is None or relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return {"uri": pathlib.Path(absolute).as_uri()}
    return {"uri": urllib.parse.quote(relative.replace(os.sep, "/")), "uriBaseId": SRCROOT}


def _add_observed(result: dict, diagnostic: Diagnostic) -> None:
    """What a runtime log showed (explain-log): how often, the static rules at the line, the library frames."""
    observed = diagnostic.observed
    assert observed is not None
    result["occurrenceCount"] = observed.count
    result["properties"] = {"runtime": True, "static": [code for code, _ in observed.static]}
    related = result.setdefault("relatedLocations", [])
    related += [{
        "id": len(related) + number,
        "message": {"text": f"inside the library, in {function}" if function else "inside the library"},
        "physicalLocation": {"artifactLocation": _artifact_location(path), "region": {"startLine": line}},
    } for number, (path, line, function) in enumerate(observed.library_frames)]
    if not related:
        del result["relatedLocations"]


def format_sarif(diagnostics: Sequence[Diagnostic], sources: dict[str, str]) -> str:
    """SARIF 2.1.0, one run, with a rule entry per code that appears."""
    from compile_lint.reporters.docs import graph_break_url
    from compile_lint.rules import RULES_BY_CODE

    codes = sorted({d.code for d in diagnostics})
    rules = []
    for code in codes:
        rule = RULES_BY_CODE.get(code)
        entry: dict = {"id": code}
        if rule is not None:
            entry["name"] = rule.name
            entry["shortDescription"] = {"text": rule.message}
            entry["fullDescription"] = {"text": rule.documentation() or rule.message}
            if rule.gb_id:
                entry["helpUri"] = graph_break_url(rule.gb_id)
            entry["properties"] = {"kind": rule.kind}
        rules.append(entry)
    index = {code: i for i, code in enumerate(codes)}
    results = []
    for d in diagnostics:
        location = _artifact_location(d.path)
        result: dict = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": "warning" if d.kind == "perf" else "error",
            "message": {"text": d.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": location,
                    "region": {
                        "startLine": d.line, "startColumn": d.column,
                        "endLine": d.end_line, "endColumn": d.end_column,
                    },
                }
            }],
        }
        related = [(f"reached from {function}", path, line) for path, line, function in d.reached_from]
        if d.inside is not None:
            inside = d.inside
            related.append((f"breaks inside {inside.package} {inside.version}: {inside.code} in {inside.function}: "
                            f"{inside.message}", inside.path, inside.line))
        if related:
            result["relatedLocations"] = [{
                "id": number,
                "message": {"text": text},
                "physicalLocation": {
                    "artifactLocation": _artifact_location(path),
                    "region": {"startLine": line},
                },
            } for number, (text, path, line) in enumerate(related)]
        if d.observed is not None:
            _add_observed(result, d)
        if d.fix is not None:
            result["fixes"] = [{
                "description": {"text": d.fix.message},
                "artifactChanges": [{
                    "artifactLocation": location,
                    "replacements": [{
                        "deletedRegion": {
                            "startLine": e.line, "startColumn": e.column,
                            "endLine": e.end_line, "endColumn": e.end_column,
                        },
                        "insertedContent": {"text": e.content},
                    } for e in d.fix.edits],
                }],
            }]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "compile-lint",
                "version": __version__,
                # No informationUri: SARIF wants an absolute URI there and compile-lint
                # has no public page to name; each rule's fullDescription is its docs.
                "rules": rules,
            }},
            "originalUriBaseIds": {SRCROOT: {"uri": pathlib.Path.cwd().as_uri().rstrip("/") + "/"}},
            "results": results,
        }],
    }
    return json.dumps(log, indent=2) + "\n"


REPORTERS: dict[str, Callable[[Sequence[Diagnostic], dict[str, str]], str]] = {
    "text": format_text,
    "concise": format_concise,
    "json": format_json,
    "json-lines": format_json_lines,
    "github": format_github,
    "sarif": format_sarif,
    "full": format_full,
    "junit": format_junit,
    "gitlab": format_gitlab,
    "pylint": format_pylint,
    "rdjson": format_rdjson,
    "azure": format_azure,
}


def render(fmt: str, diagnostics: Sequence[Diagnostic], sources: Optional[dict[str, str]] = None) -> str:
    """Render findings in one of FORMATS."""
    return REPORTERS[fmt](diagnostics, sources or {})

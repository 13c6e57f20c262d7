"""Breaks inside installed libraries, reported at the user's call that leads there.

The project index follows traced calls into installed libraries (analysis/project/
library_reach.py) and gives each project file its calls into them (`FileReach.
library_calls`), each with the library functions it reaches. Here the library files those
functions are in are linted with the same rules (`lint_library`, the engine's one parse and
walk: only the reached functions are regions, and only findings inside them count), once
per process, and each break found is reported where the user can act: at the call in the
user's file, one finding per (call, code), naming the first site inside (the one the
fewest library calls lead to) and how many there are, with what the user can do.

The library's own findings (at their place in the library file, marked as the library's)
are what `--show-library-findings` lists (`library_sites`). The files a lint reads this way
are recorded as its dependencies, so the lint cache re-lints a file when a library it
calls into changes.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Callable, Iterable, Optional

from compile_lint.analysis.project.library_reach import LibraryCall, LibraryFunction
from compile_lint.analysis.project.reach import FileReach
from compile_lint.analysis.project.symbols import SymbolIndex
from compile_lint.core.diagnostics import Diagnostic, InLibrary, Inside, split_message
from compile_lint.settings.config import Config
from compile_lint.storage.stamps import file_stamp

# Lints one library file (absolute path) with its reach: its findings, at their place in it.
LibraryLinter = Callable[[str, FileReach], list[Diagnostic]]

_LINTED: dict[tuple, tuple[Diagnostic, ...]] = {}
_REACHED_SUFFIX = re.compile(r" \(reached from [^()]*\)$")


def library_findings(reach: FileReach, config: Config, lint_library: LibraryLinter,
                     symbols: Optional[SymbolIndex] = None) -> list[tuple[LibraryCall, LibraryFunction, Diagnostic]]:
    """Every finding inside the library functions the file's calls reach: (the call, the reached
    function that holds it, the finding in the library file), in the calls' order."""
    found = []
    project = reach.project
    for call in reach.library_calls:
        by_file: dict[str, list[LibraryFunction]] = {}
        for function in call.reached:
            by_file.setdefault(function.path, []).append(function)
        for path, functions in by_file.items():
            if symbols is not None:
                symbols.record_read(reach.path, path)
            for diagnostic in _linted(path, config, project, lint_library):
                holder = _innermost(functions, diagnostic.line)
                if holder is not None:
                    found.append((call, holder, diagnostic))
    return found


def _linted(path: str, config: Config, project: object, lint_library: LibraryLinter) -> tuple[Diagnostic, ...]:
    """The findings of library file `path` in what the project reaches of it, once per process while unchanged."""
    if project is None:
        return ()
    file_reach = project.for_file(path)  # type: ignore[attr-defined]
    key = (path, file_stamp(path), config, file_reach.digest)
    known = _LINTED.get(key)
    if known is None:
        try:
            known = tuple(lint_library(path, file_reach))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            known = ()  # a library file compile-lint cannot read or parse breaks nothing it can name
        _LINTED[key] = known
    return known


def _innermost(functions: Iterable[LibraryFunction], line: int) -> Optional[LibraryFunction]:
    holders = [function for function in functions if function.first_line <= line <= function.end_line]
    return min(holders, key=lambda function: (function.end_line - function.first_line, function.qualname),
               default=None)


def call_site_findings(path: str, text: str, reach: FileReach, config: Config, lint_library: LibraryLinter,
                       symbols: Optional[SymbolIndex] = None,
                       shown: Callable[[str], str] = os.path.relpath) -> list[Diagnostic]:
    """One break-kind finding per (traced call of `path` into a library, code), at the call.

    A call in a function that another file's traced code reaches has that chain in
    `reached_from` (each link's path spelled by `shown`), as a finding of the file's own has.
    """
    if not reach.library_calls:
        return []
    groups: dict[tuple[LibraryCall, str], list[tuple[LibraryFunction, Diagnostic]]] = {}
    for call, function, diagnostic in library_findings(reach, config, lint_library, symbols):
        if diagnostic.kind == "break":
            groups.setdefault((call, diagnostic.code), []).append((function, diagnostic))
    lines = text.splitlines()
    findings = []
    for (call, code), sites in groups.items():
        function, first = min(sites, key=lambda site: (len(site[0].via), site[0].shown_path, site[1].line))
        count = len({(site.path, site.line) for _, site in sites})
        inside = Inside(first.path, function.shown_path, first.line, function.qualname, code,
                        _own_message(first.message), function.package, function.version, function.via, count)
        line, column, end_column = _call_span(lines, call)
        message = _message(call, inside)
        findings.append(Diagnostic(
            path=path, line=line, column=column, end_line=line, end_column=end_column,
            code=code, name=first.name, kind=first.kind, message=message, help=split_message(message)[1],
            gb_type=first.gb_type, gb_id=first.gb_id, mode=first.mode, condition=first.condition,
            reached_from=_caller_chain(reach, call, shown), inside=inside))
    return findings


def _caller_chain(reach: FileReach, call: LibraryCall, shown: Callable[[str], str]) -> tuple[tuple[str, int, str], ...]:
    """How another file's traced code reaches the calling function (empty when the file's own code does)."""
    record = reach.functions.get(call.function)
    chain = record.chain if record is not None else ()
    if not chain or os.path.abspath(chain[0].path) == os.path.abspath(reach.path):
        return ()
    return tuple((shown(link.path), link.line, link.function) for link in chain)


def _own_message(message: str) -> str:
    """A library finding's message without the chain that reaches it (the user's finding names that)."""
    return _REACHED_SUFFIX.sub("", message)


def _call_span(lines: list[str], call: LibraryCall) -> tuple[int, int, int]:
    """(line, column, end column), 1-based, of the callee's name in the call's line (the line's text when not found)."""
    text = lines[call.line - 1] if 0 < call.line <= len(lines) else ""
    start = text.find(call.callee + "(")
    if start < 0:
        start = text.find(call.callee)
    if start >= 0:
        return call.line, start + 1, start + len(call.callee) + 1
    stripped = len(text) - len(text.lstrip())
    return call.line, stripped + 1, max(len(text), stripped) + 1


# A Dynamo setting a library finding's own message tells to set (its fix, or its step by hand).
_SETTING_LINE = re.compile(r"`(torch\._dynamo\.config\.\w+(?: = True|\.add\([\w.]+\)))`")


def _message(call: LibraryCall, inside: Inside) -> str:
    """"`solve` breaks the graph inside somelib 1.2, at somelib/steps.py:270 in `_step`: WHAT; not your
    code: what you can do".

    Only what the user controls is offered: the Dynamo setting the library's own finding names
    (where its rule found the setting removes the break: fixes/settings.py, calibrated), and
    running the call eagerly. No option of the library is named: compile-lint does not know
    the library's options.
    """
    more = f" ({inside.count - 1} more {inside.code} site{'s' if inside.count > 2 else ''} inside)" \
        if inside.count > 1 else ""
    what, advice = split_message(inside.message)
    setting = _SETTING_LINE.search(advice or "")
    options = [f"set `{setting.group(1)}` before compiling"] if setting else []
    options.append("run the call eagerly with `torch.compiler.disable` (one break at the call instead)")
    return (f"`{call.callee}` breaks the graph inside {inside.package} {inside.version}, at "
            f"{inside.package_path}:{inside.line} in `{inside.function}`: {what}{more}; not your code: "
            f"{' or '.join(options)}")


def library_sites(reaches: Iterable[FileReach], config: Config, lint_library: LibraryLinter,
                  shown: Callable[[str], str] = os.path.relpath) -> list[Diagnostic]:
    """The findings inside libraries that the files' calls reach, at their place in the library file,
    each marked as the library's and naming the user's calls that reach it (`--show-library-findings`).
    `shown` spells a project file in the calls' links."""
    calls: dict[tuple, list[tuple[str, int, str]]] = {}
    first: dict[tuple, tuple[LibraryFunction, Diagnostic]] = {}
    for reach in reaches:
        for call, function, diagnostic in library_findings(reach, config, lint_library):
            key = (diagnostic.path, diagnostic.line, diagnostic.column, diagnostic.code)
            link = (shown(reach.path), call.line, call.function)
            if link not in calls.setdefault(key, []):
                calls[key].append(link)
            first.setdefault(key, (function, diagnostic))
    found = []
    for key, (function, diagnostic) in first.items():
        called_from = tuple(sorted(calls[key]))
        path, line, caller = called_from[0]
        message = (f"{_own_message(diagnostic.message)} (in {function.package} {function.version}, not your code: "
                   f"reached from your call at {path}:{line} in {caller})")
        found.append(replace(diagnostic, message=message, reached_from=(), fix=None,
                             library=InLibrary(function.package, function.version, called_from)))
    return sorted(found, key=Diagnostic.sort_key)

"""Apply fixes to a fixed point and write files atomically; never leave a broken file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import libcst as cst

from compile_lint.fixes.edits import apply_fixes
from compile_lint.settings.config import Config
from compile_lint.core.diagnostics import Diagnostic
from compile_lint.engine.lint import lint_text
from compile_lint.engine.source import SourceError, SourceFile, read_source, write_atomically

MAX_ROUNDS = 10


@dataclass
class FixOutcome:
    """The result of fixing one file's text."""

    text: str
    applied: list[Diagnostic] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def changed(self) -> bool:
        """True when at least one fix was applied."""
        return bool(self.applied)


def is_applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    """Whether `diagnostic`'s fix may be applied under the current flags."""
    fix = diagnostic.fix
    return fix is not None and (fix.applicability == "safe" or unsafe)


def fix_text(text: str, path: str, config: Config, unsafe: bool = False) -> FixOutcome:
    """Lint and fix `text` repeatedly until nothing fixable is left (at most MAX_ROUNDS).

    Each round applies the non-overlapping fixes, checks that the result parses and
    re-lints it. A file that does not converge, or any failure, yields the original text
    and an error.
    """
    original = text
    applied: list[Diagnostic] = []
    try:
        for _ in range(MAX_ROUNDS):
            diagnostics = lint_text(text, path, config)
            fixable = [d for d in diagnostics if is_applicable(d, unsafe)]
            if not fixable:
                return FixOutcome(text, applied, diagnostics)
            new_text, used = apply_fixes(text, [d.fix for d in fixable])  # type: ignore[misc]
            if new_text == text:
                return FixOutcome(text, applied, diagnostics)
            cst.parse_module(new_text)  # a fix that breaks the file is a bug: refuse it
            used_ids = {id(fix) for fix in used}
            applied.extend(d for d in fixable if id(d.fix) in used_ids)
            text = new_text
    except Exception as error:  # noqa: BLE001 - any failure leaves the file as it was
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        return FixOutcome(original, [], lint_text(original, path, config), f"{path}: fix failed, file left unchanged: {reason}")
    return FixOutcome(original, [], lint_text(original, path, config),
                      f"{path}: fixes did not converge after {MAX_ROUNDS} rounds, file left unchanged")


@dataclass
class FileFix:
    """What --fix did (or would do, with --diff) to one file."""

    path: str
    original: str = ""
    outcome: Optional[FixOutcome] = None
    error: Optional[str] = None
    written: bool = False
    write_failed: bool = False  # fixed, but writing the fixed text failed (the file is unchanged)
    rolled_back: Optional[str] = None  # why `accept_all` refused the fixes (the file is unchanged)


# Asked once for many files: {path: (original, fixed)} -> {path: None to write, else why not}.
AcceptAll = Callable[[dict[str, tuple[str, str]]], dict[str, Optional[str]]]


@dataclass
class _Planned:
    """A file read and fixed in memory, not yet written."""

    path: str
    source: SourceFile
    outcome: FixOutcome


def _plan(path: str, config: Config, unsafe: bool) -> "_Planned | FileFix":
    try:
        source = read_source(path)
    except SourceError as error:
        return FileFix(path=path, error=f"{path}: {error}")
    return _Planned(path, source, fix_text(source.text, path, config, unsafe))


def _finish(planned: _Planned, config: Config, write: bool, rejection: Optional[str]) -> FileFix:
    """Write the planned fix unless it was rejected (then the file is not touched)."""
    path, source, outcome = planned.path, planned.source, planned.outcome
    if rejection is not None:
        # Not an error: the file is left as it was, and its findings are reported as found.
        outcome = FixOutcome(source.text, [], lint_text(source.text, path, config))
    result = FileFix(path=path, original=source.text, outcome=outcome, error=outcome.error, rolled_back=rejection)
    if write and outcome.changed:
        try:
            write_atomically(path, source.encode(outcome.text))
            result.written = True
        except (OSError, UnicodeError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            result.error = f"{path}: cannot write fixed file, left unchanged: {reason}"
            result.write_failed = True
            result.outcome = FixOutcome(source.text, [], outcome.remaining + outcome.applied)
    return result


def _proposed(planned: _Planned) -> bool:
    return planned.outcome.changed and planned.outcome.error is None


def fix_file(path: str, config: Config, unsafe: bool = False, write: bool = True) -> FileFix:
    """Fix one file; write it atomically (same encoding, BOM and newlines) when it changed."""
    planned = _plan(path, config, unsafe)
    if isinstance(planned, FileFix):
        return planned
    return _finish(planned, config, write, None)


def fix_files_together(paths: Sequence[str], config: Config, accept_all: AcceptAll, unsafe: bool = False,
                       write: bool = True) -> list[FileFix]:
    """Fix every file in memory, ask `accept_all` once about all the changed ones (e.g. the
    runtime verifier, which then runs each target once for all of them), then write the
    accepted files atomically; a rejected file is not touched. In the order of `paths`."""
    planned = [_plan(path, config, unsafe) for path in paths]
    proposals = {item.path: (item.source.text, item.outcome.text)
                 for item in planned if isinstance(item, _Planned) and _proposed(item)}
    rejections = accept_all(proposals) if proposals else {}
    return [item if isinstance(item, FileFix) else _finish(item, config, write, rejections.get(item.path))
            for item in planned]

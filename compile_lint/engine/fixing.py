"""The fix-point loop: apply fixes, re-lint, repeat; write files atomically; never leave a broken file.

Light to import: the linter (libcst, every rule) is loaded on the first fix, so a run
answered from the lint cache never loads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from compile_lint.core.diagnostics import Diagnostic
from compile_lint.core.results import LintResult
from compile_lint.engine.project import ProjectIndex
from compile_lint.engine.source import SourceError, SourceFile, read_source
from compile_lint.fixes.edits import apply_fixes
from compile_lint.settings.config import Config
from compile_lint.storage.atomic import rewrite_file

MAX_ROUNDS = 10
# Asked once for many files: {path: (original, fixed)} -> {path: None to write, else why not}.
AcceptAll = Callable[[dict[str, tuple[str, str]]], dict[str, Optional[str]]]


def is_applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    """Whether `diagnostic`'s fix may be applied under the current flags."""
    fix = diagnostic.fix
    return fix is not None and (fix.applicability == "safe" or unsafe)


def _lint(text: str, path: str, config: Config, project: Optional[ProjectIndex]) -> list[Diagnostic]:
    from compile_lint.engine.lint import lint_text

    return lint_text(text, path, config, project=project)


def fix_text(text: str, path: str, config: Config, unsafe: bool = False,
             project: Optional[ProjectIndex] = None) -> LintResult:
    """Lint and fix `text` repeatedly until nothing fixable is left (at most MAX_ROUNDS).

    Each round applies the non-overlapping fixes, checks that the result parses and
    re-lints it. A file that does not converge, or any failure, yields the original text
    and an error. `project` is what each lint reads beside the text (see `lint_text`).
    The result's `text` is the fixed text, `applied` the fixes made, `diagnostics` what is left.
    """
    import libcst as cst

    original = text
    applied: list[Diagnostic] = []
    try:
        for _ in range(MAX_ROUNDS):
            diagnostics = _lint(text, path, config, project)
            fixable = [d for d in diagnostics if is_applicable(d, unsafe)]
            if not fixable:
                return LintResult(path, diagnostics, text=text, applied=applied, original=original)
            new_text, used = apply_fixes(text, [d.fix for d in fixable])  # type: ignore[misc]
            if new_text == text:
                return LintResult(path, diagnostics, text=text, applied=applied, original=original)
            cst.parse_module(new_text)  # a fix that breaks the file is a bug: refuse it
            used_ids = {id(fix) for fix in used}
            applied.extend(d for d in fixable if id(d.fix) in used_ids)
            text = new_text
    except Exception as error:  # noqa: BLE001 - any failure leaves the file as it was
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        return _unchanged(original, path, config, project, f"{path}: fix failed, file left unchanged: {reason}")
    return _unchanged(original, path, config, project,
                      f"{path}: fixes did not converge after {MAX_ROUNDS} rounds, file left unchanged")


def _unchanged(text: str, path: str, config: Config, project: Optional[ProjectIndex], why: str) -> LintResult:
    """The result of a fix that failed for `why` (an error): the text as it was, and its findings."""
    return LintResult(path, _lint(text, path, config, project), why, text=text, original=text)


def _rolled_back(text: str, path: str, config: Config, project: Optional[ProjectIndex], why: str) -> LintResult:
    """The result of fixes `--fix --verify` rolled back for `why`: the text as it was, and its findings.

    Not an error: the file is left as it was, and its findings are reported as found.
    """
    return LintResult(path, _lint(text, path, config, project), text=text, original=text, rolled_back=why)


@dataclass
class _Planned:
    """A file read and fixed in memory, not yet written."""

    source: SourceFile
    result: LintResult


def _plan(path: str, config: Config, unsafe: bool, project: Optional[ProjectIndex]) -> "_Planned | LintResult":
    try:
        source = read_source(path)
    except SourceError as error:
        return LintResult(path, error=f"{path}: {error}")
    return _Planned(source, fix_text(source.text, path, config, unsafe, project))


def _finish(planned: _Planned, config: Config, write: bool, rejection: Optional[str],
            project: Optional[ProjectIndex]) -> LintResult:
    """Write the planned fix unless it was rejected (then the file is not touched)."""
    source, result = planned.source, planned.result
    path = result.path
    if rejection is not None:
        result = _rolled_back(source.text, path, config, project, rejection)
    if write and result.changed:
        try:
            rewrite_file(path, source.encode(result.text))
            result.written = True
        except (OSError, UnicodeError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            result = LintResult(path, result.diagnostics + result.applied,
                                f"{path}: cannot write fixed file, left unchanged: {reason}",
                                text=source.text, original=source.text, unwritten=True)
    return result


def _proposed(planned: _Planned) -> bool:
    return planned.result.changed and planned.result.error is None


def fix_file(path: str, config: Config, unsafe: bool = False, write: bool = True,
             project: Optional[ProjectIndex] = None) -> LintResult:
    """Fix one file; write it atomically (same encoding, BOM and newlines) when it changed."""
    planned = _plan(path, config, unsafe, project)
    if isinstance(planned, LintResult):
        return planned
    return _finish(planned, config, write, None, project)


def fix_files_together(paths: Sequence[str], config: Config, accept_all: AcceptAll, unsafe: bool = False,
                       write: bool = True, project: Optional[ProjectIndex] = None) -> list[LintResult]:
    """Fix every file in memory, ask `accept_all` once about all the changed ones (e.g. the
    runtime verifier, which then runs each target once for all of them), then write the
    accepted files atomically; a rejected file is not touched. In the order of `paths`."""
    planned = [_plan(path, config, unsafe, project) for path in paths]
    proposals = {item.result.path: (item.source.text, item.result.text)
                 for item in planned if isinstance(item, _Planned) and _proposed(item)}
    rejections = accept_all(proposals) if proposals else {}
    return [item if isinstance(item, LintResult) else _finish(item, config, write, rejections.get(item.result.path),
                                                                project)
            for item in planned]

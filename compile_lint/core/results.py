"""What linting or fixing one file produced: the one result type the engine hands every frontend."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from compile_lint.core.diagnostics import Diagnostic


@dataclass
class LintResult:
    """What linting, fixing or `--add-noqa` did to one file.

    `diagnostics` are the findings left in the file; `error`, a one-line reason the file
    could not be read, linted or fixed; `text`, the file's text (after fixing); `dependencies`,
    the other files the findings were computed from (the cache keys on their bytes too);
    `digest`, the content digest the cache keys on; `malformed_noqa`, the `# noqa`
    directives that suppress nothing, and why. A fix fills `applied` (the fixes made) and
    `original` (the text before them, for `--diff`), `written` when the fixed text was
    written back and `unwritten` when it could not be; `rolled_back` says why `--fix
    --verify` refused the file's fixes (the file is unchanged; not an error). `--add-noqa`
    fills `applied` with the findings it silenced and `noqa_skipped` with those it could
    not, and why. `called_modules` are the top-level modules the file's traced code calls
    through an absolute import, each with its first call's line (a lint with the project's
    reach fills it; engine/called_modules.py).
    """

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: Optional[str] = None
    text: str = ""
    dependencies: tuple[str, ...] = ()
    digest: Optional[str] = None
    applied: list[Diagnostic] = field(default_factory=list)
    original: str = ""
    written: bool = False  # the fixed text was written back
    unwritten: bool = False  # fixed, but the fixed text could not be written back
    rolled_back: Optional[str] = None  # --fix --verify refused the fixes: why (the file is unchanged)
    malformed_noqa: list[tuple[int, str]] = field(default_factory=list)  # (line, why): each suppresses nothing
    noqa_skipped: list[tuple[Diagnostic, str]] = field(default_factory=list)  # (finding, why it got no noqa comment)
    called_modules: tuple[tuple[str, int], ...] = ()  # (module, line)

    @property
    def changed(self) -> bool:
        """True when at least one fix (or `# noqa`) was applied."""
        return bool(self.applied)


class LintCancelled(Exception):
    """A lint stopped because its host no longer wants the result (a newer version of the text arrived)."""

"""The entry point: lint (or fix) source text, a file or paths, and get `LintResult`s.

The CLI, the language server, the flake8 plugin, `--add-noqa`, the fix loop, the verifier
and the benchmarks all lint through here:

    from compile_lint.engine.api import ProjectIndex, RunOptions, lint_paths, lint_source
    from compile_lint.settings.config import Config

    config = Config(select=("ALL",))
    for result in lint_paths(["src/"], config, RunOptions(project=ProjectIndex(), jobs=4)):
        for diagnostic in result.diagnostics:
            print(diagnostic.path, diagnostic.line, diagnostic.code, diagnostic.message)

What a lint reads is what it is given: a text or a file, and, lazily, the files its
imports name (base classes, helpers); the whole project the file belongs to only with a
`ProjectIndex` (`project=`), to lint what the project's entry points reach in the file.

Importing this module does not load the linter (libcst, the rules): the first lint does,
so a run answered from the lint cache never pays for it.
"""

from __future__ import annotations

from compile_lint.analysis.project.entry_points import EntryPointError
from compile_lint.core.codes import SYNTAX_ERROR_CODE
from compile_lint.core.results import LintCancelled, LintResult
from compile_lint.engine.cache import cache_root
from compile_lint.engine.files import is_excluded
from compile_lint.engine.fixing import fix_file, fix_text, is_applicable
from compile_lint.engine.pipeline import (
    Fixing,
    RunOptions,
    called_modules_only,
    discover_files,
    library_results,
    lint_files,
    lint_paths,
    modules_not_found,
    prepare_project,
)
from compile_lint.engine.pool import Progress
from compile_lint.engine.project import ProjectIndex
from compile_lint.engine.single_file import dependencies, lint_file, lint_source
from compile_lint.engine.source import SourceError, SourceFile, decode_source
from compile_lint.engine.stopping import progress_note, stop_on_termination

__all__ = [
    "SYNTAX_ERROR_CODE", "EntryPointError", "Fixing", "LintCancelled", "LintResult", "Progress", "ProjectIndex",
    "RunOptions", "SourceError", "SourceFile", "cache_root", "called_modules_only", "decode_source", "dependencies",
    "discover_files", "modules_not_found",
    "fix_file", "fix_text", "is_applicable", "is_excluded", "library_results", "lint_file", "lint_files", "lint_paths",
    "lint_source", "prepare_project", "progress_note", "stop_on_termination",
]

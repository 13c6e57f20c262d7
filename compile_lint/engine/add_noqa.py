"""`--add-noqa`: silence every current finding of a file with `# noqa: CODE`, for adopting
compile-lint on a large code base and fixing the findings later.

The file is rewritten atomically in its own encoding (BOM and line endings kept), and only
after linting the new text proves the directives silence exactly the findings they were
added for: a file where that fails is left untouched and reported.
"""

from __future__ import annotations

import tokenize
from typing import Optional

from compile_lint.core.codes import SYNTAX_ERROR_CODE
from compile_lint.core.diagnostics import Diagnostic
from compile_lint.core.results import LintResult
from compile_lint.engine.project import ProjectIndex
from compile_lint.engine.single_file import lint_source
from compile_lint.engine.source import SourceError, read_source
from compile_lint.engine.suppressions import add_noqa
from compile_lint.settings.config import Config
from compile_lint.storage.atomic import rewrite_file


def _position(diagnostic: Diagnostic) -> tuple[int, int, str]:
    return diagnostic.line, diagnostic.column, diagnostic.code


def add_noqa_file(path: str, config: Config, project: Optional[ProjectIndex] = None) -> LintResult:
    """Add `# noqa` directives for every finding of one file and write it back.

    The result's `applied` are the findings now silenced, `noqa_skipped` those left as they
    are (and why), `error` a one-line reason the file was left alone.
    """
    try:
        source = read_source(path)
    except SourceError as error:
        return LintResult(path, error=f"{path}: {error}")
    findings = lint_source(source.text, path, config, project=project).diagnostics
    unparsable = [d for d in findings if d.code == SYNTAX_ERROR_CODE]
    if unparsable:
        return LintResult(path, noqa_skipped=[(d, "the file does not parse") for d in findings])
    if not findings:
        return LintResult(path)
    try:
        addition = add_noqa(source.text, findings)
    except (tokenize.TokenError, SyntaxError) as error:
        return LintResult(path, error=f"{path}: cannot tokenize ({error}); no `# noqa` added")
    if not addition.added:
        return LintResult(path, noqa_skipped=addition.skipped)
    left = {_position(d) for d in lint_source(addition.text, path, config, project=project).diagnostics}
    expected = {_position(d) for d, _ in addition.skipped}
    if left != expected:
        return LintResult(path, error=f"{path}: the added `# noqa` comments would not silence exactly the "
                                      "findings they are for; file left unchanged")
    try:
        rewrite_file(path, source.encode(addition.text))
    except OSError as error:
        return LintResult(path, error=f"{path}: cannot write: {error.strerror or error}")
    return LintResult(path, applied=addition.added, written=True, noqa_skipped=addition.skipped)

"""One text, or one file, linted into a `LintResult`: the step every frontend and the pipeline's workers share.

Light to import: the linter (libcst, every rule) is loaded on the first lint, so a run
answered from the lint cache never loads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from compile_lint.core.results import LintResult
from compile_lint.core.source_index import SourceIndex
from compile_lint.engine.project import ProjectIndex, symbol_index
from compile_lint.engine.source import SourceError, read_source
from compile_lint.engine.suppressions import malformed_noqa
from compile_lint.settings.config import Config

if TYPE_CHECKING:
    import libcst as cst

    from compile_lint.engine.positions import RenderCache


def dependencies(path: str, config: Config) -> tuple[str, ...]:
    """The other files the last lint of `path` read (its base classes and helpers), sorted."""
    return tuple(sorted(symbol_index(config).dependencies(path)))


def lint_source(
    text: str,
    path: str,
    config: Config,
    *,
    noqa: bool = True,
    fast: bool = True,
    parse: Optional[Callable[[str], "cst.Module"]] = None,
    prefilter: bool = True,
    cancelled: Optional[Callable[[], bool]] = None,
    render_cache: Optional["RenderCache"] = None,
    project: Optional[ProjectIndex] = None,
) -> LintResult:
    """Lint `text` as the file `path`: its findings (noqa-filtered, sorted) and the files they rest on.

    What it reads: `text`, and the files its imports name when a question needs them (base
    classes, helpers). With `project` (a `ProjectIndex`), also every file of the project
    `path` belongs to, once, to lint what the project's entry points reach in `path` (a
    helper only a `forward` in another file calls); without, nothing else.

    A syntax error is a JIT000 finding. `noqa=False` keeps findings on `# noqa` lines;
    `fast=False` parses and walks everything (the same findings, slower); `parse`,
    `prefilter`, `cancelled` and `render_cache` are for a host that lints one document
    over and over (see `engine.lint.lint_text`). The result also names the malformed
    `# noqa` directives, which suppress nothing.
    """
    from compile_lint.engine.lint import lint_text

    source = SourceIndex(text)
    diagnostics = lint_text(text, path, config, noqa, fast, parse=parse, prefilter=prefilter,
                            cancelled=cancelled, render_cache=render_cache, project=project, source=source)
    return LintResult(path, diagnostics, text=text, dependencies=dependencies(path, config),
                      malformed_noqa=[] if config.ignore_noqa else malformed_noqa(source))


def lint_file(path: str, config: Config, project: Optional[ProjectIndex] = None) -> LintResult:
    """Read, decode and lint one file (with `project`, as `lint_source`); I/O and decoding problems become `error`."""
    try:
        source = read_source(path)
    except SourceError as error:
        return LintResult(path, error=f"{path}: {error}")
    return lint_source(source.text, path, config, project=project)

"""The flake8 plugin: compile-lint's findings as flake8 errors (entry point `JIT`).

flake8 owns the parts it already does well: reading the file, `--select` / `--ignore`,
output formats. The plugin parses the lines flake8 hands it once with libcst and yields
every finding that compile-lint's own `# noqa` parser (suppressions.py) keeps, so a noqa
means the same here as in the CLI and the editor; flake8 then applies its own noqa on top
(it also reads a malformed `# noqa: foo` as a bare `# noqa`, for every plugin alike).
`--disable-noqa` turns both off. Rules that are off by default (perf hints, noisy rules) are
registered with flake8's `extend_default_ignore`, and the plugin runs them only when a
selector more specific than the bare `JIT` prefix asks for them (`--extend-select JIT8`,
`--select JIT801`), so `flake8 --select JIT` reports what `compile-lint` reports.
"""

from __future__ import annotations

import argparse
import functools
import os
from typing import Any, Iterator, Sequence

from compile_lint import __version__
from compile_lint.engine.api import SYNTAX_ERROR_CODE, ProjectIndex, lint_source
from compile_lint.engine.lint import may_hold_regions
from compile_lint.rules import ALL_RULES
from compile_lint.rules.base import CODE_PREFIX
from compile_lint.settings.config import Config, ConfigError, load_config

Flake8Error = tuple[int, int, str, type]


def default_off_codes() -> list[str]:
    """Codes of the rules users must opt into."""
    return [rule.code for rule in ALL_RULES if not rule.default_enabled]


def _our_selectors(values: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(code for code in (values or ()) if code.startswith(CODE_PREFIX))


def selection_from_flake8(select: Sequence[str] | None, extend_select: Sequence[str] | None) -> Config:
    """The compile-lint selection that flake8's `--select` / `--extend-select` imply.

    Every default-on rule runs (flake8 filters what it reports); an off-by-default rule
    runs only when a selector more specific than the prefix names it, as in compile-lint.
    """
    return Config(select=(CODE_PREFIX,), extend_select=_our_selectors(select) + _our_selectors(extend_select))


@functools.lru_cache(maxsize=64)
def _project_settings(directory: str) -> Config:
    """`module-bases`, `mode`, `entry-points`, `src` and the project root from the nearest `[tool.compile-lint]`.

    A broken config counts as none (the root is then `directory`).
    """
    try:
        config = load_config(start=directory)
    except ConfigError:
        return Config(root=directory)
    return Config(module_bases=config.module_bases, mode=config.mode, entry_points=config.entry_points,
                  src=config.src, root=config.root, source=config.source)


class CompileLintPlugin:
    """flake8 AST plugin: yields `(line, column, "JITnnn message", type)`; columns are 0-based."""

    name = "compile-lint"
    version = __version__
    _selection: Config = Config()
    _noqa: bool = True
    # What reaches each file from the rest of its project, as the CLI and the language server see it.
    project = ProjectIndex()

    def __init__(self, tree: Any, lines: Sequence[str], filename: str) -> None:
        # `tree` is flake8's ast; compile-lint needs libcst's tree, built from the same lines.
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        """Keep off-by-default rules out of flake8's default selection."""
        option_manager.extend_default_ignore(default_off_codes())

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        """Remember which off-by-default rules the user selected, and `--disable-noqa`."""
        cls._selection = selection_from_flake8(getattr(options, "select", None),
                                               getattr(options, "extend_select", None))
        cls._noqa = not getattr(options, "disable_noqa", False)

    def run(self) -> Iterator[Flake8Error]:
        """Lint the file flake8 read; a file that does not parse yields nothing (flake8 says E999)."""
        text = "".join(self.lines)
        stdin = self.filename in ("-", "stdin")
        directory = os.path.dirname(os.path.abspath(self.filename)) if not stdin else os.getcwd()
        project = _project_settings(directory)
        config = Config(
            select=self._selection.select,
            extend_select=self._selection.extend_select,
            module_bases=project.module_bases,
            mode=project.mode,
            entry_points=project.entry_points,
            src=project.src,
            root=project.root,
            source=project.source,
        )
        if not may_hold_regions(text) and (stdin or not self.project.reached(config, self.filename)):
            return  # most files in a flake8 run are not model code: skip the libcst parse
        for diagnostic in lint_source(text, self.filename, config, noqa=self._noqa, project=self.project).diagnostics:
            if diagnostic.code == SYNTAX_ERROR_CODE:
                continue
            yield diagnostic.line, diagnostic.column - 1, f"{diagnostic.code} {diagnostic.message}", type(self)

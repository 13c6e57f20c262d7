"""`compile-lint explain-log LOG...`: the graph breaks and recompiles of a real run, as findings.

No torch needed: the log is text (a TORCH_LOGS capture) or JSON lines (a TORCH_TRACE), and
the static rules run on the files the log points into, as the linter runs them.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import traceback
from typing import Callable, Sequence

from compile_lint.core.diagnostics import Diagnostic
from compile_lint.reporters.formats import FORMATS, render
from compile_lint.settings.config import Config, ConfigError, load_config
from compile_lint.verifier.runtime_log.findings import NO_STATIC_RULE, StaticFile, runtime_findings
from compile_lint.verifier.runtime_log.reading import LogError, read_logs
from compile_lint.verifier.runtime_log.sites import Grouping, Project, group_records

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
PROG = "compile-lint explain-log"


def build_parser() -> argparse.ArgumentParser:
    """Arguments of `compile-lint explain-log`."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Read the graph breaks and recompiles Dynamo logged in a real run and report each at your source "
            "line: the innermost frame of its stack in the project (a break inside an installed library is "
            "reported at your call into it, naming the library line). The same line and reason are one "
            "finding with a count. Each is joined with the static finding at that line and its fix, or says "
            f"'{NO_STATIC_RULE}'. Make the log with TORCH_LOGS=\"graph_breaks,recompiles\" python train.py "
            "2> run.log (other log lines around it are fine), or TORCH_TRACE=trace_dir python train.py."),
        epilog=("JIT900 is a graph break, JIT901 a recompile (recompiles on tensor sizes alone, automatic dynamic, "
                "are counted but not reported). Exit status: 0 nothing found, 1 findings, 2 a log that cannot be "
                "read or is malformed, a usage or internal error."),
    )
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="a TORCH_LOGS capture (a run's stderr), a TORCH_TRACE directory or file, or - for stdin")
    parser.add_argument("--project", action="append", metavar="DIR",
                        help="a directory of your code (repeatable): frames under it are yours, all others a "
                             "library's; default: the config file's directory, else the working directory")
    parser.add_argument("--output-format", choices=FORMATS, default="text", help="how to print findings")
    parser.add_argument("--config", metavar="PATH", help="a pyproject.toml or compile-lint.toml to use")
    parser.add_argument("--no-lint", action="store_true",
                        help="do not run the static rules on the files the log points into")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("-q", "--quiet", action="store_true", help="print the findings and nothing else")
    return parser


def _error(message: str) -> None:
    sys.stderr.write(f"{PROG}: error: {message}\n")


def static_lint(config: Config) -> Callable[[str], StaticFile]:
    """Lint a file the log points into with every rule, on and off by default, noqa or not:
    "no static rule" must mean that no rule flags the line."""
    from compile_lint.engine.api import ProjectIndex, lint_source
    from compile_lint.engine.source import SourceError, read_source

    everything = dataclasses.replace(config, select=("ALL",), extend_select=(), ignore=(), per_file_ignores=(),
                                     mode="both")
    # The project index makes a helper another file's forward calls traced code, as `check` does.
    project = ProjectIndex()

    def lint(path: str) -> StaticFile:
        try:
            source = read_source(path)
        except SourceError:
            return StaticFile()
        return StaticFile(lint_source(source.text, path, everything, noqa=False, project=project).diagnostics,
                          source.text)

    return lint


def _text_only(path: str) -> StaticFile:
    try:
        with open(path, encoding="utf-8") as handle:
            return StaticFile(text=handle.read())
    except (OSError, UnicodeError):
        return StaticFile()


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def summary_line(grouping: Grouping, diagnostics: Sequence[Diagnostic]) -> str:
    """What the log held and how much of it the static rules already flag."""
    logged = f"{_plural(grouping.breaks, 'graph break')} and {_plural(grouping.recompiles, 'recompile')} in the log"
    parts = [f"{logged}, at {_plural(len(diagnostics), 'site')}."] if diagnostics else [f"{logged}."]
    joined = sum(1 for d in diagnostics if d.observed and d.observed.static)
    outside = sum(1 for group in grouping.groups if not group.site.in_project)
    missing = len(diagnostics) - joined - outside
    if diagnostics:
        parts.append(f"{joined} with a static rule, {missing} {NO_STATIC_RULE}.")
    if outside:
        parts.append(f"{_plural(outside, 'site')} outside the project.")
    if grouping.sizes_only:
        parts.append(f"{_plural(grouping.sizes_only, 'recompile')} on tensor sizes alone (automatic dynamic) "
                     "not reported.")
    return " ".join(parts) + "\n"


def explain_log_main(argv: Sequence[str]) -> int:
    """Entry point of `compile-lint explain-log`."""
    args = build_parser().parse_args(list(argv))
    try:
        return _explain(args)
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as error:  # noqa: BLE001 - any bug here is an internal error, exit 2 as the linter's
        traceback.print_exc()
        _error(f"internal error: {type(error).__name__}: {error}")
        return EXIT_ERROR


def _explain(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config, start=".")
    except ConfigError as error:
        _error(str(error))
        return EXIT_ERROR
    roots = args.project or [config.root]
    missing = next((root for root in roots if not os.path.isdir(root)), None)
    if missing is not None:
        _error(f"--project {missing}: not a directory")
        return EXIT_ERROR
    try:
        records = read_logs(args.logs)
    except LogError as error:
        _error(str(error))
        return EXIT_ERROR
    grouping = group_records(records, Project(roots, config))
    diagnostics, sources = runtime_findings(grouping.groups, _text_only if args.no_lint else static_lint(config))
    sys.stdout.write(render(args.output_format, diagnostics, sources))
    if args.output_format in ("text", "concise", "full") and not args.quiet:
        sys.stdout.write(summary_line(grouping, diagnostics))
    if not records and not args.quiet:
        sys.stderr.write(f"{PROG}: warning: no graph break or recompile in {', '.join(args.logs)}: was the run "
                         "made with TORCH_LOGS=\"graph_breaks,recompiles\" or TORCH_TRACE=DIR?\n")
    return EXIT_FINDINGS if diagnostics and not args.exit_zero else EXIT_CLEAN

"""The `compile-lint` command line: the subcommands, and one run over the paths through the engine's pipeline.

The flags and the settings they make are in frontends/arguments.py, the combinations
refused up front in frontends/usage.py, what a run prints and its exit code in
frontends/report.py; discovery, reading, the cache, the project index, the pool of
workers, fixing and `--add-noqa` are the engine's (engine/api.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from typing import Optional, Sequence

from compile_lint.core.results import LintResult
from compile_lint.engine import api
from compile_lint.frontends.arguments import STDIN, build_parser, configure, reads_stdin
from compile_lint.frontends.progress import track
from compile_lint.frontends.report import (
    EXIT_CLEAN,
    EXIT_ERROR,
    emit,
    error,
    report,
    report_diff,
    warn,
)
from compile_lint.frontends.rule_command import print_explanations
from compile_lint.frontends.summary import plural
from compile_lint.frontends.usage import (
    explain_codes,
    output_file_problem,
    usage_problem,
    usage_warnings,
    verify_usage_error,
)
from compile_lint.settings.config import Config, ConfigError, describe_settings


def _explain_command(args: argparse.Namespace) -> int:
    """`--explain CODE... | ALL`: each code's documentation, separated by a blank line (JSON with json)."""
    codes, problem = explain_codes(args)
    if problem:
        error(problem)
        return EXIT_ERROR
    return print_explanations(codes, "json" if args.output_format == "json" else "text")


def _run_options(args: argparse.Namespace, config: Config) -> api.RunOptions:
    """How the engine runs: with the project's reach, cached unless --no-cache, in --jobs processes."""
    fixing = api.Fixing(unsafe=args.unsafe_fixes, write=not args.diff) if args.fix or args.diff else None
    return api.RunOptions(
        project=api.ProjectIndex(api.cache_root(config), keep=not args.no_cache),
        jobs=args.jobs or os.cpu_count() or 1, cache=not args.no_cache, fix=fixing, add_noqa=args.add_noqa,
        progress=track,
    )


def _fix_verified(files: Sequence[str], config: Config, options: api.RunOptions,
                  args: argparse.Namespace) -> list[LintResult]:
    """--fix --verify: every file fixed in memory, the fixes proven on the targets, the accepted ones written."""
    from compile_lint.verifier.fixproject import accept_all_hook
    from compile_lint.verifier.isolation import stop_on_termination
    from compile_lint.verifier.scratch import remove_stale

    remove_stale()  # what runs killed by SIGKILL left behind

    def progress(line: str) -> None:
        if not args.quiet:
            sys.stderr.write(line + "\n")

    # -j N given: N // 2 targets at once (two processes each); else one at a time, in order.
    accept_all = accept_all_hook(config.verify_targets, config.root, config.verify_mode, progress, args.jobs,
                                 args.verify_timeout, "inductor" if args.bench else None)
    assert options.fix is not None  # called for --fix --verify: the options fix
    options = dataclasses.replace(options, fix=dataclasses.replace(options.fix, accept_all=accept_all))
    # Each target runs once with all the fixes (a subprocess per side), and SIGTERM or SIGHUP
    # stops those subprocesses as Ctrl-C does; the fixes verified by then are written, then the
    # interruption goes on (exit 128 + signal, or 2 for Ctrl-C).
    with stop_on_termination():
        outcomes = api.lint_files(files, config, options)
    if accept_all.interrupted is not None:
        raise accept_all.interrupted
    return outcomes


def _check_stdin(args: argparse.Namespace, config: Config) -> int:
    """Lint (or fix) source read from stdin, named --stdin-filename; --fix writes the result to stdout."""
    name = args.stdin_filename or STDIN
    data = sys.stdin.buffer.read()
    if args.stdin_filename and config.force_exclude and api.is_excluded(name, config):
        if args.fix:
            sys.stdout.buffer.write(data)  # an excluded file passes through unchanged
        return EXIT_CLEAN
    try:
        source = api.decode_source(data, name)
    except api.SourceError as problem:
        error(f"{name}: {problem}")
        if args.fix:
            sys.stdout.buffer.write(data)  # never swallow the user's text
        return EXIT_ERROR
    project = api.ProjectIndex()  # what reaches the named file from its project, as for the file itself
    if not (args.fix or args.diff):
        text, code = report([api.lint_source(source.text, name, config, project=project)], [], [name], args)
        return emit(args, text, code)
    outcome = api.fix_text(source.text, name, config, unsafe=args.unsafe_fixes, project=project)
    errors = [outcome.error] if outcome.error else []
    for message in errors:
        error(message)
    if args.diff:
        text, code = report_diff([outcome], errors, args)
        return emit(args, text, code)
    sys.stdout.buffer.write(source.encode(outcome.text))
    sys.stdout.flush()
    # The fixed source owns stdout; what is left to report goes to stderr (or --output-file).
    text, code = report([outcome], errors, [name], args)
    if args.output_file is None:
        sys.stderr.write(text)
        return code
    return emit(args, text, code)


def _report_add_noqa(results: Sequence[LintResult], errors: list[str], args: argparse.Namespace) -> int:
    """`--add-noqa`'s lines; exit 0 as ruff does (the findings left as is are listed), 2 on an error."""
    errors.extend(result.error for result in results if result.error)
    for message in errors:
        error(message)
    skipped = sorted(((d, why) for result in results for d, why in result.noqa_skipped),
                     key=lambda item: item[0].sort_key())
    for d, why in skipped:
        sys.stderr.write(f"{d.path}:{d.line}:{d.column}: {d.code} no `# noqa` added: {why}\n")
    if not args.quiet:
        lines = sum(len({d.line for d in result.applied}) for result in results)
        added = sum(len(result.applied) for result in results)
        sys.stderr.write(f"Added `# noqa` for {plural(added, 'finding')} on {plural(lines, 'line')}."
                         + (f" {plural(len(skipped), 'finding')} left as is." if skipped else "") + "\n")
    return EXIT_ERROR if errors else EXIT_CLEAN


def _run(args: argparse.Namespace, config: Config, paths: list[str]) -> int:
    """One run over the paths (or stdin): discover, lint or fix, report."""
    if reads_stdin(args):
        return _check_stdin(args, config)
    files, errors = api.discover_files(paths, config)
    if not files and not errors and not args.quiet:
        warn("No Python files found under the given path(s)")  # ruff's words
    options = _run_options(args, config)
    try:
        api.prepare_project(files, config, options)  # its error before anything else is read
    except api.EntryPointError as problem:
        error(f"{config.source or 'config'}: {problem}")
        return EXIT_ERROR
    if args.add_noqa:
        return _report_add_noqa(api.lint_files(files, config, options), errors, args)
    outcomes = _fix_verified(files, config, options, args) if args.verify else api.lint_files(files, config, options)
    if options.fix is None:
        for outcome in outcomes:  # as ruff warns: such a directive suppresses nothing
            for line, why in outcome.malformed_noqa:
                warn(f"{outcome.path}:{line}: malformed # noqa ({why}): it suppresses nothing")
    errors.extend(outcome.error for outcome in outcomes if outcome.error)
    for message in errors:
        error(message)
    for outcome in outcomes:  # --fix --verify: the file is unchanged and its findings stay findings
        if outcome.rolled_back:
            warn(outcome.rolled_back)
    _library_notes(files, config, options, args)
    _modules_not_found(outcomes, config, args)
    if args.show_library_findings and options.fix is None and options.project is not None:
        outcomes = list(outcomes) + api.library_results(files, config, options.project)
    text, code = report_diff(outcomes, errors, args) if args.diff else report(outcomes, errors, files, args)
    return emit(args, text, code)


def _library_notes(files: Sequence[str], config: Config, options: api.RunOptions, args: argparse.Namespace) -> None:
    """One line per installed module without Python source that compiled code calls: its calls are not followed."""
    if args.quiet or options.project is None:
        return
    for module, path, line in options.project.library_notes(config, files):
        sys.stderr.write(f"compile-lint: note: {module} has no Python source (a C extension): the calls compiled "
                         f"code makes into it (first at {os.path.relpath(path)}:{line}) are not followed\n")


def _not_found_lines(outcomes: Sequence[LintResult], config: Config) -> list[str]:
    """One line per module compiled code calls that cannot be found: its reach stops there."""
    return [f"{module}: not found; add its folder to `src` (compiled code calls it at "
            f"{os.path.relpath(path)}:{line}; its code is not checked)"
            for module, path, line in api.modules_not_found(outcomes, config)]


def _modules_not_found(outcomes: Sequence[LintResult], config: Config, args: argparse.Namespace) -> None:
    """Warn, once per run, of each module compiled code calls that is nowhere to be found (not with -q)."""
    if not args.quiet:
        for line in _not_found_lines(outcomes, config):
            warn(line)


def _configure_and_run(args: argparse.Namespace, paths: list[str]) -> int:
    try:
        config = configure(args, paths)
    except ConfigError as problem:
        error(str(problem))
        return EXIT_ERROR
    return _run(args, config, paths)


def _show_settings(config: Config, args: argparse.Namespace, paths: list[str]) -> int:
    """The settings, the cache's place, and the modules compiled code calls that `src` does not find."""
    sys.stdout.write(describe_settings(config) + f"# cache: {api.cache_root(config)}\n")
    if not reads_stdin(args):
        files, _ = api.discover_files(paths, config)
        try:
            called = api.called_modules_only(files, config, _run_options(args, config))
        except api.EntryPointError:
            called = []  # the run itself says what is wrong with the entry points
        sys.stdout.write("".join(f"# {line}\n" for line in _not_found_lines(called, config)))
    return EXIT_CLEAN


def _show_files(config: Config, paths: list[str]) -> int:
    """`--show-files`: the files a run would lint, as absolute paths, sorted (ruff's listing); lints nothing."""
    files, errors = api.discover_files(paths, config)
    for message in errors:
        error(message)
    sys.stdout.write("".join(f"{path}\n" for path in sorted(os.path.abspath(path) for path in files)))
    return EXIT_ERROR if errors else EXIT_CLEAN


def check(argv: Sequence[str]) -> int:
    """`compile-lint [check] [PATHS...]`: lint, and with --fix/--diff, fix."""
    args = build_parser().parse_args(list(argv))
    if args.explain:
        return _explain_command(args)
    args.fix = args.fix or args.fix_only  # --fix-only fixes as --fix does, and reports less
    problem = usage_problem(args)
    if problem:
        error(problem)
        return EXIT_ERROR
    for warning in usage_warnings(args):
        warn(warning)
    unwritable = args.output_file is not None and output_file_problem(args.output_file)
    if unwritable:
        # Refused up front: --fix must not rewrite files whose report would then be lost.
        error(f"cannot write the report to {args.output_file}: {unwritable}; nothing was linted or fixed, "
              "the report was not written")
        return EXIT_ERROR
    paths = args.paths or ["."]
    try:
        config = configure(args, paths)
    except ConfigError as invalid:
        error(str(invalid))
        return EXIT_ERROR
    if args.show_settings:
        return _show_settings(config, args, paths)
    if args.show_files:
        return _show_files(config, paths)
    if args.verify:
        problem = verify_usage_error(args, config)
        if problem:
            error(problem)
            return EXIT_ERROR
    if args.watch:
        from compile_lint.frontends.watch import missing_dependency, watch

        problem = missing_dependency()
        if problem:
            error(problem)
            return EXIT_ERROR
        watched = paths + ([config.source] if config.source else [])
        return watch(lambda: _configure_and_run(args, paths), watched)
    # SIGTERM and SIGHUP stop the run as Ctrl-C does: the pool's workers end with it (main says how far it got).
    with api.stop_on_termination():
        return _run(args, config, paths)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the `compile-lint` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "verify":
            from compile_lint.verifier.cli import verify_main

            return verify_main(argv[1:])
        if argv and argv[0] == "explain-log":
            from compile_lint.verifier.runtime_log.command import explain_log_main

            return explain_log_main(argv[1:])
        if argv and argv[0] == "rule":
            from compile_lint.frontends.rule_command import rule_command

            return rule_command(argv[1:])
        if argv and argv[0] == "graph":
            from compile_lint.frontends.graph import graph_command

            return graph_command(argv[1:])
        if argv and argv[0] == "clean":
            from compile_lint.frontends.clean import clean_command

            return clean_command(argv[1:])
        if argv and argv[0] == "server":
            from compile_lint.frontends.server import serve

            return serve(argv[1:])
        if argv and argv[0] == "check":
            argv = argv[1:]
        return check(argv)
    except KeyboardInterrupt as interrupt:
        signum = getattr(interrupt, "signum", None)  # stopping.Terminated: SIGTERM or SIGHUP
        note = api.progress_note(interrupt)  # how far a lint or a fix got: "stopped while linting, ..."
        reason = f"terminated by {signal.Signals(signum).name}" if signum else "interrupted"
        error(f"{reason}: {note}" if note else reason)
        # 128 + the signal, as a shell reports a process that signal ended (143 for SIGTERM).
        return 128 + signum if signum else EXIT_ERROR
    except BrokenPipeError:
        return EXIT_ERROR

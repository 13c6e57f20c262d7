"""The `compile-lint` command line."""

from __future__ import annotations

import argparse
import difflib
import errno
import os
import re
import signal
import sys
from dataclasses import dataclass, replace
from typing import Optional, Sequence

from compile_lint import __version__
from compile_lint.settings.config import (
    MODES, Config, ConfigError, apply_overrides, describe_settings, load_config, validate_codes,
)
from compile_lint.core.diagnostics import Diagnostic
from compile_lint.core.results import LintResult
from compile_lint.engine.files import discover, is_excluded
from compile_lint.frontends.pool import by_size_descending, parallel_map
from compile_lint.frontends.summary import plural, statistics, summary
from compile_lint.reporters.formats import FORMATS, render

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SUBCOMMANDS = ("check", "verify", "explain-log", "clean", "server")
STDIN = "-"
# Formats a program reads: nothing but the report may be printed beside them.
MACHINE_FORMATS = ("json", "github", "sarif")


def _codes(values: Optional[list[str]]) -> Optional[tuple[str, ...]]:
    if values is None:
        return None
    return tuple(code.strip().upper() if code.strip().upper() != "ALL" else "ALL"
                 for value in values for code in value.split(",") if code.strip())


def _patterns(values: Optional[list[str]]) -> Optional[tuple[str, ...]]:
    if values is None:
        return None
    return tuple(pattern.strip() for value in values for pattern in value.split(",") if pattern.strip())


def _per_file_ignores(values: Optional[list[str]]) -> Optional[tuple[tuple[str, tuple[str, ...]], ...]]:
    """`PATTERN:CODES` items (flake8's and ruff's spelling); raises ConfigError on a malformed one."""
    if values is None:
        return None
    table = []
    for value in values:
        pattern, sep, codes = value.rpartition(":")
        parsed = _codes([codes])
        if not sep or not pattern.strip() or not parsed:
            raise ConfigError(f"--per-file-ignores '{value}': expected PATTERN:CODES, e.g. 'tests/*:JIT1,JIT2'")
        validate_codes(parsed, "command line")
        table.append((pattern.strip(), parsed))
    return tuple(table)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for `compile-lint [check] [PATHS...]`."""
    parser = argparse.ArgumentParser(
        prog="compile-lint",
        description=(
            "Find torch.compile graph breaks and recompiles before they cost you, and fix them, in everything "
            "torch.compile traces: forward, compiled functions and methods, torch.cond/checkpoint/vmap bodies, "
            "the entry-points setting, and what they reach in any file of the project (findings in a helper say "
            "'reached from FILE:LINE in FUNCTION'). "
            "Subcommands: `compile-lint verify TARGET...` proves findings on the real compiler; "
            "`compile-lint explain-log LOG` maps a run's logged graph breaks and recompiles to your lines; "
            "`compile-lint clean` removes the cache; `compile-lint server` runs the language server for editors."
        ),
    )
    parser.add_argument("paths", nargs="*", default=None, metavar="PATH",
                        help="files or directories to lint (default: .; symlinks to directories inside them are "
                             "not followed); - reads the source from stdin")
    parser.add_argument("--select", action="append", metavar="CODES",
                        help="comma-separated rule codes or prefixes to enable (replaces the config's)")
    parser.add_argument("--extend-select", action="append", metavar="CODES",
                        help="codes or prefixes to enable on top of the selection (e.g. JIT8 for perf hints)")
    parser.add_argument("--ignore", action="append", metavar="CODES", help="codes or prefixes to disable")
    parser.add_argument("--extend-ignore", action="append", metavar="CODES",
                        help="the same as --ignore (adds to the config's ignore list), as flake8 spells it")
    parser.add_argument("--per-file-ignores", action="append", metavar="PATTERN:CODES",
                        help="codes to ignore in files matching PATTERN, e.g. 'tests/*:JIT1' (replaces the config's)")
    parser.add_argument("--extend-per-file-ignores", action="append", metavar="PATTERN:CODES",
                        help="like --per-file-ignores, added to the config's")
    parser.add_argument("--exclude", action="append", metavar="PATTERNS",
                        help="comma-separated paths or globs to skip (replaces the config's and the defaults)")
    parser.add_argument("--extend-exclude", action="append", metavar="PATTERNS",
                        help="paths or globs to skip on top of the configured excludes")
    parser.add_argument("--force-exclude", action="store_true", default=None,
                        help="apply the excludes to files named on the command line too (pre-commit, editors)")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    parser.add_argument("--unsafe-fixes", action="store_true",
                        help="also apply unsafe fixes (e.g. torch.where evaluates both branches; "
                             "tensor-branch-fix in [tool.compile-lint] chooses torch.where or torch.cond)")
    parser.add_argument("--verify", action="store_true",
                        help="with --fix, prove the fixes on the [tool.compile-lint.verify] targets (needs torch): "
                             "a file whose fixes change outputs or do not reduce breaks/recompiles is rolled back. "
                             "Cost: each target runs once (original and fixed, 2 processes) with all files' fixes; "
                             "only a target that fails runs again, to bisect its files (about 2*log2(files) runs "
                             "for one bad file). SIGTERM or SIGHUP stops the targets' processes and exits 128+signal")
    parser.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    parser.add_argument("--add-noqa", action="store_true",
                        help="add `# noqa: CODE` comments that silence every current finding "
                             "(to adopt compile-lint on a large code base)")
    parser.add_argument("--show-fixes", action="store_true", help="with --fix, list the fixes applied")
    parser.add_argument("--output-format", choices=FORMATS, default="text", help="how to print findings")
    parser.add_argument("--output-file", metavar="PATH", help="write the report to PATH instead of stdout")
    parser.add_argument("--statistics", action="store_true",
                        help="print a count per rule instead of findings (a JSON array with --output-format json)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print the findings and nothing else (no summary)")
    parser.add_argument("--stdin-filename", metavar="PATH",
                        help="with -, the file name to report and to match config, excludes and per-file-ignores "
                             "against; --fix then prints the fixed source to stdout")
    parser.add_argument("--watch", action="store_true",
                        help="lint again whenever a Python file or the config changes (needs compile-lint[watch])")
    parser.add_argument("--explain", nargs="+", metavar="CODE",
                        help="explain rules (one or more codes): what breaks, why, examples; lints nothing")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--config", action="append", metavar="PATH | 'KEY = VALUE'",
                        help="a pyproject.toml or compile-lint.toml to use, or a TOML `key = value` that overrides "
                             "one setting (repeatable), e.g. --config 'extend-select = [\"JIT8\"]' or "
                             "--config 'entry-points = [\"pkg/run.py:Runner.step\"]'")
    parser.add_argument("--show-settings", action="store_true",
                        help="print the resolved settings and where each came from (default, file, command line)")
    parser.add_argument("--mode", choices=MODES, default=None,
                        help="how the model is compiled: drop findings that need the other mode "
                             "(code under `if self.training:` never runs in a compiled eval() model); default: both")
    parser.add_argument("--no-cache", action="store_true",
                        help="lint every file afresh; neither read nor write .compile-lint-cache/")
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help="processes to lint with (default: all cores)")
    parser.add_argument("--version", action="version", version=f"compile-lint {__version__}")
    return parser


def explain(code: str) -> Optional[str]:
    """The documentation of `code` (a rule, JIT000 or a verifier finding), or None if there is none."""
    from compile_lint.core.codes import OTHER_CODES_BY_CODE
    from compile_lint.reporters.docs import explain as render_explanation
    from compile_lint.reporters.docs import explain_other
    from compile_lint.rules import RULES_BY_CODE

    rule = RULES_BY_CODE.get(code.upper())
    if rule is not None:
        return render_explanation(rule)
    other = OTHER_CODES_BY_CODE.get(code.upper())
    return explain_other(other) if other is not None else None


@dataclass(frozen=True)
class FixJob:
    """One file to fix, and how."""

    path: str
    config: Config
    unsafe: bool
    write: bool


@dataclass(frozen=True)
class LintSettings:
    """What every file of one run is linted with; a worker receives it once, then only paths."""

    config: Config
    cache_root: Optional[str] = None  # write each file's findings to this cache, if set


def _lint_one(path: str, settings: LintSettings) -> LintResult:
    """Lint one file and cache its findings (in a worker process when there are many)."""
    from compile_lint.engine.api import lint_source, reach_digest
    from compile_lint.engine.suppressions import malformed_noqa
    from compile_lint.engine.cache import LintCache, content_digest
    from compile_lint.engine.source import SourceError, decode_source, read_bytes

    try:
        data = read_bytes(path)
        source = decode_source(data, path)
    except SourceError as error:
        return LintResult(path, error=f"{path}: {error}")
    result = lint_source(source.text, path, settings.config)
    result.digest = content_digest(path, data + reach_digest(settings.config, path).encode())
    result.malformed_noqa = malformed_noqa(source.text)
    if settings.cache_root is not None:
        LintCache.for_run(settings.cache_root, settings.config).put(path, result.digest, result.diagnostics,
                                                                    result.dependencies)
    if not result.diagnostics:
        result.text = ""  # the text is kept only for the report of a file with findings
    return result


def _fix_one(job: FixJob) -> LintResult:
    """Fix one file to a fixed point."""
    from compile_lint.fixes.apply import fix_file

    return _fix_result(fix_file(job.path, job.config, unsafe=job.unsafe, write=job.write))


def _fix_result(result) -> LintResult:
    """The LintResult of one file's FileFix."""
    outcome = result.outcome
    if outcome is None:
        return LintResult(result.path, error=result.error)
    return LintResult(result.path, outcome.remaining, result.error, text=outcome.text,
                      applied=outcome.applied, original=result.original, unwritten=result.write_failed)


def _lint_files(files: Sequence[str], config: Config, jobs: int, use_cache: bool) -> list[LintResult]:
    """The outcome for each file, in the order given, from the cache where it can."""
    from compile_lint.engine.project import reach_digest
    from compile_lint.engine.cache import LintCache, cache_root, content_digest
    from compile_lint.engine.source import SourceError, decode_source, read_bytes
    from compile_lint.engine.suppressions import malformed_noqa

    cache = LintCache.for_run(cache_root(config), config) if use_cache else None
    outcomes: list[LintResult] = []
    misses = []
    for path in files:
        if cache is None:
            misses.append(path)
            continue
        try:
            data = read_bytes(path)
        except SourceError:
            misses.append(path)
            continue
        cached = cache.get(path, content_digest(path, data + reach_digest(config, path).encode()))
        if cached is None:
            misses.append(path)
            continue
        text = ""
        if cached or b"noqa" in data.lower():  # the findings' text, or the directives to check
            try:
                text = decode_source(data, path).text
            except SourceError:
                misses.append(path)
                continue
        outcomes.append(LintResult(path, cached, text=text if cached else "",
                                   malformed_noqa=malformed_noqa(text)))
    settings = LintSettings(config, cache.root if cache is not None else None)
    outcomes.extend(parallel_map(_lint_one, by_size_descending(misses), jobs, shared=settings))
    order = {path: index for index, path in enumerate(files)}
    return sorted(outcomes, key=lambda outcome: order[outcome.path])


def _error(message: str) -> None:
    sys.stderr.write(f"compile-lint: error: {message}\n")


def _warn(message: str) -> None:
    sys.stderr.write(f"compile-lint: warning: {message}\n")


def _reads_stdin(args: argparse.Namespace) -> bool:
    return args.paths == [STDIN] or (not args.paths and args.stdin_filename is not None)


def _usage_problem(args: argparse.Namespace) -> Optional[str]:
    """Why the flags cannot be combined, or None: refused up front, never silently half-honoured."""
    machine = args.output_format in MACHINE_FORMATS
    if args.jobs is not None and args.jobs < 1:
        return "--jobs must be at least 1"
    if args.diff and machine:
        return f"--diff prints a unified diff, not findings: drop --output-format {args.output_format}"
    if args.statistics and args.output_format in ("github", "sarif"):
        return f"--statistics prints text or JSON: use --output-format text or json, not {args.output_format}"
    if STDIN in (args.paths or []) and args.paths != [STDIN]:
        return "- (stdin) cannot be combined with other paths"
    if args.stdin_filename is not None and args.paths and args.paths != [STDIN]:
        return "--stdin-filename names the source read from stdin: pass - (or no path) instead of paths"
    if _reads_stdin(args) and (args.watch or args.add_noqa or args.verify):
        flag = "--watch" if args.watch else "--add-noqa" if args.add_noqa else "--verify"
        return f"{flag} works on files, not on stdin"
    if args.add_noqa and (args.fix or args.diff or args.statistics):
        return "--add-noqa rewrites files on its own: drop --fix, --diff and --statistics"
    if args.statistics and args.diff:
        return "--statistics counts findings and --diff prints a diff: use one of them"
    return None


def _usage_warnings(args: argparse.Namespace) -> list[str]:
    """Flags that do nothing in this combination: the run goes on, and says so."""
    warnings = []
    if args.show_fixes and not args.fix:
        warnings.append("--show-fixes lists the fixes --fix applies: without --fix it shows nothing")
    return warnings


# Flags that do something other than explain: refused beside --explain.
EXPLAIN_EXCLUSIVE = ("fix", "diff", "add_noqa", "watch", "statistics", "show_settings")
CODE_SHAPE = re.compile(r"^[A-Za-z]+[0-9]+$")


def _explain_codes(args: argparse.Namespace) -> tuple[list[str], Optional[str]]:
    """The codes `--explain` was given (commas split), or why the command line is not only codes."""
    values = [code.strip() for value in args.explain for code in value.split(",") if code.strip()]
    not_codes = [value for value in values if not CODE_SHAPE.match(value)] + list(args.paths or ())
    if not_codes:
        return [], f"--explain explains rule codes and lints nothing: '{not_codes[0]}' is not a code (drop the paths)"
    flags = [f"--{name.replace('_', '-')}" for name in EXPLAIN_EXCLUSIVE if getattr(args, name)]
    if flags:
        return [], f"--explain explains rule codes and lints nothing: drop {', '.join(flags)}"
    return values, None


def _explain_command(args: argparse.Namespace) -> int:
    """`--explain CODE...`: each code's documentation, separated by a blank line."""
    codes, problem = _explain_codes(args)
    if problem:
        _error(problem)
        return EXIT_ERROR
    texts = []
    for code in codes:
        text = explain(code)
        if text is None:
            _error(f"unknown rule code '{code}'")
            return EXIT_ERROR
        texts.append(text)
    sys.stdout.write("\n".join(texts))
    return EXIT_CLEAN


def _config_start(args: argparse.Namespace, paths: list[str]) -> str:
    """Where to look for pyproject.toml: the stdin file's directory, a directory path, else here."""
    if _reads_stdin(args) and args.stdin_filename:
        return os.path.dirname(os.path.abspath(args.stdin_filename))
    return paths[0] if os.path.isdir(paths[0]) else "."


def _split_config_arguments(values: Optional[list[str]]) -> tuple[Optional[str], list[str]]:
    """`--config` values: at most one config file, and any number of inline `key = value` overrides."""
    files = [value for value in values or () if os.path.isfile(value) or "=" not in value]
    if len(files) > 1:
        raise ConfigError(f"--config: one config file at most, got {files[0]} and {files[1]}")
    return (files[0] if files else None), [value for value in values or () if value not in files]


def _refuse_empty_code_lists(args: argparse.Namespace) -> None:
    """An empty `--select ""` would select nothing and pass: a usage error, as in ruff."""
    for flag in ("select", "extend_select", "ignore", "extend_ignore"):
        for value in getattr(args, flag) or ():
            if not _codes([value]):
                raise ConfigError(f"--{flag.replace('_', '-')} '{value}': no rule code or prefix given "
                                  "(e.g. JIT1, JIT101, or ALL)")


def _configure(args: argparse.Namespace, paths: list[str]) -> Config:
    """Defaults, then the config file, then `--config` overrides, then flags; raises ConfigError."""
    _refuse_empty_code_lists(args)
    config_file, overrides = _split_config_arguments(args.config)
    config = apply_overrides(load_config(config_file, start=_config_start(args, paths)), overrides)
    if config.source is None:
        # No config file: patterns from the command line (and --config overrides) are relative
        # to the working directory, as in ruff, so that a path copied from the report matches.
        config = replace(config, patterns_root=os.path.abspath("."))
    select, extend = _codes(args.select), _codes(args.extend_select)
    ignore = _codes((args.ignore or []) + (args.extend_ignore or [])) if args.ignore or args.extend_ignore else None
    validate_codes((select or ()) + (extend or ()) + (ignore or ()), "command line")
    per_file = _per_file_ignores(args.per_file_ignores)
    extend_per_file = _per_file_ignores(args.extend_per_file_ignores)
    if extend_per_file:
        per_file = (config.per_file_ignores if per_file is None else per_file) + extend_per_file
    extend_exclude = _patterns(args.extend_exclude)
    return config.with_cli(
        select=select,
        extend_select=(config.extend_select + extend) if extend else None,
        ignore=(config.ignore + ignore) if ignore else None,
        per_file_ignores=per_file,
        exclude=_patterns(args.exclude),
        extend_exclude=(config.extend_exclude + extend_exclude) if extend_exclude else None,
        force_exclude=args.force_exclude,
        mode=args.mode,
    )


def _verify_usage_error(args: argparse.Namespace, config: Config) -> Optional[str]:
    """Why `--verify` cannot run as asked, or None."""
    import importlib.util

    if not args.fix:
        return "--verify needs --fix"
    if not config.verify_targets:
        return "--verify needs targets in [tool.compile-lint.verify] targets = [\"path.py:factory\"]"
    if importlib.util.find_spec("torch") is None:
        return "--verify needs torch: pip install 'compile-lint[verify]'"
    return None


def _fix_files(files: Sequence[str], config: Config, args: argparse.Namespace, jobs: int) -> list[LintResult]:
    if not args.verify:
        fix_jobs = [FixJob(f, config, args.unsafe_fixes, not args.diff) for f in files]
        return parallel_map(_fix_one, fix_jobs, jobs, "Fixing")
    from compile_lint.fixes.apply import fix_files_together
    from compile_lint.verifier.fixproject import accept_all_hook
    from compile_lint.verifier.isolation import stop_on_termination
    from compile_lint.verifier.scratch import remove_stale

    remove_stale()  # what runs killed by SIGKILL left behind

    def progress(line: str) -> None:
        if not args.quiet:
            sys.stderr.write(line + "\n")

    accept_all = accept_all_hook(config.verify_targets, config.root, config.verify_mode, progress)
    # Every file is fixed in memory first; then each target runs once with all the fixes (a
    # subprocess per side), and SIGTERM or SIGHUP stops those subprocesses as Ctrl-C does.
    with stop_on_termination():
        return [_fix_result(result) for result in
                fix_files_together(files, config, accept_all, unsafe=args.unsafe_fixes, write=not args.diff)]


def _unified_diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=path, tofile=path))


def _report_diff(outcomes: Sequence[LintResult], errors: Sequence[str], args: argparse.Namespace) -> tuple[str, int]:
    """What --fix would change, as a unified diff (written nowhere else), and the exit code."""
    fixed = sum(len(outcome.applied) for outcome in outcomes)
    diff = "".join(_unified_diff(o.path, o.original, o.text) for o in outcomes if o.applied)
    if not args.quiet:
        sys.stderr.write(f"Would fix {plural(fixed, 'finding')}.\n" if fixed else "No fixes available.\n")
    if errors:
        return diff, EXIT_ERROR
    return diff, EXIT_FINDINGS if fixed and not args.exit_zero else EXIT_CLEAN


def _report(
    outcomes: Sequence[LintResult], errors: Sequence[str], files: Sequence[str], args: argparse.Namespace
) -> tuple[str, int]:
    """The findings (or their statistics) and the summary, and the exit code."""
    diagnostics = sorted((d for outcome in outcomes for d in outcome.diagnostics), key=Diagnostic.sort_key)
    sources = {outcome.path: outcome.text for outcome in outcomes if outcome.diagnostics}
    fixed = sum(len(outcome.applied) for outcome in outcomes)
    report = []
    if args.show_fixes:
        listing = "".join(f"Fixed {o.path}:{d.line}:{d.column}: {d.code} {d.fix.message}\n"  # type: ignore[union-attr]
                          for o in outcomes for d in o.applied)
        if args.output_format in MACHINE_FORMATS:
            sys.stderr.write(listing)  # beside a machine-readable report: keep the report parseable
        else:
            report.append(listing)
    if args.statistics:
        report.append(statistics(diagnostics, args.output_format, args.unsafe_fixes))
    else:
        report.append(render(args.output_format, diagnostics, sources))
    text_format = args.output_format in ("text", "concise") and not args.statistics
    if text_format and not args.quiet and (files or not errors):
        unwritten = sum(1 for outcome in outcomes if outcome.unwritten)
        report.append(summary(diagnostics, len(files), fixed, args.unsafe_fixes, failed=len(errors),
                               unwritten=unwritten))
    if errors:
        return "".join(report), EXIT_ERROR
    if diagnostics and not args.exit_zero:
        return "".join(report), EXIT_FINDINGS
    return "".join(report), EXIT_CLEAN


def _emit(args: argparse.Namespace, text: str, code: int) -> int:
    """Write the report to stdout, or to --output-file (its directory made if needed); the exit code.

    A report that cannot be written is an error (exit 2) in one line that says it was lost.
    """
    if args.output_file is None:
        sys.stdout.write(text)
        return code
    try:
        os.makedirs(os.path.dirname(os.path.abspath(args.output_file)), exist_ok=True)
        with open(args.output_file, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        _error(f"cannot write the report to {args.output_file}: {error.strerror or error}; "
               "the report was not written")
        return EXIT_ERROR
    return code


def _output_file_problem(path: str) -> Optional[str]:
    """Why the report could not be written to `path`, or None: asked before anything is linted or fixed.

    Nothing is created here: the directories are made when the report is written.
    """
    target = os.path.abspath(path)
    if os.path.isdir(target):
        return os.strerror(errno.EISDIR)
    if os.path.exists(target):
        return None if os.access(target, os.W_OK) else os.strerror(errno.EACCES)
    parent = os.path.dirname(target)
    while not os.path.lexists(parent):  # directories that writing the report will make
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        return os.strerror(errno.ENOTDIR)
    return None if os.access(parent, os.W_OK | os.X_OK) else os.strerror(errno.EACCES)


def _check_stdin(args: argparse.Namespace, config: Config) -> int:
    """Lint (or fix) source read from stdin, named --stdin-filename; --fix writes the result to stdout."""
    from compile_lint.engine.api import lint_source
    from compile_lint.engine.source import SourceError, decode_source
    from compile_lint.fixes.apply import fix_text

    name = args.stdin_filename or STDIN
    data = sys.stdin.buffer.read()
    if args.stdin_filename and config.force_exclude and is_excluded(name, config):
        if args.fix:
            sys.stdout.buffer.write(data)  # an excluded file passes through unchanged
        return EXIT_CLEAN
    try:
        source = decode_source(data, name)
    except SourceError as error:
        _error(f"{name}: {error}")
        if args.fix:
            sys.stdout.buffer.write(data)  # never swallow the user's text
        return EXIT_ERROR
    if not (args.fix or args.diff):
        outcome = lint_source(source.text, name, config)
        report, code = _report([outcome], [], [name], args)
        return _emit(args, report, code)
    fixed = fix_text(source.text, name, config, unsafe=args.unsafe_fixes)
    outcome = LintResult(name, fixed.remaining, fixed.error, text=fixed.text, applied=fixed.applied,
                          original=source.text)
    errors = [fixed.error] if fixed.error else []
    for error in errors:
        _error(error)
    if args.diff:
        report, code = _report_diff([outcome], errors, args)
        return _emit(args, report, code)
    sys.stdout.buffer.write(source.encode(fixed.text))
    sys.stdout.flush()
    # The fixed source owns stdout; what is left to report goes to stderr (or --output-file).
    report, code = _report([outcome], errors, [name], args)
    if args.output_file is None:
        sys.stderr.write(report)
        return code
    return _emit(args, report, code)


def _add_noqa(files: Sequence[str], config: Config, errors: list[str], args: argparse.Namespace, jobs: int) -> int:
    """`--add-noqa`: a directive for every finding; exit 1 when some findings could not get one."""
    from compile_lint.frontends.add_noqa import add_noqa_file

    results = parallel_map(add_noqa_file, [(path, config) for path in files], jobs, "Adding noqa")
    errors.extend(result.error for result in results if result.error)
    for error in errors:
        _error(error)
    skipped = sorted(((d, why) for result in results for d, why in result.skipped), key=lambda item: item[0].sort_key())
    for d, why in skipped:
        sys.stderr.write(f"{d.path}:{d.line}:{d.column}: {d.code} no `# noqa` added: {why}\n")
    if not args.quiet:
        lines = sum(result.lines for result in results)
        added = sum(len(result.added) for result in results)
        sys.stderr.write(f"Added `# noqa` for {plural(added, 'finding')} on {plural(lines, 'line')}."
                         + (f" {plural(len(skipped), 'finding')} left as is." if skipped else "") + "\n")
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if skipped and not args.exit_zero else EXIT_CLEAN


def _run(args: argparse.Namespace, config: Config, paths: list[str]) -> int:
    """One run over the paths (or stdin): discover, lint or fix, report."""
    if _reads_stdin(args):
        return _check_stdin(args, config)
    errors: list[str] = []
    files = discover(paths, config, errors)
    if not files and not errors and not args.quiet:
        _warn("No Python files found under the given path(s)")  # ruff's words
    jobs = args.jobs or os.cpu_count() or 1
    problem = _prepare_project(files, config, args, jobs)
    if problem is not None:
        _error(problem)
        return EXIT_ERROR
    if args.add_noqa:
        return _add_noqa(files, config, errors, args, jobs)
    if args.fix or args.diff:
        outcomes = _fix_files(files, config, args, jobs)
    else:
        outcomes = _lint_files(files, config, jobs, use_cache=not args.no_cache)
        for outcome in outcomes:  # as ruff warns: such a directive suppresses nothing
            for line, why in outcome.malformed_noqa:
                _warn(f"{outcome.path}:{line}: malformed # noqa ({why}): it suppresses nothing")
    errors.extend(outcome.error for outcome in outcomes if outcome.error)
    for error in errors:
        _error(error)
    if args.diff:
        report, code = _report_diff(outcomes, errors, args)
    else:
        report, code = _report(outcomes, errors, files, args)
    return _emit(args, report, code)


def _prepare_project(files: Sequence[str], config: Config, args: argparse.Namespace, jobs: int) -> Optional[str]:
    """Build the project index of the files' projects once (in parallel for many files); an entry-points error."""
    from compile_lint.analysis.project.entry_points import EntryPointError
    from compile_lint.engine.project import prepare_project
    from compile_lint.engine.cache import cache_root

    cache_dir = None if args.no_cache else cache_root(config)

    def map_function(function, items):
        return parallel_map(function, list(items), jobs, description="Indexing")

    try:
        prepare_project(files, config, cache_dir, map_function)
    except EntryPointError as error:
        return f"{config.source or 'config'}: {error}"
    return None


def _configure_and_run(args: argparse.Namespace, paths: list[str]) -> int:
    try:
        config = _configure(args, paths)
    except ConfigError as error:
        _error(str(error))
        return EXIT_ERROR
    return _run(args, config, paths)


def _show_settings(config: Config) -> int:
    from compile_lint.engine.cache import cache_root

    sys.stdout.write(describe_settings(config) + f"# cache: {cache_root(config)}\n")
    return EXIT_CLEAN


def check(argv: Sequence[str]) -> int:
    """`compile-lint [check] [PATHS...]`: lint, and with --fix/--diff, fix."""
    args = build_parser().parse_args(list(argv))
    if args.explain:
        return _explain_command(args)
    problem = _usage_problem(args)
    if problem:
        _error(problem)
        return EXIT_ERROR
    for warning in _usage_warnings(args):
        _warn(warning)
    unwritable = args.output_file is not None and _output_file_problem(args.output_file)
    if unwritable:
        # Refused up front: --fix must not rewrite files whose report would then be lost.
        _error(f"cannot write the report to {args.output_file}: {unwritable}; nothing was linted or fixed, "
               "the report was not written")
        return EXIT_ERROR
    paths = args.paths or ["."]
    try:
        config = _configure(args, paths)
    except ConfigError as error:
        _error(str(error))
        return EXIT_ERROR
    if args.show_settings:
        return _show_settings(config)
    if args.verify:
        problem = _verify_usage_error(args, config)
        if problem:
            _error(problem)
            return EXIT_ERROR
    if args.watch:
        from compile_lint.frontends.watch import missing_dependency, watch

        problem = missing_dependency()
        if problem:
            _error(problem)
            return EXIT_ERROR
        watched = paths + ([config.source] if config.source else [])
        return watch(lambda: _configure_and_run(args, paths), watched)
    return _run(args, config, paths)


def clean_command(argv: Sequence[str]) -> int:
    """`compile-lint clean`: remove the project's lint cache."""
    from compile_lint.engine.cache import INDUCTOR_CACHE_NAME, cache_root, clean

    parser = argparse.ArgumentParser(prog="compile-lint clean", description=(
        "Remove the lint cache: the project's .compile-lint-cache/, or outside a project the user's cache directory "
        f"(there the verifier's Inductor kernels, in {INDUCTOR_CACHE_NAME}/, are kept)."))
    parser.add_argument("--config", metavar="PATH", help="a pyproject.toml or compile-lint.toml to use")
    args = parser.parse_args(list(argv))
    try:
        config = load_config(args.config, start=".")
    except ConfigError as error:
        _error(str(error))
        return EXIT_ERROR
    root = cache_root(config)
    kernels = os.path.join(root, INDUCTOR_CACHE_NAME)
    if not clean(root):
        sys.stdout.write(f"No cache at {root}\n")
    elif os.path.isdir(kernels):
        sys.stdout.write(f"Removed the lint cache in {root} (kept the verifier's Inductor kernels in {kernels})\n")
    else:
        sys.stdout.write(f"Removed {root}\n")
    return EXIT_CLEAN


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
        if argv and argv[0] == "clean":
            return clean_command(argv[1:])
        if argv and argv[0] == "server":
            from compile_lint.frontends.server import serve

            return serve(argv[1:])
        if argv and argv[0] == "check":
            argv = argv[1:]
        return check(argv)
    except KeyboardInterrupt as error:
        signum = getattr(error, "signum", None)  # the verifier's Terminated: SIGTERM or SIGHUP
        if signum:
            _error(f"terminated by {signal.Signals(signum).name}")
            return 128 + signum  # as a shell reports a process that signal ended (143 for SIGTERM)
        _error("interrupted")
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_ERROR

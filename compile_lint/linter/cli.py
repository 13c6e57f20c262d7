"""The `compile-lint` command line."""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Optional, Sequence

from compile_lint import __version__
from compile_lint.linter.config import MODES, Config, ConfigError, load_config, validate_codes
from compile_lint.linter.diagnostics import Diagnostic
from compile_lint.linter.files import discover
from compile_lint.linter.progress import track
from compile_lint.linter.reporters import FORMATS, render

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SUBCOMMANDS = ("check", "verify", "clean", "server")
# Below this many files a process pool costs more than it saves.
PARALLEL_THRESHOLD = 8
# Work items per worker: enough that the big files, sent first, even out at the end.
CHUNKS_PER_JOB = 16


def _codes(values: Optional[list[str]]) -> Optional[tuple[str, ...]]:
    if values is None:
        return None
    return tuple(code.strip().upper() if code.strip().upper() != "ALL" else "ALL"
                 for value in values for code in value.split(",") if code.strip())


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for `compile-lint [check] [PATHS...]`."""
    parser = argparse.ArgumentParser(
        prog="compile-lint",
        description=(
            "Find torch.compile graph breaks and recompiles before they cost you, and fix them. "
            "Subcommands: `compile-lint verify TARGET...` proves findings on the real compiler; "
            "`compile-lint clean` removes the cache; `compile-lint server` runs the language server for editors."
        ),
    )
    parser.add_argument("paths", nargs="*", default=None, metavar="PATH",
                        help="files or directories to lint (default: .)")
    parser.add_argument("--select", action="append", metavar="CODES",
                        help="comma-separated rule codes or prefixes to enable (replaces the config's)")
    parser.add_argument("--extend-select", action="append", metavar="CODES",
                        help="codes or prefixes to enable on top of the selection (e.g. JIT8 for perf hints)")
    parser.add_argument("--ignore", action="append", metavar="CODES", help="codes or prefixes to disable")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    parser.add_argument("--unsafe-fixes", action="store_true",
                        help="also apply unsafe fixes (e.g. torch.where evaluates both branches)")
    parser.add_argument("--verify", action="store_true",
                        help="with --fix, prove each fix on the [tool.compile-lint.verify] targets (needs torch): "
                             "a fix that changes outputs or does not reduce breaks/recompiles is rolled back")
    parser.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    parser.add_argument("--show-fixes", action="store_true", help="with --fix, list the fixes applied")
    parser.add_argument("--output-format", choices=FORMATS, default="text", help="how to print findings")
    parser.add_argument("--statistics", action="store_true", help="print a count per rule instead of findings")
    parser.add_argument("--explain", metavar="CODE", help="explain a rule: what breaks, why, examples")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--config", metavar="PATH", help="a pyproject.toml or compile-lint.toml to use")
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
    """The documentation of rule `code`, or None if there is no such rule."""
    from compile_lint.linter.docs import explain as render_explanation
    from compile_lint.rules import RULES_BY_CODE

    rule = RULES_BY_CODE.get(code.upper())
    return render_explanation(rule) if rule is not None else None


@dataclass
class FileOutcome:
    """What linting (or fixing) one file produced, as the report needs it."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)  # findings left in the file
    error: Optional[str] = None  # a one-line reason the file could not be linted or fixed
    text: str = ""  # the file's text (after fixing), kept only when it has findings
    digest: Optional[str] = None  # the content digest the cache keys on
    dependencies: tuple[str, ...] = ()  # other files the findings were computed from
    applied: list[Diagnostic] = field(default_factory=list)  # fixes applied
    original: str = ""  # the text before fixing, for --diff


@dataclass(frozen=True)
class FixJob:
    """One file to fix, and how."""

    path: str
    config: Config
    unsafe: bool
    write: bool
    verify: bool


def _lint_one(job: tuple[str, Config]) -> FileOutcome:
    """Lint one file (in a worker process when there are many)."""
    from compile_lint.linter.cache import content_digest
    from compile_lint.linter.engine import lint_text, symbol_index
    from compile_lint.linter.source import SourceError, decode_source, read_bytes

    path, config = job
    try:
        data = read_bytes(path)
        source = decode_source(data, path)
    except SourceError as error:
        return FileOutcome(path, error=f"{path}: {error}")
    diagnostics = lint_text(source.text, path, config)
    return FileOutcome(path, diagnostics, text=source.text if diagnostics else "", digest=content_digest(path, data),
                       dependencies=tuple(sorted(symbol_index(config).dependencies(path))))


def _fix_one(job: FixJob) -> FileOutcome:
    """Fix one file to a fixed point (with --verify, keeping only fixes the verifier confirms)."""
    from compile_lint.autofix.apply import fix_file

    accept = None
    if job.verify:
        from compile_lint.verifier.fixcheck import accept_hook

        accept = accept_hook(job.config.verify_targets, job.config.root)
    result = fix_file(job.path, job.config, unsafe=job.unsafe, write=job.write, accept=accept)
    outcome = result.outcome
    if outcome is None:
        return FileOutcome(job.path, error=result.error)
    return FileOutcome(job.path, outcome.remaining, result.error, text=outcome.text,
                       applied=outcome.applied, original=result.original)


def _by_size_descending(paths: Sequence[str]) -> list[str]:
    """Largest files first, so that no worker is left with a big file at the end."""
    def size(path: str) -> int:
        try:
            return os.stat(path).st_size
        except OSError:
            return 0
    return sorted(paths, key=size, reverse=True)


def _map(function, items: list, jobs: int, description: str = "Linting"):
    if jobs <= 1 or len(items) < PARALLEL_THRESHOLD:
        return list(track((function(item) for item in items), len(items), description))
    # Import the engine (libcst, every rule) once here; forked workers inherit it.
    import compile_lint.autofix.apply  # noqa: F401
    import compile_lint.linter.engine  # noqa: F401

    jobs = min(jobs, len(items))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        results = pool.map(function, items, chunksize=max(1, len(items) // (jobs * CHUNKS_PER_JOB)))
        return list(track(results, len(items), description))


def _lint_files(files: Sequence[str], config: Config, jobs: int, use_cache: bool) -> list[FileOutcome]:
    """The outcome for each file, in the order given, from the cache where it can."""
    from compile_lint.linter.cache import LintCache, cache_root, content_digest
    from compile_lint.linter.source import SourceError, decode_source, read_bytes

    cache = LintCache(cache_root(config), config) if use_cache else None
    outcomes: list[FileOutcome] = []
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
        cached = cache.get(path, content_digest(path, data))
        if cached is None:
            misses.append(path)
            continue
        text = ""
        if cached:
            try:
                text = decode_source(data, path).text
            except SourceError:
                misses.append(path)
                continue
        outcomes.append(FileOutcome(path, cached, text=text))
    for outcome in _map(_lint_one, [(f, config) for f in _by_size_descending(misses)], jobs):
        if cache is not None and outcome.error is None and outcome.digest is not None:
            cache.put(outcome.path, outcome.digest, outcome.diagnostics, outcome.dependencies)
        outcomes.append(outcome)
    order = {path: index for index, path in enumerate(files)}
    return sorted(outcomes, key=lambda outcome: order[outcome.path])


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _summary(diagnostics: Sequence[Diagnostic], files: int, fixed: int, unsafe: bool) -> str:
    """One closing line: what was fixed, what was found in how many of the files, what --fix can do."""
    safe = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability == "safe")
    hidden = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability == "unsafe")
    parts = []
    if fixed:
        parts.append(f"Fixed {_plural(fixed, 'finding')}.")
    if diagnostics:
        with_findings = len({d.path for d in diagnostics})
        where = _plural(files, "file") if with_findings == files else f"{with_findings} of {_plural(files, 'file')}"
        parts.append(f"Found {_plural(len(diagnostics), 'finding')} in {where}.")
        # With --unsafe-fixes on the command line already, unsafe fixes only need --fix.
        fixable = safe + hidden if unsafe else safe
        if fixable:
            parts.append(f"{fixable} fixable with --fix.")
        if hidden and not unsafe:
            parts.append(f"{hidden} more with --unsafe-fixes.")
    elif not fixed:
        parts.append(f"All checks passed ({_plural(files, 'file')}).")
    return " ".join(parts) + "\n"


def _statistics(diagnostics: Sequence[Diagnostic]) -> str:
    counts = Counter(d.code for d in diagnostics)
    names = {d.code: d.name for d in diagnostics}
    fixable = {d.code for d in diagnostics if d.fix is not None}
    return "".join(
        f"{count:>5}  {code}  {'[*] ' if code in fixable else '    '}{names[code]}\n"
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )


def _error(message: str) -> None:
    sys.stderr.write(f"compile-lint: error: {message}\n")


def _configure(args: argparse.Namespace, paths: list[str]) -> Config:
    """The configuration file's settings with the command line's on top; raises ConfigError."""
    config = load_config(args.config, start=paths[0] if os.path.isdir(paths[0]) else ".")
    select, extend, ignore = _codes(args.select), _codes(args.extend_select), _codes(args.ignore)
    validate_codes((select or ()) + (extend or ()) + (ignore or ()), "command line")
    return config.with_cli(
        select=select,
        extend_select=(config.extend_select + extend) if extend else None,
        ignore=(config.ignore + ignore) if ignore else None,
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


def _fix_files(files: Sequence[str], config: Config, args: argparse.Namespace, jobs: int) -> list[FileOutcome]:
    fix_jobs = [FixJob(f, config, args.unsafe_fixes, not args.diff, args.verify) for f in files]
    # Verification runs the user's code in a subprocess per target: one file at a time.
    return _map(_fix_one, fix_jobs, 1 if args.verify else jobs, "Fixing")


def _report_diff(outcomes: Sequence[FileOutcome], errors: Sequence[str], args: argparse.Namespace) -> int:
    """Print what --fix would change; write nothing."""
    fixed = 0
    for outcome in outcomes:
        fixed += len(outcome.applied)
        if outcome.applied:
            sys.stdout.write("".join(difflib.unified_diff(
                outcome.original.splitlines(keepends=True), outcome.text.splitlines(keepends=True),
                fromfile=outcome.path, tofile=outcome.path)))
    sys.stderr.write(f"Would fix {_plural(fixed, 'finding')}.\n" if fixed else "No fixes available.\n")
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if fixed and not args.exit_zero else EXIT_CLEAN


def _report(
    outcomes: Sequence[FileOutcome], errors: Sequence[str], files: Sequence[str], args: argparse.Namespace
) -> int:
    """Print the findings (or their statistics) and the summary; return the exit code."""
    diagnostics = sorted((d for outcome in outcomes for d in outcome.diagnostics), key=Diagnostic.sort_key)
    sources = {outcome.path: outcome.text for outcome in outcomes if outcome.diagnostics}
    fixed = sum(len(outcome.applied) for outcome in outcomes)
    if args.show_fixes:
        for outcome in outcomes:
            for d in outcome.applied:
                sys.stdout.write(f"Fixed {outcome.path}:{d.line}:{d.column}: {d.code} {d.fix.message}\n")  # type: ignore[union-attr]
    if args.statistics:
        sys.stdout.write(_statistics(diagnostics))
    else:
        sys.stdout.write(render(args.output_format, diagnostics, sources))
    if args.output_format in ("text", "concise") and not args.statistics and (files or not errors):
        sys.stdout.write(_summary(diagnostics, len(files), fixed, args.unsafe_fixes))
    if errors:
        return EXIT_ERROR
    if diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def check(argv: Sequence[str]) -> int:
    """`compile-lint [check] [PATHS...]`: lint, and with --fix/--diff, fix."""
    args = build_parser().parse_args(list(argv))
    if args.explain:
        text = explain(args.explain)
        if text is None:
            _error(f"unknown rule code '{args.explain}'")
            return EXIT_ERROR
        sys.stdout.write(text)
        return EXIT_CLEAN
    if args.jobs is not None and args.jobs < 1:
        _error("--jobs must be at least 1")
        return EXIT_ERROR
    paths = args.paths or ["."]
    try:
        config = _configure(args, paths)
    except ConfigError as error:
        _error(str(error))
        return EXIT_ERROR
    if args.verify:
        problem = _verify_usage_error(args, config)
        if problem:
            _error(problem)
            return EXIT_ERROR
    errors: list[str] = []
    files = discover(paths, config, errors)
    jobs = args.jobs or os.cpu_count() or 1
    if args.fix or args.diff:
        outcomes = _fix_files(files, config, args, jobs)
    else:
        outcomes = _lint_files(files, config, jobs, use_cache=not args.no_cache)
    errors.extend(outcome.error for outcome in outcomes if outcome.error)
    for error in errors:
        _error(error)
    if args.diff:
        return _report_diff(outcomes, errors, args)
    return _report(outcomes, errors, files, args)


def clean_command(argv: Sequence[str]) -> int:
    """`compile-lint clean`: remove the project's lint cache."""
    from compile_lint.linter.cache import cache_root, clean

    parser = argparse.ArgumentParser(prog="compile-lint clean", description="Remove the lint cache (.compile-lint-cache/).")
    parser.add_argument("--config", metavar="PATH", help="a pyproject.toml or compile-lint.toml to use")
    parser.add_argument("--mode", choices=MODES, default=None,
                        help="how the model is compiled: drop findings that need the other mode "
                             "(code under `if self.training:` never runs in a compiled eval() model); default: both")
    args = parser.parse_args(list(argv))
    try:
        config = load_config(args.config, start=".")
    except ConfigError as error:
        _error(str(error))
        return EXIT_ERROR
    root = cache_root(config)
    sys.stdout.write(f"Removed {root}\n" if clean(root) else f"No cache at {root}\n")
    return EXIT_CLEAN


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the `compile-lint` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "verify":
            from compile_lint.verifier.cli import verify_main

            return verify_main(argv[1:])
        if argv and argv[0] == "clean":
            return clean_command(argv[1:])
        if argv and argv[0] == "server":
            from compile_lint.linter.server import serve

            return serve(argv[1:])
        if argv and argv[0] == "check":
            argv = argv[1:]
        return check(argv)
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_ERROR

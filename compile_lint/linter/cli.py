"""The `compile-lint` command line."""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from typing import Optional, Sequence

from compile_lint import __version__
from compile_lint.linter.config import Config, ConfigError, load_config, validate_codes
from compile_lint.linter.diagnostics import Diagnostic
from compile_lint.linter.files import discover
from compile_lint.linter.progress import track
from compile_lint.linter.reporters import FORMATS, GRAPH_BREAK_PAGE, render

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
    parser.add_argument("--no-cache", action="store_true",
                        help="lint every file afresh; neither read nor write .compile-lint-cache/")
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help="processes to lint with (default: all cores)")
    parser.add_argument("--version", action="version", version=f"compile-lint {__version__}")
    return parser


def explain(code: str) -> Optional[str]:
    """The documentation of rule `code`, or None if there is no such rule."""
    from compile_lint.rules import RULES_BY_CODE

    rule = RULES_BY_CODE.get(code.upper())
    if rule is None:
        return None
    lines = [f"{rule.code} ({rule.name})", ""]
    lines.append(f"Kind: {rule.kind}" + ("" if rule.default_enabled else " (off by default; enable with --extend-select)"))
    if rule.gb_type:
        gb = f" ({rule.gb_id}, {GRAPH_BREAK_PAGE.format(gb=rule.gb_id.lower())})" if rule.gb_id else ""
        lines.append(f"Dynamo graph break: {rule.gb_type}{gb}")
    lines.append(f"Fix: {rule.fix_applicability or 'none'}")
    if rule.torch_versions:
        lines.append(f"Holds for torch {rule.torch_versions}")
    if rule.config_note:
        lines.append(f"Config: {rule.config_note}")
    lines += ["", rule.documentation(), ""]
    for number, example in enumerate(rule.invalid, 1):
        lines.append(f"Flagged example {number}:")
        lines += ["    " + line for line in example.code.rstrip().splitlines()]
        if example.fixed is not None:
            lines.append("Fixed:")
            lines += ["    " + line for line in example.fixed.rstrip().splitlines()]
        lines.append("")
    for number, example in enumerate(rule.valid, 1):
        lines.append(f"Not flagged, example {number}:")
        lines += ["    " + line for line in example.code.rstrip().splitlines()]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _lint_one(args: tuple[str, Config]):
    """Lint one file in a worker: (path, findings, error, text if findings, content digest)."""
    from compile_lint.linter.cache import content_digest
    from compile_lint.linter.engine import lint_text
    from compile_lint.linter.source import SourceError, decode_source, read_bytes

    path, config = args
    try:
        data = read_bytes(path)
        source = decode_source(data, path)
    except SourceError as error:
        return path, [], f"{path}: {error}", "", None
    diagnostics = lint_text(source.text, path, config)
    return path, diagnostics, None, source.text if diagnostics else "", content_digest(path, data)


def _fix_one(args: tuple):
    from compile_lint.autofix.apply import fix_file

    path, config, unsafe, write = args[:4]
    accept = None
    if len(args) > 4 and args[4]:
        from compile_lint.verifier.fixcheck import accept_hook

        accept = accept_hook(config.verify_targets, config.root)
    result = fix_file(path, config, unsafe=unsafe, write=write, accept=accept)
    outcome = result.outcome
    if outcome is None:
        return path, [], [], result.error, "", ""
    return path, outcome.remaining, outcome.applied, result.error, result.original, outcome.text


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


def _lint_files(files: Sequence[str], config: Config, jobs: int, use_cache: bool):
    """(path, findings, error, text) for each file, from the cache where it can."""
    from compile_lint.linter.cache import LintCache, cache_root, content_digest
    from compile_lint.linter.source import SourceError, decode_source, read_bytes

    cache = LintCache(cache_root(config), config) if use_cache else None
    results = []
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
        results.append((path, cached, None, text))
    for path, found, error, text, digest in _map(_lint_one, [(f, config) for f in _by_size_descending(misses)], jobs):
        if cache is not None and error is None and digest is not None:
            cache.put(path, digest, found)
        results.append((path, found, error, text))
    order = {path: index for index, path in enumerate(files)}
    return sorted(results, key=lambda result: order[result[0]])


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
        config = load_config(args.config, start=paths[0] if os.path.isdir(paths[0]) else ".")
        select, extend, ignore = _codes(args.select), _codes(args.extend_select), _codes(args.ignore)
        validate_codes((select or ()) + (extend or ()) + (ignore or ()), "command line")
        config = config.with_cli(
            select=select,
            extend_select=(config.extend_select + extend) if extend else None,
            ignore=(config.ignore + ignore) if ignore else None,
        )
    except ConfigError as error:
        _error(str(error))
        return EXIT_ERROR

    if args.verify:
        import importlib.util

        if not args.fix:
            _error("--verify needs --fix")
            return EXIT_ERROR
        if not config.verify_targets:
            _error("--verify needs targets in [tool.compile-lint.verify] targets = [\"path.py:factory\"]")
            return EXIT_ERROR
        if importlib.util.find_spec("torch") is None:
            _error("--verify needs torch: pip install 'compile-lint[verify]'")
            return EXIT_ERROR
    errors: list[str] = []
    files = discover(paths, config, errors)
    jobs = args.jobs or os.cpu_count() or 1
    fixing = args.fix or args.diff
    diagnostics: list[Diagnostic] = []
    sources: dict[str, str] = {}
    fixed = 0
    diffs: list[str] = []
    if fixing:
        # Verification runs the user's code in a subprocess per target: one file at a time.
        results = _map(_fix_one, [(f, config, args.unsafe_fixes, not args.diff, args.verify) for f in files],
                       1 if args.verify else jobs, "Fixing")
        for path, remaining, applied, error, original, new in results:
            if error:
                errors.append(error)
            diagnostics.extend(remaining)
            fixed += len(applied)
            if remaining:
                sources[path] = new
            if args.diff and applied:
                diffs.append("".join(difflib.unified_diff(
                    original.splitlines(keepends=True), new.splitlines(keepends=True),
                    fromfile=path, tofile=path)))
            if args.show_fixes and applied and not args.diff:
                for d in applied:
                    sys.stdout.write(f"Fixed {path}:{d.line}:{d.column}: {d.code} {d.fix.message}\n")  # type: ignore[union-attr]
    else:
        for path, found, error, text in _lint_files(files, config, jobs, use_cache=not args.no_cache):
            if error:
                errors.append(error)
            diagnostics.extend(found)
            if found:
                sources[path] = text
    diagnostics.sort(key=Diagnostic.sort_key)
    for error in errors:
        _error(error)

    if args.diff:
        sys.stdout.write("".join(diffs))
        would_fix = fixed
        sys.stderr.write(f"Would fix {would_fix} finding{'s' if would_fix != 1 else ''}.\n" if would_fix else "No fixes available.\n")
        if errors:
            return EXIT_ERROR
        return EXIT_FINDINGS if would_fix and not args.exit_zero else EXIT_CLEAN

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


def clean_command(argv: Sequence[str]) -> int:
    """`compile-lint clean`: remove the project's lint cache."""
    from compile_lint.linter.cache import cache_root, clean

    parser = argparse.ArgumentParser(prog="compile-lint clean", description="Remove the lint cache (.compile-lint-cache/).")
    parser.add_argument("--config", metavar="PATH", help="a pyproject.toml or compile-lint.toml to use")
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

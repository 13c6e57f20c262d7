"""What a run prints and its exit code: the findings (or their statistics) and the summary, or a diff;
to stdout or `--output-file`; and the `compile-lint: error:` / `warning:` lines on stderr."""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from typing import Sequence

from compile_lint.core.diagnostics import Diagnostic
from compile_lint.core.results import LintResult
from compile_lint.frontends.summary import fix_only_summary, hidden_fixes, no_fixes_line, plural, statistics, summary
from compile_lint.frontends.usage import MACHINE_FORMATS
from compile_lint.reporters.formats import render

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def error(message: str) -> None:
    """One `compile-lint: error:` line on stderr."""
    sys.stderr.write(f"compile-lint: error: {message}\n")


def warn(message: str) -> None:
    """One `compile-lint: warning:` line on stderr."""
    sys.stderr.write(f"compile-lint: warning: {message}\n")


def _unified_diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=path, tofile=path))


def report_diff(outcomes: Sequence[LintResult], errors: Sequence[str], args: argparse.Namespace) -> tuple[str, int]:
    """What --fix would change, as a unified diff (written nowhere else), and the exit code."""
    fixed = sum(len(outcome.applied) for outcome in outcomes)
    diff = "".join(_unified_diff(o.path, o.original, o.text) for o in outcomes if o.applied)
    hidden = hidden_fixes([d for outcome in outcomes for d in outcome.diagnostics], args.unsafe_fixes)
    if not args.quiet and fixed:
        more = f" ({hidden} more with --unsafe-fixes)" if hidden else ""
        sys.stderr.write(f"Would fix {plural(fixed, 'finding')}{more}.\n")
    elif not args.quiet:
        sys.stderr.write(no_fixes_line(hidden))
    if errors:
        return diff, EXIT_ERROR
    return diff, EXIT_FINDINGS if fixed and not args.exit_zero else EXIT_CLEAN


def report(
    outcomes: Sequence[LintResult], errors: Sequence[str], files: Sequence[str], args: argparse.Namespace
) -> tuple[str, int]:
    """The findings (or their statistics) and the summary, and the exit code."""
    diagnostics = sorted((d for outcome in outcomes for d in outcome.diagnostics), key=Diagnostic.sort_key)
    sources = {outcome.path: outcome.text for outcome in outcomes if outcome.diagnostics}
    fixed = sum(len(outcome.applied) for outcome in outcomes)
    parts = []
    if args.show_fixes:
        listing = "".join(f"Fixed {o.path}:{d.line}:{d.column}: {d.code} {d.fix.message}\n"  # type: ignore[union-attr]
                          for o in outcomes for d in o.applied)
        if args.output_format in MACHINE_FORMATS:
            sys.stderr.write(listing)  # beside a machine-readable report: keep the report parseable
        else:
            parts.append(listing)
    if args.fix_only:  # nothing of the findings left; exit 0 unless an error, as ruff's --fix-only
        if args.output_format in ("text", "concise", "full") and not args.quiet:
            parts.append(fix_only_summary(fixed, hidden_fixes(diagnostics, args.unsafe_fixes)))
        return "".join(parts), EXIT_ERROR if errors else EXIT_CLEAN
    if args.statistics:
        parts.append(statistics(diagnostics, args.output_format, args.unsafe_fixes))
    else:
        parts.append(render(args.output_format, diagnostics, sources))
    # `--show-library-findings`: installed libraries' own findings are listed, never counted as the user's.
    own = [d for d in diagnostics if d.library is None]
    text_format = args.output_format in ("text", "concise", "full") and not args.statistics
    if text_format and not args.quiet and (files or not errors):
        unwritten = sum(1 for outcome in outcomes if outcome.unwritten)
        rolled_back = sum(1 for outcome in outcomes if outcome.rolled_back)
        parts.append(summary(own, len(files), fixed, args.unsafe_fixes, failed=len(errors),
                              unwritten=unwritten, rolled_back=rolled_back))
        if len(own) < len(diagnostics):
            parts.append(f"Listed {plural(len(diagnostics) - len(own), 'finding')} inside installed libraries "
                         "(their code, not yours: each is reported at your call into it).\n")
    if errors:
        return "".join(parts), EXIT_ERROR
    if own and not args.exit_zero:
        return "".join(parts), EXIT_FINDINGS
    return "".join(parts), EXIT_CLEAN


def emit(args: argparse.Namespace, text: str, code: int) -> int:
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
    except OSError as problem:
        error(f"cannot write the report to {args.output_file}: {problem.strerror or problem}; "
              "the report was not written")
        return EXIT_ERROR
    return code

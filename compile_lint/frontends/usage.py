"""Flags that cannot be combined, or do nothing together: refused (exit 2) or warned about up front.

Each check runs before anything is linted or fixed, so a run is never silently half-honoured.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
from typing import Optional

from compile_lint.frontends.arguments import STDIN, reads_stdin
from compile_lint.settings.config import Config

# Formats a program reads: nothing but the report may be printed beside them.
MACHINE_FORMATS = ("json", "json-lines", "github", "sarif", "junit", "gitlab", "pylint", "rdjson", "azure")


def usage_problem(args: argparse.Namespace) -> Optional[str]:
    """Why the flags cannot be combined, or None: refused up front, never silently half-honoured."""
    machine = args.output_format in MACHINE_FORMATS
    if args.jobs is not None and args.jobs < 1:
        return "--jobs must be at least 1"
    if args.diff and machine:
        return f"--diff prints a unified diff, not findings: drop --output-format {args.output_format}"
    if args.statistics and args.output_format not in ("text", "concise", "full", "json"):
        return f"--statistics prints text or JSON: use --output-format text or json, not {args.output_format}"
    if STDIN in (args.paths or []) and args.paths != [STDIN]:
        return "- (stdin) cannot be combined with other paths"
    if args.stdin_filename is not None and args.paths and args.paths != [STDIN]:
        return "--stdin-filename names the source read from stdin: pass - (or no path) instead of paths"
    if reads_stdin(args) and (args.watch or args.add_noqa or args.verify):
        flag = "--watch" if args.watch else "--add-noqa" if args.add_noqa else "--verify"
        return f"{flag} works on files, not on stdin"
    if args.add_noqa and (args.fix or args.diff or args.statistics):
        return "--add-noqa rewrites files on its own: drop --fix, --diff and --statistics"
    if args.statistics and args.diff:
        return "--statistics counts findings and --diff prints a diff: use one of them"
    if args.bench and not args.verify:
        return "--bench times the fixes --fix --verify proves: add --fix --verify"
    if args.verify_timeout is not None and not args.verify:
        return "--verify-timeout limits --fix --verify: add --verify"
    if args.verify_timeout is not None and args.verify_timeout <= 0:
        return "--verify-timeout must be a positive number of seconds"
    if args.add_noqa and args.ignore_noqa:
        return "--add-noqa writes `# noqa` comments that --ignore-noqa would ignore: use one of them"
    if args.show_files and (args.show_settings or reads_stdin(args)):
        return ("--show-files lists files and lints nothing: drop --show-settings" if args.show_settings
                else "--show-files lists files, not stdin")
    return None


def usage_warnings(args: argparse.Namespace) -> list[str]:
    """Flags that do nothing in this combination: the run goes on, and says so."""
    warnings = []
    if args.show_fixes and not args.fix:
        warnings.append("--show-fixes lists the fixes --fix applies: without --fix it shows nothing")
    return warnings


# Flags that do something other than explain: refused beside --explain.
EXPLAIN_EXCLUSIVE = ("fix", "fix_only", "diff", "add_noqa", "watch", "statistics", "show_settings", "show_files")
CODE_SHAPE = re.compile(r"^[A-Za-z]+[0-9]+$")


def explain_codes(args: argparse.Namespace) -> tuple[list[str], Optional[str]]:
    """The codes `--explain` was given (commas split), or why the command line is not only codes."""
    values = [code.strip() for value in args.explain for code in value.split(",") if code.strip()]
    not_codes = [value for value in values
                 if not CODE_SHAPE.match(value) and value.upper() != "ALL"] + list(args.paths or ())
    if not_codes:
        return [], f"--explain explains rule codes and lints nothing: '{not_codes[0]}' is not a code (JIT101, or ALL)"
    flags = [f"--{name.replace('_', '-')}" for name in EXPLAIN_EXCLUSIVE if getattr(args, name)]
    if flags:
        return [], f"--explain explains rule codes and lints nothing: drop {', '.join(flags)}"
    # Each code once, in the order first given: `--explain A B A` explains A once.
    return list(dict.fromkeys(value.upper() for value in values)), None


def verify_usage_error(args: argparse.Namespace, config: Config) -> Optional[str]:
    """Why `--verify` cannot run as asked, or None."""
    import importlib.util

    if not args.fix:
        return "--verify needs --fix"
    if not config.verify_targets:
        return "--verify needs targets in [tool.compile-lint.verify] targets = [\"path.py:factory\"]"
    if importlib.util.find_spec("torch") is None:
        return "--verify needs torch: pip install 'compile-lint[verify]'"
    from compile_lint.verifier.fixcheck import resolve_targets, shown
    from compile_lint.verifier.targets import TargetError, missing_target, parse_target

    try:  # a typo in a target is a usage error, found before any file is fixed
        specs = resolve_targets(config.verify_targets, config.root)
    except TargetError as error:
        return f"--verify: {error}"
    problems = (missing_target(parse_target(shown(spec))) for spec in specs)
    return next((f"--verify: {problem}" for problem in problems if problem), None)


def output_file_problem(path: str) -> Optional[str]:
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

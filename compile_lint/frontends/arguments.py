"""The `compile-lint [check]` command line: its flags, and the settings they make.

`build_parser` declares the flags (and `--help`); `configure` turns them into a `Config`:
the defaults, then the config file, then `--config` overrides, then the flags.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from typing import Optional

from compile_lint import __version__
from compile_lint.reporters.formats import FORMATS
from compile_lint.settings.config import MODES, Config, ConfigError, apply_overrides, load_config, validate_codes

STDIN = "-"


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


class UsageParser(argparse.ArgumentParser):
    """An argument parser whose usage error is one line and a pointer to `--help`, as ruff's is.

    argparse prints the whole usage block first, which buries the one line that says what is wrong.
    """

    def error(self, message: str):
        self.exit(2, f"compile-lint: error: {message}\nFor more information, try '{self.prog} --help'.\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for `compile-lint [check] [PATHS...]`."""
    parser = UsageParser(
        prog="compile-lint",
        description=(
            "Find torch.compile graph breaks and recompiles before they cost you, and fix them, in everything "
            "torch.compile traces: forward, compiled functions and methods, torch.cond/checkpoint/vmap bodies, "
            "the entry-points setting, and what they reach in any file of the project (findings in a helper say "
            "'reached from FILE:LINE in FUNCTION'). "
            "Subcommands: `compile-lint verify TARGET...` proves findings on the real compiler; "
            "`compile-lint explain-log LOG` maps a run's logged graph breaks and recompiles to your lines; "
            "`compile-lint rule CODE|--all` explains rules; `compile-lint clean` removes the cache; "
            "`compile-lint server` runs the language server for editors."
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
    parser.add_argument("--fix-only", action="store_true",
                        help="apply fixes as --fix does, but report nothing of the findings left and exit 0 "
                             "(2 on an error), as ruff's --fix-only")
    parser.add_argument("--unsafe-fixes", action="store_true",
                        help="also apply unsafe fixes (e.g. torch.where evaluates both branches; "
                             "tensor-branch-fix in [tool.compile-lint] chooses torch.where or torch.cond)")
    parser.add_argument("--verify", action="store_true",
                        help="with --fix, prove the fixes on the [tool.compile-lint.verify] targets (needs torch): "
                             "a file whose fixes change outputs or do not reduce breaks/recompiles is rolled back "
                             "(a warning; its findings stay findings), judged against the original's own verdict "
                             "(the same failure before and after is not the fixes'). "
                             "Cost: each target runs once (original and fixed, 2 processes) with all files' fixes; "
                             "only a target that fails runs again, to bisect its files (about 2*log2(files) runs "
                             "for one bad file). SIGTERM or SIGHUP stops the targets' processes and exits 128+signal, "
                             "after writing the fixes verified so far")
    parser.add_argument("--bench", action="store_true",
                        help="with --fix --verify, also time the compiled original and the compiled fixed code "
                             "(default torch.compile, each side alone): a fix that compiles but runs slower beyond "
                             "the noise is rolled back, the warning saying by how much")
    parser.add_argument("--verify-timeout", type=float, metavar="SECONDS",
                        help="with --fix --verify, stop verifying after SECONDS (the runs in flight are killed) and "
                             "write the fixes verified so far: proven on every target that ran and imports the file; "
                             "the rest are left unchanged")
    parser.add_argument("--fixable", action="append", metavar="CODES",
                        help="codes or prefixes whose findings keep their fixes (default ALL; replaces the config's)")
    parser.add_argument("--extend-fixable", action="append", metavar="CODES",
                        help="codes or prefixes fixable on top of --fixable / the config's fixable")
    parser.add_argument("--unfixable", action="append", metavar="CODES",
                        help="codes or prefixes whose findings are reported without a fix (--fix leaves them); "
                             "wins over fixable")
    parser.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    parser.add_argument("--add-noqa", action="store_true",
                        help="add `# noqa: CODE` comments that silence every current finding "
                             "(to adopt compile-lint on a large code base)")
    parser.add_argument("--show-fixes", action="store_true", help="with --fix, list the fixes applied")
    parser.add_argument("--ignore-noqa", action="store_true",
                        help="ignore every `# noqa` comment, on a line or for the whole file")
    parser.add_argument("--output-format", choices=FORMATS, default="text", help="how to print findings")
    parser.add_argument("--output-file", metavar="PATH", help="write the report to PATH instead of stdout")
    parser.add_argument("--show-library-findings", action="store_true",
                        help="also list the breaks inside installed libraries that your compiled code calls into, "
                             "at their place in the library's files, marked as the library's (they are reported "
                             "as yours only at your call: 'CALL breaks the graph inside PACKAGE VERSION (...)')")
    parser.add_argument("--statistics", action="store_true",
                        help="print a count per rule instead of findings (a JSON array with --output-format json)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print the findings and nothing else (no summary)")
    parser.add_argument("--stdin-filename", metavar="PATH",
                        help="with -, the file name to report and to match config, excludes and per-file-ignores "
                             "against; --fix then prints the fixed source to stdout")
    parser.add_argument("--watch", action="store_true",
                        help="lint again whenever a Python file or the config changes (needs compile-lint[watch])")
    parser.add_argument("--explain", nargs="+", metavar="CODE",
                        help="explain rules (one or more codes, or ALL): what breaks, why, examples; lints nothing "
                             "(as `compile-lint rule CODE|--all`; JSON with --output-format json)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--config", action="append", metavar="PATH | 'KEY = VALUE'",
                        help="a pyproject.toml or compile-lint.toml to use, or a TOML `key = value` that overrides "
                             "one setting (repeatable), e.g. --config 'extend-select = [\"JIT8\"]' or "
                             "--config 'entry-points = [\"pkg/run.py:Runner.step\"]'")
    parser.add_argument("--show-settings", action="store_true",
                        help="print the resolved settings and where each came from (default, file, command line)")
    parser.add_argument("--show-files", action="store_true",
                        help="print the files a run would lint (absolute paths, sorted) and lint nothing")
    parser.add_argument("--mode", choices=MODES, default=None,
                        help="how the model is compiled: drop findings that need the other mode "
                             "(code under `if self.training:` never runs in a compiled eval() model); default: both")
    parser.add_argument("--no-cache", action="store_true",
                        help="lint every file afresh; neither read nor write .compile-lint-cache/")
    parser.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                        help="processes to lint with (default: all cores); with --fix --verify, N // 2 "
                             "targets run at once (two processes each; default one at a time)")
    parser.add_argument("--version", action="version", version=f"compile-lint {__version__}")
    return parser


def reads_stdin(args: argparse.Namespace) -> bool:
    """Whether the source comes from stdin: `-`, or no path with --stdin-filename."""
    return args.paths == [STDIN] or (not args.paths and args.stdin_filename is not None)


def _config_start(args: argparse.Namespace, paths: list[str]) -> str:
    """Where to look for pyproject.toml: the stdin file's directory, a directory path, else here."""
    if reads_stdin(args) and args.stdin_filename:
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
    for flag in ("select", "extend_select", "ignore", "extend_ignore", "fixable", "extend_fixable", "unfixable"):
        for value in getattr(args, flag) or ():
            if not _codes([value]):
                raise ConfigError(f"--{flag.replace('_', '-')} '{value}': no rule code or prefix given "
                                  "(e.g. JIT1, JIT101, or ALL)")


def configure(args: argparse.Namespace, paths: list[str]) -> Config:
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
    fixable, extend_fixable, unfixable = _codes(args.fixable), _codes(args.extend_fixable), _codes(args.unfixable)
    validate_codes((select or ()) + (extend or ()) + (ignore or ()) + (fixable or ()) + (extend_fixable or ())
                   + (unfixable or ()), "command line")
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
        # As ruff's: --fixable replaces the configured list, the other two add to theirs.
        fixable=fixable,
        extend_fixable=(config.extend_fixable + extend_fixable) if extend_fixable else None,
        unfixable=(config.unfixable + unfixable) if unfixable else None,
        ignore_noqa=args.ignore_noqa or None,
    )

"""`compile-lint verify TARGET...`: prove findings on the real compiler."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from typing import Sequence

from compile_lint.core.diagnostics import Diagnostic
from compile_lint.reporters.formats import FORMATS, render
from compile_lint.settings.config import VERIFY_MODES, ConfigError, load_config
from compile_lint.verifier.isolation import DEFAULT_TIMEOUT_S, run_isolated, stop_on_termination
from compile_lint.verifier.report import display_path, runtime_diagnostics, summary_lines, verified
from compile_lint.verifier.scratch import remove_stale
from compile_lint.verifier.targets import TargetError, missing_target, parse_target

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
INSTALL_HINT = "the verifier needs torch: pip install 'compile-lint[verify]' (or install torch for your platform)"


def build_parser() -> argparse.ArgumentParser:
    """Arguments of `compile-lint verify`."""
    parser = argparse.ArgumentParser(
        prog="compile-lint verify",
        description=("Run targets (path/to/file.py:factory or package.module:factory; the factory returns "
                     "(model, example_calls)) under torch.compile and report graph breaks, recompiles, "
                     "output mismatches and, with --bench, speed. Targets default to "
                     "[tool.compile-lint.verify] targets in pyproject.toml."),
        epilog=("Exit status: 0 clean, 1 findings, 2 usage error or Ctrl-C, 128+signal after SIGTERM "
                "(143) or SIGHUP (129); each stops the running target's process group and removes "
                "the run's temp files first. After a SIGKILL the next run removes them."),
    )
    parser.add_argument("targets", nargs="*", metavar="TARGET")
    parser.add_argument("--device", help="cuda, cpu, cuda:1... (default: cuda when a GPU is present, else cpu)")
    parser.add_argument("--backend", choices=("inductor", "eager"), default="inductor",
                        help="inductor (default) or eager for a quick Dynamo-only verdict")
    parser.add_argument("--mode", choices=VERIFY_MODES, default=None,
                        help="the mode modules run in: train or eval (the whole module), or factory: the mode "
                             "the factory left it in (default: [tool.compile-lint.verify] mode, else factory)")
    parser.add_argument("--bench", action="store_true",
                        help="also time eager vs compiled (default, reduce-overhead) vs compiled+patch")
    parser.add_argument("--inductor-patch", choices=("off", "on", "compare"), default=None,
                        help="the Inductor reuse cost model: off, on, or compare stock and patched builds "
                             "(default: compare with --bench, else off)")
    parser.add_argument("--output-format", choices=FORMATS, default="text")
    parser.add_argument("--report", metavar="PATH", help="also write every measurement as JSON to PATH")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                        help=f"per-target time limit (default {DEFAULT_TIMEOUT_S:g})")
    parser.add_argument("--memory-limit", type=int, default=None, metavar="MB",
                        help="per-target heap limit (CPU targets; CUDA needs address space, so it is not limited)")
    parser.add_argument("--warmup", type=int, default=10, help="benchmark warm-up calls (default 10)")
    parser.add_argument("--iters", type=int, default=50,
                        help="benchmark samples per variant, median reported (default 50)")
    parser.add_argument("--inner", type=int, default=10,
                        help="back-to-back calls per benchmark sample (default 10)")
    parser.add_argument("--control", action="store_true",
                        help="with --bench and --inductor-patch=compare, also time stock builds that carry the "
                             "patch's extra no-op pass, and judge the patch against them")
    parser.add_argument("--no-lint", action="store_true", help="do not run the static rules beside the runtime")
    parser.add_argument("--config", metavar="PATH", help="a pyproject.toml or compile-lint.toml to use")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    return parser


def torch_available() -> bool:
    """Whether torch can be imported here (without importing it)."""
    return importlib.util.find_spec("torch") is not None


def _error(message: str) -> None:
    sys.stderr.write(f"compile-lint verify: error: {message}\n")


def make_request(target: str, args: argparse.Namespace, mode: str = "factory") -> dict:
    """The worker request for one target."""
    patch = args.inductor_patch or ("compare" if args.bench else "off")
    request = {"target": target, "device": args.device, "backend": args.backend, "model_mode": mode,
               "bench": args.bench,
               "patch": patch, "warmup": args.warmup, "iters": args.iters,
               "inner": args.inner, "control": args.control}
    if args.memory_limit and not (args.device or "").startswith("cuda"):
        request["memory_limit_mb"] = args.memory_limit
    return request


def static_findings(files: set[str], config) -> tuple[list[Diagnostic], dict[str, str]]:
    """The linter's findings for the files the targets ran, keyed by display path."""
    from compile_lint.engine.api import ProjectIndex, lint_file

    diagnostics, sources = [], {}
    project = ProjectIndex()  # the findings the CLI reports for these files, with what reaches them
    for path in sorted(files):
        if not os.path.isfile(path):
            continue
        result = lint_file(path, config, project)
        diagnostics.extend(result.diagnostics)
        if result.error is None:
            sources[path] = result.text
    return diagnostics, sources


def verify_main(argv: Sequence[str]) -> int:
    """Entry point of `compile-lint verify`: SIGTERM and SIGHUP stop it as Ctrl-C does (the
    workers killed, temp dirs removed); the `compile-lint` entry point reports either."""
    args = build_parser().parse_args(list(argv))
    with stop_on_termination():
        return _verify(args)


def _verify(args: argparse.Namespace) -> int:
    if not torch_available():
        _error(INSTALL_HINT)
        return EXIT_ERROR
    try:
        config = load_config(args.config, start=".")
    except ConfigError as error:
        _error(str(error))
        return EXIT_ERROR
    targets = list(args.targets)
    if not targets:
        # Config targets are relative to the config file's directory, not the working directory.
        from compile_lint.verifier.fixcheck import resolve_targets

        try:
            targets = [f"{display_path(spec.location) if spec.is_path else spec.location}:{spec.factory}"
                       for spec in resolve_targets(config.verify_targets, config.root)]
        except TargetError as error:
            _error(str(error))
            return EXIT_ERROR
    if not targets:
        _error("no targets: pass path/to/file.py:factory, or list them in [tool.compile-lint.verify] targets")
        return EXIT_ERROR
    try:
        for target in targets:
            problem = missing_target(parse_target(target))  # a typo is a usage error, not a finding
            if problem:
                raise TargetError(problem)
    except TargetError as error:
        _error(str(error))
        return EXIT_ERROR

    remove_stale()  # what runs killed by SIGKILL left behind
    results = []
    for target in targets:
        if args.output_format in ("text", "concise", "full"):
            sys.stderr.write(f"verifying {target} ...\n")
        results.append(run_isolated(make_request(target, args, args.mode or config.verify_mode),
                                    timeout_s=args.timeout))

    runtime = [d for result in results for d in runtime_diagnostics(result)]
    # The files the targets ran: their factories' modules and wherever the compiler found something.
    ran_files = {display_path(r["module_file"]) for r in results if r.get("module_file")}
    ran_files |= {d.path for d in runtime if d.code != "JIT904" and os.path.isfile(d.path)}
    static, sources = ([], {}) if args.no_lint else static_findings(ran_files, config)
    diagnostics = sorted(verified(static, results, ran_files), key=Diagnostic.sort_key)
    for path in {d.path for d in diagnostics} - set(sources):
        try:
            with open(path, encoding="utf-8") as handle:
                sources[path] = handle.read()
        except (OSError, UnicodeError):
            pass

    sys.stdout.write(render(args.output_format, diagnostics, sources))
    if args.output_format in ("text", "concise", "full"):
        for result in results:
            sys.stdout.write("\n".join(summary_lines(result)) + "\n")
    if args.report:
        with open(args.report, "w", encoding="utf-8") as handle:
            json.dump({"results": results, "diagnostics": [d.to_json() for d in diagnostics]}, handle, indent=2)
    if diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


if __name__ == "__main__":
    # `python -m compile_lint.verifier.cli` is `compile-lint verify` (whose entry point reports a SIGTERM).
    from compile_lint.frontends.cli import main

    sys.exit(main(["verify", *sys.argv[1:]]))

"""`compile-lint clean`: remove the lint cache (the verifier's Inductor kernels stay)."""

from __future__ import annotations

import os
import sys
from typing import Sequence

from compile_lint.engine.cache import INDUCTOR_CACHE_NAME, cache_root, clean
from compile_lint.frontends.arguments import UsageParser
from compile_lint.frontends.report import EXIT_CLEAN, EXIT_ERROR, error
from compile_lint.settings.config import ConfigError, load_config


def clean_command(argv: Sequence[str]) -> int:
    """`compile-lint clean`: remove the project's lint cache."""
    parser = UsageParser(prog="compile-lint clean", description=(
        "Remove the lint cache: the project's .compile-lint-cache/, or outside a project the user's cache directory "
        f"(there the verifier's Inductor kernels, in {INDUCTOR_CACHE_NAME}/, are kept)."))
    parser.add_argument("--config", metavar="PATH", help="a pyproject.toml or compile-lint.toml to use")
    args = parser.parse_args(list(argv))
    try:
        config = load_config(args.config, start=".")
    except ConfigError as problem:
        error(str(problem))
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

"""The floor for a libcst-based linter: parse every Python file under a directory, nothing else.

Usage: python benchmarks/libcst_parse.py DIR [--jobs N] [--parser libcst|ast]

Uses the same process pool and chunking as compile-lint (largest files first), so the
ratio between the two measures the linter's own work, not its parallelism. With
`--parser ast`, Python's own `ast.parse` instead: the floor of an ast-based linter.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor

import libcst as cst

CHUNKS_PER_JOB = 16


def parse_one(path: str) -> bool:
    """Parse one file with libcst; False when it cannot be read, decoded or parsed."""
    try:
        with open(path, "rb") as handle:
            cst.parse_module(handle.read())
        return True
    except Exception:  # noqa: BLE001 - the floor only counts, it reports nothing
        return False


def ast_parse_one(path: str) -> bool:
    """Parse one file with `ast.parse`; False when it cannot be read or parsed."""
    try:
        with open(path, "rb") as handle, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(handle.read())
        return True
    except Exception:  # noqa: BLE001
        return False


def python_files(root: str) -> list[str]:
    """Every .py file under `root`, largest first."""
    found = [
        os.path.join(directory, name)
        for directory, _, names in os.walk(root)
        for name in names
        if name.endswith(".py")
    ]
    return sorted(found, key=lambda path: os.stat(path).st_size, reverse=True)


def main() -> int:
    """Parse the files and print how many parsed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--parser", choices=("libcst", "ast"), default="libcst")
    args = parser.parse_args()
    files = python_files(args.root)
    parse = parse_one if args.parser == "libcst" else ast_parse_one
    if args.jobs <= 1:
        results = [parse(path) for path in files]
    else:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            chunk = max(1, len(files) // (args.jobs * CHUNKS_PER_JOB))
            results = list(pool.map(parse, files, chunksize=chunk))
    sys.stdout.write(f"parsed {sum(results)} of {len(files)} files\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

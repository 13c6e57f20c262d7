"""File discovery: expand paths to Python files, honouring excludes and .gitignore (walked by `storage.walk`)."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Optional

from compile_lint.settings.config import Config
from compile_lint.settings.selection import path_matches_any
from compile_lint.storage.walk import DISCOVERY, python_files


def is_excluded(path: str, config: Config) -> bool:
    """Whether `exclude` or `extend-exclude` matches `path` or one of its directories."""
    return path_matches_any(path, config.exclude + config.extend_exclude, config.match_root)


def discover(paths: list[str], config: Config, errors: Optional[list[str]] = None) -> list[str]:
    """Python files under `paths`, sorted, de-duplicated; paths that cannot be read go to `errors`.

    Files named explicitly are linted even when excluded, as in ruff, unless
    `force-exclude` is set: tools that pass every file by name (pre-commit, editors)
    need it for `exclude` to apply at all. A path named explicitly is followed if it is a
    symlink; below it, links to directories are not (as in ruff: they lead to virtual
    environments, or back up the tree, and --fix must not write outside the tree it was
    given), while links to files are linted, and fixed through the link.
    """
    problems: list[str] = [] if errors is None else errors
    found: dict[str, None] = {}
    for path in paths:
        try:
            os.lstat(path)
        except FileNotFoundError:
            problems.append(f"{path}: no such file or directory")
            continue
        except OSError as error:
            problems.append(f"{path}: cannot access: {error.strerror or error}")
            continue
        if config.force_exclude and is_excluded(path, config):
            continue
        if os.path.isfile(path):
            found[os.path.normpath(path)] = None
            continue
        if not os.path.isdir(path):
            problems.append(f"{path}: not a file or directory")
            continue
        policy = DISCOVERY if config.respect_gitignore else replace(DISCOVERY, gitignore=False)
        for file in python_files(path, policy, lambda candidate: is_excluded(candidate, config), problems):
            found[file] = None
    return sorted(found)

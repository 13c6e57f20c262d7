"""File discovery: expand paths to Python files, honouring excludes and .gitignore."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterator, Optional

from compile_lint.settings.config import Config

from compile_lint.settings.selection import path_matches_any

PYTHON_SUFFIXES = (".py", ".pyi")


def _gitignore_regex(pattern: str) -> str:
    """Translate one gitignore glob (without `!` and trailing `/`) to a regex on a relative path."""
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    pattern = pattern.lstrip("/")
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            close = pattern.find("]", i + 1)
            if close == -1:
                out.append(re.escape(char))
            else:
                body = pattern[i + 1:close].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = close
        else:
            out.append(re.escape(char))
        i += 1
    body = "".join(out)
    return ("^" if anchored else "^(?:.*/)?") + body + "$"


@dataclass
class GitIgnore:
    """The rules of one .gitignore file, relative to its directory."""

    base: str
    rules: list[tuple[re.Pattern, bool, bool]] = field(default_factory=list)  # regex, negated, dir_only

    @classmethod
    def load(cls, directory: str) -> Optional["GitIgnore"]:
        """Parse `directory/.gitignore`, or None when there is none or it cannot be read."""
        path = os.path.join(directory, ".gitignore")
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError:
            return None
        ignore = cls(base=os.path.abspath(directory))
        for raw in lines:
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            if negated:
                line = line[1:]
            if line.startswith("\\"):
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            ignore.rules.append((re.compile(_gitignore_regex(line)), negated, dir_only))
        return ignore

    def verdict(self, path: str, is_dir: bool) -> Optional[bool]:
        """True (ignored), False (re-included) or None (no rule matches)."""
        relative = os.path.relpath(path, self.base).replace(os.sep, "/")
        result = None
        for regex, negated, dir_only in self.rules:
            if dir_only and not is_dir:
                continue
            if regex.match(relative):
                result = not negated
        return result


def _is_git_root(directory: str) -> bool:
    return os.path.exists(os.path.join(directory, ".git"))


def _ancestor_gitignores(directory: str) -> list[GitIgnore]:
    """.gitignore files from the enclosing repository's root down to `directory`'s parent."""
    chain = []
    current = os.path.abspath(directory)
    if _is_git_root(current):
        return []
    while True:
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
        loaded = GitIgnore.load(current)
        if loaded:
            chain.append(loaded)
        if _is_git_root(current):
            return list(reversed(chain))
    return []  # outside a git repository, only .gitignore files inside the tree count


def _ignored(path: str, is_dir: bool, stack: list[GitIgnore]) -> bool:
    result = False
    for ignore in stack:
        verdict = ignore.verdict(path, is_dir)
        if verdict is not None:
            result = verdict
    return result


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
        stack = _ancestor_gitignores(path) if config.respect_gitignore else []
        for file in _walk(os.path.normpath(path), config, stack, problems):
            found[file] = None
    return sorted(found)


def _walk(directory: str, config: Config, stack: list[GitIgnore], errors: list[str]) -> Iterator[str]:
    """Python files below `directory`, not following links to directories; unreadable ones go to `errors`."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as error:
        errors.append(f"{directory}: cannot read directory: {error.strerror or error}")
        return
    own = GitIgnore.load(directory) if config.respect_gitignore else None
    if own:
        stack = stack + [own]
    for entry in entries:
        path = os.path.normpath(entry.path)
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            # A link to a directory is skipped whatever its name (a `pkg.py` link to a package too).
            is_linked_dir = not is_dir and entry.is_symlink() and entry.is_dir()
        except OSError as error:
            errors.append(f"{path}: cannot access: {error.strerror or error}")
            continue
        if is_linked_dir or is_excluded(path, config):
            continue
        if stack and _ignored(os.path.abspath(path), is_dir, stack):
            continue
        if is_dir:
            yield from _walk(path, config, stack, errors)
        elif entry.name.endswith(PYTHON_SUFFIXES):
            yield path

"""The one walk over a directory tree for Python files, with its skip policy as a parameter.

Two callers walk trees, and they mean to skip different things (docs/architecture.md,
"Walking files"):

- discovery (`engine/files.py`, `DISCOVERY`): the files a run lints. It honours
  `.gitignore` (the `respect-gitignore` setting) and leaves the rest to the configured
  excludes; stubs (`.pyi`) are linted too, and a directory it cannot read is an error.
- the project index (`analysis/project/reach.py`, `PROJECT_INDEX`): every file whose
  calls may reach a linted file. It reads `.gitignore`d files (generated code is still
  called), skips hidden directories, virtualenvs, caches and build output by name, reads
  no stubs (they hold no code Dynamo traces), and skips what it cannot read silently.

Both skip links to directories (they lead into virtualenvs or back up the tree) and every
path `excluded` names, and return a directory's files (in name order) before its
subdirectories' (in name order), as `os.walk` does.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

# What the project index never reads, beside hidden directories and virtualenvs.
TOOL_DIRECTORIES = frozenset({"__pycache__", "node_modules", "site-packages", ".venv", "venv", "build", "dist",
                              ".git", ".tox", ".nox", ".mypy_cache", ".pytest_cache"})


@dataclass(frozen=True)
class WalkPolicy:
    """What a walk keeps: file suffixes, and whether .gitignore and the tool directories count."""

    suffixes: tuple[str, ...]
    gitignore: bool  # skip what .gitignore files (from the enclosing repository's root down) ignore
    skip_tool_directories: bool  # skip hidden directories, virtualenvs (pyvenv.cfg) and TOOL_DIRECTORIES


DISCOVERY = WalkPolicy(suffixes=(".py", ".pyi"), gitignore=True, skip_tool_directories=False)
PROJECT_INDEX = WalkPolicy(suffixes=(".py",), gitignore=False, skip_tool_directories=True)


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


def python_files(directory: str, policy: WalkPolicy, excluded: Callable[[str], bool] = lambda path: False,
                 errors: Optional[list[str]] = None) -> list[str]:
    """The files below `directory` with `policy`'s suffixes, as `directory` is spelled (normalised).

    A directory or entry that cannot be read is a one-line message in `errors`; without
    `errors` it is skipped silently (an entry whose kind cannot be read counts as a file,
    as `os.walk` counts it).
    """
    stack = _ancestor_gitignores(directory) if policy.gitignore else []
    return _walk(os.path.normpath(directory), policy, excluded, stack, errors)


def _skipped_directory(path: str, name: str) -> bool:
    return (name.startswith(".") or name in TOOL_DIRECTORIES
            or os.path.isfile(os.path.join(path, "pyvenv.cfg")))


def _walk(directory: str, policy: WalkPolicy, excluded: Callable[[str], bool], stack: list[GitIgnore],
          errors: Optional[list[str]]) -> list[str]:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as error:
        if errors is not None:
            errors.append(f"{directory}: cannot read directory: {error.strerror or error}")
        return []
    own = GitIgnore.load(directory) if policy.gitignore else None
    if own:
        stack = stack + [own]
    files: list[str] = []
    below: list[str] = []
    for entry in entries:
        path = os.path.normpath(entry.path)
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            # A link to a directory is skipped whatever its name (a `pkg.py` link to a package too).
            is_linked_dir = not is_dir and entry.is_symlink() and entry.is_dir()
        except OSError as error:
            if errors is not None:
                errors.append(f"{path}: cannot access: {error.strerror or error}")
                continue
            is_dir = is_linked_dir = False
        if is_linked_dir or excluded(path):
            continue
        if stack and _ignored(os.path.abspath(path), is_dir, stack):
            continue
        if is_dir:
            if not (policy.skip_tool_directories and _skipped_directory(path, entry.name)):
                below.extend(_walk(path, policy, excluded, stack, errors))
        elif entry.name.endswith(policy.suffixes):
            files.append(path)
    return files + below

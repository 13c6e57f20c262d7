"""Which rules apply where: select / extend-select / ignore / per-file-ignores, and path patterns."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from typing import TYPE_CHECKING, Optional, Sequence

from compile_lint.core.diagnostics import CODE_PREFIX

if TYPE_CHECKING:
    from compile_lint.settings.config import Config


def _longest_match(code: str, selectors: Sequence[str]) -> int:
    best = -1
    for selector in selectors:
        if selector == "ALL":
            best = max(best, 0)
        elif code.startswith(selector):
            best = max(best, len(selector))
    return best


def rule_enabled(code: str, default_enabled: bool, config: Config, path: Optional[str] = None) -> bool:
    """Whether a rule code is on: the most specific of select/extend-select/ignore wins.

    Rules that are off by default (perf hints, noisy rules) need a selector more specific
    than the bare prefix, e.g. `--extend-select JIT8` or `--select JIT801`, or `ALL`.
    """
    selected = max(_longest_match(code, config.select), _longest_match(code, config.extend_select))
    ignored = _longest_match(code, config.ignore)
    if path is not None:
        for pattern, codes in config.per_file_ignores:
            if path_matches(path, pattern, config.match_root):
                ignored = max(ignored, _longest_match(code, codes))
    if selected < 0 or ignored >= selected:
        return False
    if not default_enabled and 0 < selected <= len(CODE_PREFIX):
        return False
    return True


def fix_allowed(code: str, config: Config) -> bool:
    """Whether findings of `code` keep their fixes: it matches `fixable` or `extend-fixable` and not
    `unfixable`, which always wins (ruff's reading)."""
    fixable = max(_longest_match(code, config.fixable), _longest_match(code, config.extend_fixable))
    return fixable >= 0 and _longest_match(code, config.unfixable) < 0


def path_matches(path: str, pattern: str, root: str = ".") -> bool:
    """Glob match a file path against a pattern, relative to the config's root or by basename."""
    return path_matches_any(path, (pattern,), root)


def path_matches_any(path: str, patterns: Sequence[str], root: str = ".") -> bool:
    """Whether any of `patterns` matches `path` as `path_matches` does (the path is split once for all)."""
    if not patterns:
        return False
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, os.path.abspath(root)).replace(os.sep, "/")
    whole, below = _pattern_set(tuple(patterns))
    normcase = os.path.normcase
    return bool(
        whole.match(normcase(relative))
        or whole.match(normcase(os.path.basename(path)))
        or below.match(normcase(relative))
        or any(whole.match(normcase(part)) for part in relative.split("/")[:-1])
    )


@functools.lru_cache(maxsize=64)
def _pattern_set(patterns: tuple[str, ...]) -> "tuple[re.Pattern[str], re.Pattern[str]]":
    """One regex for `patterns` and one for `pattern/*`, each as `fnmatch.fnmatch` reads a pattern.

    A run asks about every file against the same exclude list: one match per question
    instead of one `fnmatch` per pattern.
    """
    stripped = [os.path.normcase(pattern.rstrip("/")) for pattern in patterns]
    whole = "|".join(f"(?:{fnmatch.translate(pattern)})" for pattern in stripped)
    below = "|".join(f"(?:{fnmatch.translate(pattern + '/*')})" for pattern in stripped)
    return re.compile(whole), re.compile(below)

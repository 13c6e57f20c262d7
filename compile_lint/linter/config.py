"""Configuration: `[tool.compile-lint]` in pyproject.toml, merged with command-line flags."""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, replace
from typing import Any, Iterable, Optional, Sequence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from compile_lint.rules.base import CODE_PREFIX

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist",
    "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", "*.egg-info",
    ".compile-lint-cache",
)


# How the user compiles: Dynamo specialises on `self.training`, so training-only code never
# runs in a compiled eval() model, and inference-only code never in a compiled training step.
MODES = ("both", "inference", "training")


class ConfigError(Exception):
    """A configuration problem; the message is one line for the user."""


@dataclass(frozen=True)
class Config:
    """Everything that decides which findings a run reports."""

    select: tuple[str, ...] = (CODE_PREFIX,)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    target_torch_version: Optional[str] = None
    module_bases: tuple[str, ...] = ()
    mode: str = "both"  # "inference" / "training": keep only findings that can happen in that mode
    verify_targets: tuple[str, ...] = ()
    root: str = "."
    source: Optional[str] = None

    def with_cli(self, **overrides: Any) -> "Config":
        """A copy with the command line's non-empty values applied."""
        changes = {key: value for key, value in overrides.items() if value is not None}
        return replace(self, **changes)


_LIST_KEYS = {
    "select": "select",
    "extend-select": "extend_select",
    "ignore": "ignore",
    "exclude": "exclude",
    "extend-exclude": "extend_exclude",
    "module-bases": "module_bases",
}


def _string_list(value: Any, key: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{source}: [tool.compile-lint] {key} must be a list of strings")
    return tuple(value)


def parse_config(data: dict, source: str, root: str) -> Config:
    """Build a Config from the `[tool.compile-lint]` table; reject unknown keys and bad types."""
    table = data.get("tool", {}).get("compile-lint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [tool.compile-lint] must be a table")
    values: dict[str, Any] = {"root": root, "source": source}
    for key, value in table.items():
        if key in _LIST_KEYS:
            values[_LIST_KEYS[key]] = _string_list(value, key, source)
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: [tool.compile-lint] per-file-ignores must be a table")
            values["per_file_ignores"] = tuple(
                (pattern, _string_list(codes, f"per-file-ignores.{pattern}", source))
                for pattern, codes in value.items()
            )
        elif key == "respect-gitignore":
            if not isinstance(value, bool):
                raise ConfigError(f"{source}: [tool.compile-lint] respect-gitignore must be true or false")
            values["respect_gitignore"] = value
        elif key == "target-torch-version":
            if not isinstance(value, str) or not _looks_like_version(value):
                raise ConfigError(f"{source}: [tool.compile-lint] target-torch-version must be a version string such as \"2.13\"")
            values["target_torch_version"] = value
        elif key == "mode":
            if value not in MODES:
                raise ConfigError(f"{source}: [tool.compile-lint] mode must be one of {', '.join(map(repr, MODES))}")
            values["mode"] = value
        elif key == "verify":
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: [tool.compile-lint.verify] must be a table")
            unknown = set(value) - {"targets"}
            if unknown:
                raise ConfigError(f"{source}: unknown key '{sorted(unknown)[0]}' in [tool.compile-lint.verify]")
            values["verify_targets"] = _string_list(value.get("targets", []), "verify.targets", source)
        else:
            raise ConfigError(f"{source}: unknown key '{key}' in [tool.compile-lint]")
    config = Config(**values)
    validate_codes(config.select + config.extend_select + config.ignore, source)
    for _, codes in config.per_file_ignores:
        validate_codes(codes, source)
    return config


def _looks_like_version(text: str) -> bool:
    parts = text.split(".")
    return 1 <= len(parts) <= 3 and all(part.isdigit() for part in parts)


def validate_codes(codes: Iterable[str], source: str) -> None:
    """Reject selectors that match no rule (a typo would otherwise silently select nothing)."""
    from compile_lint.rules import ALL_RULES

    known = [rule.code for rule in ALL_RULES] + [CODE_PREFIX + "000"]
    for code in codes:
        if code == "ALL":
            continue
        if not any(rule_code.startswith(code) for rule_code in known):
            raise ConfigError(f"{source}: unknown rule code or prefix '{code}'")


def find_pyproject(start: str) -> Optional[str]:
    """The nearest pyproject.toml at or above `start` that has a [tool.compile-lint] table, else the nearest one."""
    directory = os.path.abspath(start)
    if os.path.isfile(directory):
        directory = os.path.dirname(directory)
    nearest = None
    while True:
        candidate = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(candidate):
            nearest = nearest or candidate
            try:
                with open(candidate, "rb") as handle:
                    if b"[tool.compile-lint" in handle.read():
                        return candidate
            except OSError:
                pass
        parent = os.path.dirname(directory)
        if parent == directory:
            return nearest
        directory = parent


def load_config(path: Optional[str] = None, start: str = ".") -> Config:
    """Load config from `path` (an explicit --config) or the nearest pyproject.toml."""
    explicit = path is not None
    if path is None:
        path = find_pyproject(start)
        if path is None:
            return Config(root=os.path.abspath(start))
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    if explicit and not path.endswith("pyproject.toml"):
        # A standalone compile-lint.toml holds the table's keys at top level.
        data = {"tool": {"compile-lint": data}}
    return parse_config(data, path, os.path.dirname(os.path.abspath(path)))


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
            if path_matches(path, pattern, config.root):
                ignored = max(ignored, _longest_match(code, codes))
    if selected < 0 or ignored >= selected:
        return False
    if not default_enabled and 0 < selected <= len(CODE_PREFIX):
        return False
    return True


def path_matches(path: str, pattern: str, root: str = ".") -> bool:
    """Glob match a file path against a pattern, relative to the config's root or by basename."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, os.path.abspath(root)).replace(os.sep, "/")
    pattern = pattern.rstrip("/")
    return (
        fnmatch.fnmatch(relative, pattern)
        or fnmatch.fnmatch(os.path.basename(path), pattern)
        or fnmatch.fnmatch(relative, pattern + "/*")
        or any(fnmatch.fnmatch(part, pattern) for part in relative.split("/")[:-1])
    )

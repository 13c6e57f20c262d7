"""Configuration: `[tool.compile-lint]` in pyproject.toml, merged with command-line flags."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Optional, Sequence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from compile_lint.core.diagnostics import CODE_PREFIX
from compile_lint.fixes.branches.choice import BRANCH_FIX_CHOICES, DEFAULT_BRANCH_FIX

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist",
    "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", "*.egg-info",
    ".compile-lint-cache",
)


# How the user compiles: Dynamo specialises on `self.training`, so training-only code never
# runs in a compiled eval() model, and inference-only code never in a compiled training step.
MODES = ("both", "inference", "training")
# The mode `compile-lint verify` runs a module in: the one its factory left it in, or forced.
VERIFY_MODES = ("factory", "train", "eval")


class ConfigError(Exception):
    """A configuration problem; the message is one line for the user."""


DEFAULT_ORIGIN = "default"
COMMAND_LINE = "command line"


@dataclass(frozen=True)
class Config:
    """Everything that decides which findings a run reports."""

    select: tuple[str, ...] = (CODE_PREFIX,)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool = False
    respect_gitignore: bool = True
    target_torch_version: Optional[str] = None
    module_bases: tuple[str, ...] = ()
    mode: str = "both"  # "inference" / "training": keep only findings that can happen in that mode
    verify_targets: tuple[str, ...] = ()
    verify_mode: str = "factory"  # "train" / "eval": the mode `verify` and `--fix --verify` run modules in
    # Functions torch.compile traces that the code alone does not show: "path/to/file.py:Class.method"
    # or "path/to/file.py:function", relative to the config file's directory.
    entry_points: tuple[str, ...] = ()
    # Directories absolute imports are looked up in (ruff's `src`), relative to the config
    # file's directory; empty: the project's root and its `src/`.
    src: tuple[str, ...] = ()
    tensor_branch_fix: str = DEFAULT_BRANCH_FIX  # "where" | "cond": the rewrite where both are valid
    # Which codes keep their fixes (ruff's `fixable`, `extend-fixable`, `unfixable`): a finding
    # of another code is reported without one, so `--fix` leaves it.
    fixable: tuple[str, ...] = ("ALL",)
    extend_fixable: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()
    ignore_noqa: bool = False  # `--ignore-noqa`: no noqa comment is read (a flag only, as in ruff)
    root: str = "."
    source: Optional[str] = None
    # Where exclude and per-file-ignores patterns are relative to, when not `root`: the CLI
    # sets the working directory when there is no config file (as ruff does).
    patterns_root: Optional[str] = None
    # Where each setting that is not a default came from: (field, origin). Not part of
    # what a run reports, so neither compared nor in the repr the cache keys on.
    origins: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)

    def with_cli(self, **overrides: Any) -> "Config":
        """A copy with the command line's non-empty values applied."""
        return self.with_values(COMMAND_LINE, **{key: value for key, value in overrides.items() if value is not None})

    def with_values(self, origin: str, **values: Any) -> "Config":
        """A copy with `values` set, remembering that they came from `origin`."""
        origins = dict(self.origins)
        origins.update((name, origin) for name in values)
        return replace(self, **values, origins=tuple(origins.items()))

    @property
    def match_root(self) -> str:
        """The directory exclude and per-file-ignores patterns are relative to."""
        return self.patterns_root or self.root

    def origin(self, name: str) -> str:
        """Where the setting `name` (a field) came from: "default", a config file, the command line."""
        return dict(self.origins).get(name, DEFAULT_ORIGIN)


def _string_list(value: Any, key: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{source}: [tool.compile-lint] {key} must be a list of strings")
    return tuple(value)


def _code_list(value: Any, key: str, source: str) -> tuple[str, ...]:
    codes = _string_list(value, key, source)
    validate_codes(codes, source)
    return codes


def _per_file_ignores(value: Any, key: str, source: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: [tool.compile-lint] {key} must be a table")
    return tuple((pattern, _code_list(codes, f"{key}.{pattern}", source)) for pattern, codes in value.items())


def _boolean(value: Any, key: str, source: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{source}: [tool.compile-lint] {key} must be true or false")
    return value


def _torch_version(value: Any, key: str, source: str) -> str:
    if not isinstance(value, str) or not _looks_like_version(value):
        raise ConfigError(f"{source}: [tool.compile-lint] {key} must be a version string such as \"2.13\"")
    return value


def _one_of(choices: tuple[str, ...]):
    """A parser that accepts exactly one of `choices` (a mode, a rewrite style)."""
    def parse(value: Any, key: str, source: str) -> str:
        if value not in choices:
            spelled = ", ".join(f'"{choice}"' for choice in choices)
            raise ConfigError(f"{source}: [tool.compile-lint] {key} must be one of {spelled}, not {value!r}")
        return value
    return parse


def _verify_table(value: Any, key: str, source: str) -> tuple[tuple[str, ...], str]:
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: [tool.compile-lint.{key}] must be a table")
    unknown = set(value) - {"targets", "mode"}
    if unknown:
        raise ConfigError(f"{source}: unknown key '{sorted(unknown)[0]}' in [tool.compile-lint.{key}]")
    return (_string_list(value.get("targets", []), f"{key}.targets", source),
            _one_of(VERIFY_MODES)(value.get("mode", "factory"), f"{key}.mode", source))


def _entry_points(value: Any, key: str, source: str) -> tuple[str, ...]:
    targets = _string_list(value, key, source)
    for target in targets:
        file, colon, name = target.rpartition(":")
        if not colon or not file.endswith(".py") or not name:
            raise ConfigError(f"{source}: [tool.compile-lint] {key}: '{target}' is not "
                              f"'path/to/file.py:function' or 'path/to/file.py:Class.method'")
    return targets


@dataclass(frozen=True)
class Setting:
    """One `[tool.compile-lint]` key: the Config field it sets and how its TOML value is read."""

    key: str
    field: str | tuple[str, ...]  # a table's fields, when its keys set several (`verify`)
    read: Callable[[Any, str, str], Any]  # (value, key, source) -> the field's value (a tuple of them
    #                                       for several fields); raises ConfigError


# Every key of [tool.compile-lint], in the order `--show-settings` prints them. A new key
# is one row here plus its Config field.
SETTINGS: tuple[Setting, ...] = (
    Setting("select", "select", _code_list),
    Setting("extend-select", "extend_select", _code_list),
    Setting("ignore", "ignore", _code_list),
    Setting("fixable", "fixable", _code_list),
    Setting("extend-fixable", "extend_fixable", _code_list),
    Setting("unfixable", "unfixable", _code_list),
    Setting("per-file-ignores", "per_file_ignores", _per_file_ignores),
    Setting("exclude", "exclude", _string_list),
    Setting("extend-exclude", "extend_exclude", _string_list),
    Setting("force-exclude", "force_exclude", _boolean),
    Setting("respect-gitignore", "respect_gitignore", _boolean),
    Setting("target-torch-version", "target_torch_version", _torch_version),
    Setting("module-bases", "module_bases", _string_list),
    Setting("mode", "mode", _one_of(MODES)),
    Setting("tensor-branch-fix", "tensor_branch_fix", _one_of(BRANCH_FIX_CHOICES)),
    Setting("verify", ("verify_targets", "verify_mode"), _verify_table),
    Setting("entry-points", "entry_points", _entry_points),
    Setting("src", "src", _string_list),
)
SETTINGS_BY_KEY = {setting.key: setting for setting in SETTINGS}


def read_settings(table: dict, source: str) -> dict[str, Any]:
    """Config field values from a `[tool.compile-lint]` table; unknown keys and bad values raise."""
    values: dict[str, Any] = {}
    for key, value in table.items():
        setting = SETTINGS_BY_KEY.get(key)
        if setting is None:
            raise ConfigError(f"{source}: unknown key '{key}' in [tool.compile-lint]")
        read = setting.read(value, key, source)
        if isinstance(setting.field, tuple):
            values.update(zip(setting.field, read))
        else:
            values[setting.field] = read
    return values


def parse_config(data: dict, source: str, root: str) -> Config:
    """Build a Config from the `[tool.compile-lint]` table; reject unknown keys and bad types."""
    table = data.get("tool", {}).get("compile-lint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [tool.compile-lint] must be a table")
    return Config(root=root, source=source).with_values(source, **read_settings(table, source))


def apply_overrides(config: Config, overrides: Sequence[str]) -> Config:
    """`config` with `--config 'key = value'` overrides (inline TOML, as in ruff) applied in order."""
    for override in overrides:
        try:
            table = tomllib.loads(override)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"--config '{override}' is neither a config file nor a TOML `key = value` "
                              f"override ({exc})") from None
        config = config.with_values("--config", **read_settings(table, f"--config '{override}'"))
    return config


def _looks_like_version(text: str) -> bool:
    parts = text.split(".")
    return 1 <= len(parts) <= 3 and all(part.isdigit() for part in parts)


def validate_codes(codes: Iterable[str], source: str) -> None:
    """Reject selectors that match no rule (a typo would otherwise silently select nothing)."""
    from compile_lint.rules import rule_codes

    known = [*rule_codes(), CODE_PREFIX + "000", CODE_PREFIX + "001"]  # JIT001: unused-noqa
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


def _toml_value(value: Any) -> str:
    """A setting's value spelled as TOML (JSON strings are valid TOML basic strings)."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return "[" + ", ".join(_toml_value(item) for item in value) + "]"


def describe_settings(config: Config) -> str:
    """The resolved settings as `[tool.compile-lint]` TOML, each with where it came from."""
    from compile_lint.settings.versions import installed_torch_version

    lines = [f"# config file: {config.source or 'none'}; paths are relative to {os.path.abspath(config.match_root)}",
             "[tool.compile-lint]"]
    for setting in SETTINGS:
        fields = setting.field if isinstance(setting.field, tuple) else (setting.field,)
        value = getattr(config, fields[0])
        origin = config.origin(fields[0])
        if setting.key == "per-file-ignores":
            pairs = ", ".join(f"{_toml_value(pattern)} = {_toml_value(codes)}" for pattern, codes in value)
            text = f"{{ {pairs} }}" if pairs else "{}"
        elif setting.key == "verify":
            text = f"{{ targets = {_toml_value(value)}, mode = {_toml_value(config.verify_mode)} }}"
        elif value is None:  # target-torch-version
            installed = installed_torch_version()
            lines.append(f"# {setting.key} is not set: rules are judged for "
                         + (f"the installed torch, {installed}" if installed else "any torch (none is installed)"))
            continue
        else:
            text = _toml_value(value)
        lines.append(f"{setting.key} = {text}  # {origin}")
    if config.ignore_noqa:
        lines.append(f"# ignore-noqa: every `# noqa` comment is ignored  # {config.origin('ignore_noqa')}")
    return "\n".join(lines) + "\n"

"""The lint cache: findings per file, keyed by content, settings and tool version.

An unchanged tree re-lints by reading each file, hashing it and reading one small entry,
with no parse. The cache lives in `.compile-lint-cache/` next to the project's config file,
or, outside any project, in the user's cache directory (`$XDG_CACHE_HOME/compile-lint`,
`~/.cache/compile-lint`; `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on Windows).
Layout: `<cache>/<settings>/<ab>/<digest>.json`, where
`settings` hashes the tool version, the source of compile-lint itself (so editing a rule
invalidates it without a version bump) and the whole configuration, and `digest` hashes
the file's path and bytes. A file's findings may also depend on other files its analysis
read (an imported base class, a helper's source): each entry lists them with a digest of
their bytes, and an entry whose dependencies changed is a miss. Entries are written to a
temporary file and renamed, so concurrent runs never see half an entry; an entry that
cannot be read back is a miss and is rewritten. `compile-lint clean` removes the
directory; `--no-cache` bypasses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from typing import Iterable, NamedTuple, Optional, Sequence

from compile_lint import __version__
from compile_lint.core.diagnostics import Diagnostic, Edit, Fix, Inside
from compile_lint.settings.config import Config
from compile_lint.storage.atomic import atomic_file

CACHE_DIR_NAME = ".compile-lint-cache"
FORMAT = 5
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_fingerprint: Optional[str] = None
_RUN_CACHES: dict = {}


def tool_fingerprint() -> str:
    """A hash of compile-lint's version and its own source files (rules included)."""
    global _fingerprint
    if _fingerprint is None:
        digest = hashlib.sha256(f"{__version__}\0{FORMAT}".encode())
        for directory, subdirs, names in os.walk(_PACKAGE_DIR):
            subdirs.sort()
            for name in sorted(names):
                if name.endswith(".py"):
                    path = os.path.join(directory, name)
                    digest.update(os.path.relpath(path, _PACKAGE_DIR).encode())
                    with open(path, "rb") as handle:
                        digest.update(handle.read())
        _fingerprint = digest.hexdigest()
    return _fingerprint


def settings_key(config: Config) -> str:
    """The cache namespace for this tool build and configuration."""
    return hashlib.sha256(f"{tool_fingerprint()}\0{config!r}".encode()).hexdigest()[:20]


def content_digest(path: str, data: bytes) -> str:
    """The key of one file's entry: its path as given (findings name it) and its bytes."""
    return hashlib.blake2b(path.encode("utf-8", "surrogateescape") + b"\0" + data, digest_size=20).hexdigest()


def file_digest(path: str) -> Optional[str]:
    """A digest of the bytes of `path`, or None when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return hashlib.blake2b(handle.read(), digest_size=20).hexdigest()
    except OSError:
        return None


def user_cache_dir() -> str:
    """compile-lint's directory in the user's cache: $XDG_CACHE_HOME, else the platform's place."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative value is invalid and ignored
        if sys.platform == "win32":
            base = os.environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local")
        elif sys.platform == "darwin":
            base = os.path.join(os.path.expanduser("~"), "Library", "Caches")
        else:
            base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "compile-lint")


def cache_root(config: Config) -> str:
    """Where the cache lives: next to the project's config file, else in the user's cache directory.

    A run outside any project (no pyproject.toml above the working directory) must not
    leave a cache directory wherever it happened to run.
    """
    if config.source:
        return os.path.join(os.path.abspath(config.root), CACHE_DIR_NAME)
    return user_cache_dir()


def _encode(diagnostic: Diagnostic) -> list:
    fix = diagnostic.fix
    return [
        diagnostic.line, diagnostic.column, diagnostic.end_line, diagnostic.end_column,
        diagnostic.code, diagnostic.name, diagnostic.kind, diagnostic.message,
        diagnostic.gb_type, diagnostic.gb_id, diagnostic.mode, diagnostic.condition,
        [list(link) for link in diagnostic.reached_from],
        None if fix is None else [
            fix.applicability, fix.message,
            [[e.line, e.column, e.end_line, e.end_column, e.content] for e in fix.edits],
            [list(operand) for operand in fix.rests_on],
        ],
        None if diagnostic.inside is None else _encode_inside(diagnostic.inside),
        diagnostic.help,
    ]


def _encode_inside(inside: Inside) -> list:
    return [inside.path, inside.package_path, inside.line, inside.function, inside.code, inside.message,
            inside.package, inside.version, [list(link) for link in inside.via], inside.count]


def _decode_inside(item: Optional[list]) -> Optional[Inside]:
    if item is None:
        return None
    path, package_path, line, function, code, message, package, version, via, count = item
    return Inside(path, package_path, line, function, code, message, package, version,
                  tuple((p, n, f) for p, n, f in via), count)


def _decode(path: str, item: list) -> Diagnostic:
    line, column, end_line, end_column, code, name, kind, message, gb_type, gb_id, mode, condition, reached, fix, \
        inside, help_text = item
    decoded_fix = None
    if fix is not None:
        applicability, fix_message, edits, rests_on = fix
        decoded_fix = Fix(applicability, fix_message, tuple(Edit(*edit) for edit in edits),
                          tuple((source, evidence) for source, evidence in rests_on))
    return Diagnostic(path, line, column, end_line, end_column, code, name, kind, message,
                      gb_type, gb_id, decoded_fix, mode=mode, condition=condition,
                      reached_from=tuple((path, line, function) for path, line, function in reached),
                      inside=_decode_inside(inside), help=help_text)


class CachedLint(NamedTuple):
    """A cache entry: the file's findings, and the modules its traced code calls (engine/called_modules.py)."""

    diagnostics: list[Diagnostic]
    called_modules: tuple[tuple[str, int], ...]


class LintCache:
    """Read and write cached findings for one run's configuration."""

    def __init__(self, root: str, config: Config) -> None:
        self.root = root
        self.directory = os.path.join(root, settings_key(config))
        self._made: set[str] = set()  # entry directories known to exist
        self._digests: dict[str, Optional[str]] = {}  # dependency path -> digest, read once per run

    @classmethod
    def for_run(cls, root: str, config: Config) -> "LintCache":
        """The cache of `root` for `config`, made once per process (workers write entries through it)."""
        key = (root, config)
        cache = _RUN_CACHES.get(key)
        if cache is None:
            cache = _RUN_CACHES[key] = cls(root, config)
        return cache

    def _dependency_digest(self, path: str) -> Optional[str]:
        if path not in self._digests:
            self._digests[path] = file_digest(path)
        return self._digests[path]

    def _entry(self, digest: str) -> str:
        return os.path.join(self.directory, digest[:2], digest + ".json")

    def get(self, path: str, digest: str) -> Optional[CachedLint]:
        """The cached lint of `path` with content `digest`, or None (missing or unreadable)."""
        try:
            with open(self._entry(digest), "rb") as handle:
                data = json.loads(handle.read())
            if data.get("format") != FORMAT or data.get("path") != path:
                return None
            for dependency, digest in data["dependencies"]:
                if self._dependency_digest(dependency) != digest:
                    return None  # a file this one's analysis read has changed
            return CachedLint([_decode(path, item) for item in data["diagnostics"]],
                              tuple((module, line) for module, line in data["modules"]))
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None

    def put(self, path: str, digest: str, diagnostics: Sequence[Diagnostic], dependencies: Iterable[str] = (),
            called_modules: Sequence[tuple[str, int]] = ()) -> None:
        """Store findings atomically; a cache that cannot be written is silently skipped.

        `dependencies` are the other files the findings were computed from; they are
        stored with their current digests. `called_modules` are the modules the file's
        traced code calls into (module, line).
        """
        entry = self._entry(digest)
        payload = json.dumps(
            {"format": FORMAT, "path": path, "diagnostics": [_encode(d) for d in diagnostics],
             "dependencies": [[dep, self._dependency_digest(dep)] for dep in sorted(dependencies)],
             "modules": [list(item) for item in called_modules]},
            separators=(",", ":"),
        ).encode()
        try:
            directory = os.path.dirname(entry)
            if directory not in self._made:
                os.makedirs(directory, exist_ok=True)
                self._mark_root()
                self._made.add(directory)
            with atomic_file(entry) as stream:
                stream.write(payload)
        except OSError:
            pass

    def _mark_root(self) -> None:
        """Keep the cache out of git and backups, as ruff and pytest do."""
        marker = os.path.join(self.root, ".gitignore")
        if os.path.exists(marker):
            return
        try:
            with open(marker, "w", encoding="utf-8") as handle:
                handle.write("# Created by compile-lint automatically.\n*\n")
            with open(os.path.join(self.root, "CACHEDIR.TAG"), "w", encoding="utf-8") as handle:
                handle.write("Signature: 8a477f597d28d172789f06886806bc55\n"
                             "# This file is a cache directory tag created by compile-lint.\n")
        except OSError:
            pass


# The verifier's Inductor kernels, kept in the user's cache directory between runs
# (verifier/isolation.py): not the lint cache, so `clean` leaves them.
INDUCTOR_CACHE_NAME = "torchinductor"


def clean(root: str) -> bool:
    """Remove the lint cache in `root` (all of it but the verifier's kernels); True when there was one."""
    if not os.path.isdir(root):
        return False
    entries = [name for name in os.listdir(root) if name != INDUCTOR_CACHE_NAME]
    if len(entries) == len(os.listdir(root)):
        shutil.rmtree(root, ignore_errors=True)
        return True
    for name in entries:
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.remove(path)
    return bool(entries)

"""The verifier's temporary directories: removed when a run ends, and after a run that was killed.

A run removes its directories on the way out, Ctrl-C and SIGTERM included. SIGKILL (or
`timeout -s KILL`, an out-of-memory kill) leaves no chance to, so each directory holds an
exclusive `flock` on a file inside it for as long as its run lives; the kernel drops the
lock when the process dies, however it dies. Every later run removes the directories of
this user whose lock it can take: their owners are gone. Where `fcntl` is missing
(Windows) directories are still removed on the way out, but not after a kill.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Iterator, Optional

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

OWNED_PREFIXES = ("compile-lint-verify-", "compile-lint-fixcheck-")
LOCK_NAME = ".owner.lock"


def _lock(path: str) -> Optional[int]:
    """An open descriptor holding an exclusive lock on `path`, or None when another process holds it."""
    # Not inherited by the workers: the lock must end with this process.
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    if fcntl is None:
        return descriptor
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        return None
    return descriptor


@contextlib.contextmanager
def owned_directory(prefix: str, parent: Optional[str] = None) -> Iterator[str]:
    """A fresh directory, removed when the block ends; at top level it is locked while the block runs.

    `parent`: make it inside that (already owned) directory instead of the temp dir.
    """
    directory = tempfile.mkdtemp(prefix=prefix, dir=parent)
    descriptor = None if parent is not None else _lock(os.path.join(directory, LOCK_NAME))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if descriptor is not None:
            os.close(descriptor)


def remove_stale(temp_dir: Optional[str] = None) -> list[str]:
    """Remove this user's verifier directories whose run has died (their lock is free); their paths.

    A directory without a lock file (made by a version that took none, or caught between its
    creation and its lock) is left alone: nothing says its run is over.
    """
    if fcntl is None:
        return []
    temp_dir = temp_dir or tempfile.gettempdir()
    try:
        names = os.listdir(temp_dir)
    except OSError:
        return []
    removed = []
    for name in names:
        path = os.path.join(temp_dir, name)
        lock_path = os.path.join(path, LOCK_NAME)
        if not name.startswith(OWNED_PREFIXES) or not os.path.isfile(lock_path):
            continue
        try:
            if os.lstat(path).st_uid != os.getuid():
                continue
            descriptor = _lock(lock_path)
        except OSError:
            continue
        if descriptor is None:
            continue  # its run is alive
        try:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        finally:
            os.close(descriptor)
    return removed

"""Writing a file atomically: a temp file beside it, renamed over it, so no reader sees half a file."""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
from typing import BinaryIO, Iterator, Optional

# What stops a run: held while a file is written, so that a worker whose SIGTERM ends it at once
# (engine/pool.py) still finishes the rename or removes its temp file first.
_HELD = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name))


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Stopping signals wait (in this thread) until the block ends; a no-op where threads have no signal mask."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def atomic_file(path: str, *, mode: Optional[int] = None, durable: bool = False) -> Iterator[BinaryIO]:
    """A binary stream whose content replaces `path` in one rename when the block ends.

    The temp file (`.compile-lint-*.tmp`) goes in `path`'s directory, so the rename never
    crosses file systems. When the block raises, `path` is untouched and the temp file is
    removed. `mode` sets the new file's permissions; `durable` syncs it to disk before the
    rename (a user's source file, not a cache entry). SIGTERM, SIGHUP and Ctrl-C wait until
    the file is replaced or the temp file removed: a stopped run leaves neither half a file
    nor a temp file.
    """
    with _signals_held():
        fd, temporary = tempfile.mkstemp(prefix=".compile-lint-", suffix=".tmp", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "wb") as stream:
                yield stream
                if durable:
                    stream.flush()
                    os.fsync(stream.fileno())
            if mode is not None:
                os.chmod(temporary, mode)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


def rewrite_file(path: str, data: bytes) -> None:
    """Replace an existing file (a user's source) with `data`, keeping its permissions, synced to disk.

    A symlink is written through: the temp file goes next to the link's resolved target
    and is renamed onto it, so the link stays a link and its target gets the new text.
    """
    target = os.path.realpath(path)
    mode = os.stat(target).st_mode & 0o7777
    if not mode & 0o222:
        # A read-only file is a statement of intent (generated or vendored code); root
        # could replace it, but a formatter-like tool should not.
        raise PermissionError(13, "file is read-only")
    with atomic_file(target, mode=mode, durable=True) as stream:
        stream.write(data)

"""A file's stamp: its modification time and size, the cheap test for "changed since last read"."""

from __future__ import annotations

import os
from typing import Iterable, Optional

Stamp = tuple[int, int]


def file_stamp(path: str) -> Optional[Stamp]:
    """(mtime in ns, size) of `path`, or None when it cannot be stat'ed (gone, unreadable)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def stamps(paths: Iterable[str]) -> dict[str, Stamp]:
    """The stamp of each path that has one (files and directories alike)."""
    return {path: stamp for path in paths if (stamp := file_stamp(path)) is not None}

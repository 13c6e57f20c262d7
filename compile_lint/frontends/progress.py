"""A progress bar for long runs, on terminals only, when tqdm or rich happens to be installed.

The core depends only on libcst, so both libraries are optional imports. The bar goes to
stderr and only when stderr is a terminal, so pipes, files, editors and CI logs never see it.
"""

from __future__ import annotations

import os
import sys
from typing import Iterable, Iterator, Optional, TextIO, TypeVar

T = TypeVar("T")
# Below this many files a run is over before a bar would help.
MIN_FILES = 50


def wants_progress(total: int, stream: Optional[TextIO] = None) -> bool:
    """True when a bar helps: many files, stderr is a terminal, and not CI or a dumb terminal."""
    stream = stream if stream is not None else sys.stderr
    if total < MIN_FILES or os.environ.get("CI") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _tqdm(items: Iterable[T], total: int, description: str, stream: TextIO) -> Optional[Iterator[T]]:
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return iter(tqdm(items, total=total, desc=description, unit="file", file=stream, leave=False, dynamic_ncols=True))


def _rich(items: Iterable[T], total: int, description: str, stream: TextIO) -> Optional[Iterator[T]]:
    try:
        from rich.console import Console
        from rich.progress import track
    except ImportError:
        return None
    return iter(track(items, total=total, description=description, console=Console(file=stream), transient=True))


def track(items: Iterable[T], total: int, description: str = "Linting", stream: Optional[TextIO] = None) -> Iterable[T]:
    """`items`, with a bar on stderr when `wants_progress(total)`; otherwise `items` unchanged."""
    stream = stream if stream is not None else sys.stderr
    if not wants_progress(total, stream):
        return items
    for backend in (_tqdm, _rich):
        wrapped = backend(items, total, description, stream)
        if wrapped is not None:
            return wrapped
    return items

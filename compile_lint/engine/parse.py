"""`libcst.parse_module` without re-validating what the parser just built.

Every libcst node validates itself on construction (`CSTNode.__post_init__` calls
`_validate`), also the hundred thousand nodes the parser builds for a large file, whose
validity the grammar has just established; libcst's own comment there says so ("It might
make more sense to move validation work into the visitor, which would allow us to avoid
validating the tree when parsing a file"). Skipping it makes a parse about 15% cheaper
and changes nothing in the tree. Only the thread inside `parse_module` here skips it;
nodes built anywhere else (rules' fixes, other threads, other libraries in the process)
validate as always.
"""

from __future__ import annotations

import threading
from typing import Optional

import libcst as cst
from libcst._nodes.base import CSTNode

_skipping_thread: Optional[int] = None  # the thread parsing here, if any
_lock = threading.Lock()  # one parse at a time skips validation; others validate
_validate_on_init = CSTNode.__post_init__
_get_ident = threading.get_ident


def _post_init(self: CSTNode) -> None:
    if _skipping_thread is None or _skipping_thread != _get_ident():
        self._validate()


def _install() -> None:
    if CSTNode.__post_init__ is not _post_init:
        CSTNode.__post_init__ = _post_init  # type: ignore[method-assign]


def parse_module(text: str) -> cst.Module:
    """`libcst.parse_module(text)`: the same tree, or the same error."""
    global _skipping_thread
    _install()
    if not _lock.acquire(blocking=False):
        return cst.parse_module(text)  # another thread is skipping: validate, as libcst does
    try:
        _skipping_thread = _get_ident()
        return cst.parse_module(text)
    finally:
        _skipping_thread = None
        _lock.release()

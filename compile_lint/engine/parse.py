"""`libcst.parse_module` without re-validating what the parser just built, and the files not to give it.

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

import ast
import re
import threading
import warnings
from itertools import accumulate
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


# CPython's tokenizer refuses more than 200 nested brackets ("too many nested parentheses",
# MAXLEVEL), and its AST builder an expression nested about 3,000 deep under the default
# recursion limit (`x + x + ... + x` of 3,000 terms: RecursionError). Python cannot compile
# such a file, so neither can torch.compile; libcst parses it anyway, at a cost that grows with
# the square of the depth (a 5,000-term sum: 8 s; 20,000: minutes), or overflows its native
# stack (3,000 nested calls: the process dies). Two cheap signs pick the files worth asking
# Python about first: a bracket depth over the tokenizer's limit, or a line long enough to
# hold such a chain.
PYTHON_MAX_BRACKET_DEPTH = 200
_LONG_LINE = re.compile(r"^[^\n]{8000}", re.MULTILINE)
_NOT_BRACKET = re.compile(r"[^()\[\]{}]+")
_BRACKET_STEP = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def python_rejects_nesting(text: str, path: str) -> Optional[tuple[int, int, str]]:
    """(line, column, message) when Python itself cannot compile `text` for how deeply it nests;
    None otherwise (also for every other syntax error, which libcst places as before).

    Costs a scan of the text (about 1% of a libcst parse) and, for the few texts that show a
    sign of deep nesting, Python's own parse (a twelfth of libcst's).
    """
    if not _LONG_LINE.search(text):
        brackets = _NOT_BRACKET.sub("", text)
        if len(brackets) <= PYTHON_MAX_BRACKET_DEPTH or max(
                accumulate(map(_BRACKET_STEP.__getitem__, brackets))) <= PYTHON_MAX_BRACKET_DEPTH:
            return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are not the question here
            compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (RecursionError, MemoryError):
        return 1, 1, "file is nested too deeply for Python to compile"
    except SyntaxError as error:
        if error.msg == "too many nested parentheses":
            return error.lineno or 1, error.offset or 1, f"SyntaxError: {error.msg}"
    except ValueError:  # a null byte: libcst reports it
        pass
    return None

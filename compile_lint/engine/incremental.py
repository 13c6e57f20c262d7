"""Incremental parsing for the language server: after an edit, parse only what changed.

libcst parses a 2,000-line model file in about 0.1 s of CPU, too slow to re-parse on every
keystroke. An edit usually changes one top-level statement; the others keep their text,
so their trees can be kept. `IncrementalParser` remembers the last module and where each
top-level statement's code starts, finds the statements an edit touched, parses their new
text alone and splices the new statements between the old ones. The edit is found by
comparing the new text with the last one (common prefix and suffix), so a client that
sends the whole text on every change gets the same splice as one that sends ranges.

The result must be the tree a full parse gives (the test suite compares them with
`deep_equals` after thousands of random edits of real files). A statement parsed alone
is the statement parsed in place when the text before it ends a statement at column 0
and the text after it starts one, so the splice is refused (and the whole file parsed)
whenever that cannot be shown from the old tree:

- the edit starts in the file's first line, in the header or footer comments, or before
  the end of the first statement that opens an indented block (the first line break and
  the first indentation set the module's `default_newline` and `default_indent`, which
  decide how every node stores its own);
- the edit starts on the first character of a statement's first line of code (indenting
  it would join the statement before): the statement before is parsed again too;
- the statement after the changed ones has indented blank or comment lines before its
  code (the block before it could take them as its footer): it is parsed again too;
- the new text does not parse alone, holds no statement, leaves comment lines after its
  last statement, or detects another default indentation or line break;
- libcst does not regenerate the last text exactly (see `positions.round_trips`).
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Optional

import libcst as cst

from compile_lint.engine.parse import parse_module
from compile_lint.engine.positions import round_trips

_FALLBACK_INDENT = " " * 4  # what libcst assumes when a text has no indented block
_FIRST_BREAK = re.compile(r"\r\n?|\n")


def _opens_block(statement: cst.CSTNode) -> bool:
    """Whether a top-level statement holds an indented block (so, an INDENT token)."""
    if isinstance(statement, cst.Match):
        return True
    if not isinstance(statement, cst.BaseCompoundStatement):
        return False
    parts = [statement.body, getattr(statement, "orelse", None), getattr(statement, "finalbody", None)]
    parts += [handler.body for handler in getattr(statement, "handlers", ())]
    while parts:
        part = parts.pop()
        if isinstance(part, cst.IndentedBlock):
            return True
        if isinstance(part, (cst.If, cst.Else, cst.Finally)):  # elif chains, else and finally clauses
            parts.append(part.body)
            parts.append(getattr(part, "orelse", None))
    return False


class IncrementalParser:
    """Parses successive versions of one document, re-parsing only the statements an edit touched."""

    def __init__(self) -> None:
        self.text: Optional[str] = None
        self.module: Optional[cst.Module] = None
        # Where each top-level statement's code starts (leading lines included); None until `prepare`.
        self.starts: Optional[list[int]] = None
        self.body_end = 0  # where the footer starts
        self.reused = 0  # statements kept from the last tree by the last parse (for tests and benchmarks)

    def parse(self, text: str) -> cst.Module:
        """The module for `text`, as `libcst.parse_module(text)` gives it; raises its ParserSyntaxError."""
        module = self._splice(text) if self.module is not None else None
        if module is None:
            self.reused = 0
            module = parse_module(text)
            self._remember(text, module)
            if not round_trips(module, text):
                self.module = None  # offsets from libcst's code would not be the text's: parse it all next time
        return module

    @property
    def unprepared(self) -> bool:
        """Whether the last tree came from a full parse and `prepare` has not run since."""
        return self.module is not None and self.starts is None

    def prepare(self) -> None:
        """Find where each top-level statement of the last tree starts, if not yet done.

        The next splice needs it; a full parse leaves it undone, so a host can do it
        while nothing waits, after publishing the first findings (a splice does it when
        it was not done). The lines `ast` gives each statement's code say it at a tenth
        of the cost of rendering every statement, which is done only when they do not
        agree with the tree.
        """
        module, text = self.module, self.text
        if module is None or text is None or self.starts is not None:
            return
        self.starts, self.body_end = _starts_from_lines(module, text) or _starts_by_rendering(module)

    def _remember(self, text: str, module: cst.Module, starts: Optional[list[int]] = None,
                  body_end: int = 0) -> None:
        # Without `starts` (a full parse), `prepare` finds them when they are first needed.
        self.text, self.module = text, module
        self.starts, self.body_end = starts, body_end

    def _first_code_offset(self, index: int) -> int:
        """Where statement `index`'s first line of code (a decorator or its keyword) starts."""
        module, starts = self.module, self.starts
        assert module is not None and starts is not None  # asked only of a prepared tree
        statement = module.body[index]
        return starts[index] + sum(len(module.code_for_node(line)) for line in statement.leading_lines)

    def _splice(self, text: str) -> Optional[cst.Module]:
        old, module = self.text, self.module
        assert old is not None and module is not None
        if text == old:
            self.reused = len(module.body)
            return module
        body = module.body
        count = len(body)
        if count == 0 or not module.has_trailing_newline or not text.endswith(("\n", "\r")):
            return None  # a text without a final newline: libcst's module says so, a splice would not
        self.prepare()
        starts = self.starts
        assert starts is not None
        # The changed region: old[first:old_end] became text[first:new_end].
        limit = min(len(old), len(text))
        first = _common_prefix(old, text, limit)
        suffix = _common_prefix(old[::-1], text[::-1], limit - first)
        old_end, delta = len(old) - suffix, len(text) - len(old)
        # Edits before or in the first line, the header, the first block, or the footer: parse it all.
        first_break = _FIRST_BREAK.search(old)
        if first_break is None or first <= first_break.end() or first < starts[0] or old_end > self.body_end:
            return None
        opener = next((index for index, statement in enumerate(body) if _opens_block(statement)), None)
        if opener is None or first < starts[opener] + self._length(opener):
            return None
        low = max(index for index in range(count) if starts[index] <= first)
        high = max(low, max(index for index in range(count) if starts[index] < max(old_end, first + 1)))
        if first <= self._first_code_offset(low):
            low -= 1  # the edit may indent the statement's first line into the block before it
            if low < 0:
                return None
        if high + 1 < count:
            following = body[high + 1]
            if any(line.whitespace.value for line in following.leading_lines):
                high += 1  # indented lines the block before may take as its footer
        start = starts[low]
        end = (starts[high + 1] if high + 1 < count else self.body_end)
        if end < old_end or start > first:
            return None
        chunk = text[start:end + delta]
        try:
            part = parse_module(chunk)
        except Exception:  # noqa: BLE001 - a syntax error (or anything else): the full parse reports it
            return None
        if not part.body or part.footer or part.default_newline != module.default_newline:
            return None
        if part.default_indent != module.default_indent and not (
            part.default_indent == _FALLBACK_INDENT and not any(_opens_block(s) for s in part.body)
        ):
            return None
        new_statements = list(part.body)
        if part.header:
            new_statements[0] = new_statements[0].with_changes(
                leading_lines=(*part.header, *new_statements[0].leading_lines))
        if len(new_statements) == 1 and round_trips(part, chunk):
            lengths = [len(chunk)]  # the chunk is the statement's code (with the header as its leading lines)
        else:
            lengths = [len(module.code_for_node(statement)) for statement in new_statements]
            if sum(lengths) != len(chunk):
                return None
        new_starts = starts[:low]
        offset = start
        for length in lengths:
            new_starts.append(offset)
            offset += length
        new_starts.extend(position + delta for position in starts[high + 1:])
        spliced = module.with_changes(body=(*body[:low], *new_statements, *body[high + 1:]))
        self.reused = count - (high + 1 - low)
        self._remember(text, spliced, new_starts, self.body_end + delta)
        return spliced

    def _length(self, index: int) -> int:
        starts = self.starts
        assert starts is not None
        following = starts[index + 1] if index + 1 < len(starts) else self.body_end
        return following - starts[index]


def _common_prefix(a: str, b: str, limit: int) -> int:
    """Length of the longest common prefix of `a` and `b`, at most `limit` (compared in C, by halves)."""
    low, high = 0, limit
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _starts_by_rendering(module: cst.Module) -> tuple[list[int], int]:
    """(where each top-level statement's code starts, where the footer starts), by rendering each statement."""
    offset = sum(len(module.code_for_node(line)) for line in module.header)
    starts = []
    for statement in module.body:
        starts.append(offset)
        offset += len(module.code_for_node(statement))
    return starts, offset


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# A line holding only a backslash continuation (`\` alone, maybe indented).
_LONE_CONTINUATION = re.compile(r"(?:^|[\r\n])[ \t\f]*\\(?:\r\n|\r|\n)")


def _first_code_lines(text: str) -> Optional[list[int]]:
    """The 1-based line where each top-level statement line's code starts (its first decorator), per `ast`.

    Statements `ast` lists on one line (`a = 1; b = 2`) are one libcst statement line,
    so they count once. None when `ast` does not parse the text.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like: not the question here
            tree = compile(text, "<document>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines: list[int] = []
    last_end = 0
    for statement in tree.body:  # type: ignore[attr-defined]
        decorators = getattr(statement, "decorator_list", None)
        first = min([statement.lineno, *(d.lineno for d in decorators)]) if decorators else statement.lineno
        if first > last_end:
            lines.append(first)
        last_end = statement.end_lineno or statement.lineno
    return lines


def _starts_from_lines(module: cst.Module, text: str) -> Optional[tuple[list[int], int]]:
    """(where each top-level statement's code starts, where the footer starts), from `ast`'s lines.

    A statement's code is its leading blank and comment lines (one line each), then the
    line `ast` puts its first decorator or keyword on. None when that does not add up
    (the statements do not match one to one, or the offsets would not increase).
    """
    if not module.has_trailing_newline:
        return None  # the last statement's rendering would hold a line break the text does not
    if not round_trips(module, text):
        return None  # libcst's code is not the text (a lone `\` line): only its own rendering places it
    if _LONE_CONTINUATION.search(text):
        return None  # a `\` line that round-trips belongs to the next statement but is none of its lines
    code_lines = _first_code_lines(text)
    body = module.body
    if code_lines is None or len(code_lines) != len(body):
        return None
    offsets = [0] + [match.end() for match in _LINE_BREAK.finditer(text)]  # where each line starts
    starts: list[int] = []
    for statement, line in zip(body, code_lines):
        first = line - 1 - len(statement.leading_lines)
        if first < 0 or first >= len(offsets) or (starts and offsets[first] <= starts[-1]):
            return None
        starts.append(offsets[first])
    body_end = len(text) - sum(len(module.code_for_node(line)) for line in module.footer)
    if starts and body_end <= starts[-1]:
        return None
    return starts, body_end

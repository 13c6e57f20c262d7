"""One text's lines and comment tokens, each found once, on first use (as ruff's Locator and Indexer).

A lint asks several questions of the same text: which lines carry a `# noqa` (every
finding's line), which comments are file-level directives, which directives are
malformed or unused, and where `--add-noqa` may append a comment. Each asks a
`SourceIndex`, which splits the text into lines once and tokenizes it once, only when a
question needs tokens.
"""

from __future__ import annotations

import io
import tokenize
from typing import Optional

from compile_lint.core.text_offsets import split_lines


class SourceIndex:
    """Lazily computed facts about one source text: its lines and its comments."""

    __slots__ = ("text", "_lines", "_comments", "_closed", "_token_error")

    def __init__(self, text: str) -> None:
        self.text = text
        self._lines: Optional[list[str]] = None
        self._comments: Optional[dict[int, tuple[int, str]]] = None
        self._closed: set[int] = set()
        self._token_error: Optional[Exception] = None

    @property
    def lines(self) -> list[str]:
        """The lines with their line breaks, counted as Python and libcst count them."""
        if self._lines is None:
            self._lines = split_lines(self.text)
        return self._lines

    @property
    def comments(self) -> dict[int, tuple[int, str]]:
        """Per line number: its comment token's (column, text).

        Read from tokens, so a `#` inside a string is no comment. Raises tokenize.TokenError
        or SyntaxError (the same one each time) when the text does not tokenize.
        """
        self._tokenize()
        return self._comments  # type: ignore[return-value]

    @property
    def closed_lines(self) -> set[int]:
        """The lines a comment cannot be appended to: a string continues past their end (the
        comment would be string content), or they end in a backslash continuation. Raises as
        `comments` does."""
        self._tokenize()
        return self._closed

    def _tokenize(self) -> None:
        if self._token_error is not None:
            raise self._token_error
        if self._comments is not None:
            return
        comments: dict[int, tuple[int, str]] = {}
        closed: set[int] = set()
        try:
            for token in tokenize.generate_tokens(io.StringIO(self.text).readline):
                (row, column), (end_row, _) = token.start, token.end
                if token.type == tokenize.COMMENT:
                    comments[row] = (column, token.string)
                elif end_row > row and token.type not in (tokenize.NL, tokenize.NEWLINE):
                    closed.update(range(row, end_row))  # a multi-line string (or f-string part)
        except (tokenize.TokenError, SyntaxError) as error:
            self._token_error = error
            raise
        for number, line in enumerate(self.lines, 1):
            if line.rstrip("\r\n").endswith("\\") and number not in comments:
                closed.add(number)
        self._comments, self._closed = comments, closed

"""Character offsets and 1-based (line, column) positions in source text.

Line breaks are counted as Python and libcst count them ("\\r\\n", "\\n" and a lone "\\r"),
so positions agree with the findings' positions.
"""

from __future__ import annotations

import re

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def line_starts(text: str) -> list[int]:
    """The character offset at which each line of `text` starts."""
    return [0] + [match.end() for match in _LINE_BREAK.finditer(text)]


def line_and_column(starts: list[int], offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset, given `line_starts(text)`."""
    low, high = 0, len(starts) - 1
    while low < high:
        mid = (low + high + 1) // 2
        if starts[mid] <= offset:
            low = mid
        else:
            high = mid - 1
    return low + 1, offset - starts[low] + 1


def split_lines(text: str) -> list[str]:
    """Lines with their line breaks, split where `line_starts` starts a line."""
    starts = line_starts(text)
    ends = starts[1:] + [len(text)]
    return [text[start:end] for start, end in zip(starts, ends) if end > start]

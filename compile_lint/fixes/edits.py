"""Apply text edits: non-overlapping fixes, back to front."""

from __future__ import annotations

from typing import Iterable

from compile_lint.core.diagnostics import Edit, Fix
from compile_lint.core.text_offsets import line_starts


def edit_offsets(text: str, edit: Edit) -> tuple[int, int]:
    """Character offsets of an edit's range in `text`."""
    starts = line_starts(text)
    start = starts[edit.line - 1] + edit.column - 1 if edit.line - 1 < len(starts) else len(text)
    end = starts[edit.end_line - 1] + edit.end_column - 1 if edit.end_line - 1 < len(starts) else len(text)
    return start, end


def apply_fixes(text: str, fixes: Iterable[Fix]) -> tuple[str, list[Fix]]:
    """Apply the fixes whose edits do not overlap an earlier one; return text and applied fixes."""
    taken: list[tuple[int, int]] = []
    chosen: list[tuple[Fix, list[tuple[int, int, str]]]] = []
    for fix in fixes:
        spans = [(*edit_offsets(text, edit), edit.content) for edit in fix.edits]
        overlaps = any(
            start < t_end and t_start < end or (start == end == t_start) or (t_start == t_end == start)
            for start, end, _ in spans
            for t_start, t_end in taken
        )
        if overlaps:
            continue
        taken.extend((start, end) for start, end, _ in spans)
        chosen.append((fix, spans))
    all_spans = sorted((span for _, spans in chosen for span in spans), key=lambda s: (s[0], s[1]), reverse=True)
    for start, end, content in all_spans:
        text = text[:start] + content + text[end:]
    return text, [fix for fix, _ in chosen]

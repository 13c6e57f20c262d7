"""Positions of the reported nodes, rendering only the statements that hold them.

libcst's `PositionProvider` regenerates the code of the whole module (and its
`MetadataWrapper` rebuilds the tree first) to place every node: on a 2,000-line model file
that costs more than the parse. A linter needs the positions of the few nodes it reports.

This relies on libcst regenerating the source exactly, which it does except around a few
rare spellings (a backslash continuation inside indentation, a form feed, a lone carriage
return; see `round_trips`): a source with one of those is checked once, and when libcst
does not reproduce it, every position comes from PositionProvider, as before.

Each finding comes with its anchors: the statements that held it while the rules walked
(the top-level statement, then each enclosing function, innermost last), with the
indentation libcst's code generation has at each. An anchor is rendered alone, with
libcst's own position-tracking code generation, and placed in the source by its text:
the module's code is the source (libcst round-trips it), so an anchor's rendering occurs
in the source at the anchor's offset, and when it occurs there once, that is where the
anchor is. A node whose anchors are all ambiguous (the same text twice) falls back to
libcst's `PositionProvider`, so every position is exactly the one it computes
(tests/test_positions.py compares them on the rule examples and real files).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional, Sequence, cast

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from compile_lint.analysis.syntax.codegen import Span, render_at, render_with_spans
from compile_lint.core.text_offsets import line_and_column, line_starts, split_lines

# A statement that holds a node, and the indentation libcst's codegen has at its start.
Anchor = tuple[cst.CSTNode, tuple[str, ...]]


@dataclass
class Rendering:
    """An anchor rendered alone: its code, where that is in the source, and its nodes' spans and extents.

    Spans and extents, by id of the node, count lines from 1 at the anchor's first line; add
    `shift` for the file's.
    """

    text: str
    offset: int
    shift: int
    spans: dict
    extents: dict
    _line_starts: Optional[list[int]] = None

    def line_starts(self) -> list[int]:
        """Where each line of `text` starts (found once: every fix inside the anchor asks)."""
        if self._line_starts is None:
            self._line_starts = line_starts(self.text)
        return self._line_starts


# What libcst is known to regenerate differently (its issues #951, #446): backslash
# continuations (in indentation), form feeds, lone carriage returns.
_RISKY = ("\\\n", "\\\r", "\x0c")


def round_trips(module: cst.Module, source: str) -> bool:
    """Whether `module.code == source`, checked (a whole-module codegen) only for sources with a risky spelling."""
    if not any(risky in source for risky in _RISKY) and source.count("\r") == source.count("\r\n"):
        return True
    return module.code == source


class RenderCache:
    """Renderings kept from one lint of a document to the next (the language server's).

    libcst nodes are immutable and the incremental parser keeps the nodes of every
    statement an edit did not touch, so a kept node renders to the same text as before;
    only where that text now is in the file has to be found again. Entries hold their
    node, so a node's id cannot be reused while its entry lives; the oldest are dropped.
    """

    def __init__(self, limit: int = 512) -> None:
        self.limit = limit
        self._entries: "OrderedDict[tuple, tuple[cst.CSTNode, object]]" = OrderedDict()

    def get(self, node: cst.CSTNode, key: tuple) -> Optional[object]:
        """What was stored for `node` under `key`, or None."""
        entry = self._entries.get((id(node), *key))
        if entry is None or entry[0] is not node:
            return None
        self._entries.move_to_end((id(node), *key))
        return entry[1]

    def put(self, node: cst.CSTNode, key: tuple, value: object) -> None:
        """Keep `value` for `node` under `key`."""
        entry_key = (id(node), *key)
        self._entries[entry_key] = (node, value)
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)


class NodePositions:
    """Spans of chosen nodes of one module, each computed from the smallest anchor that places it."""

    def __init__(self, module: cst.Module, source: str, cache: Optional[RenderCache] = None) -> None:
        self.module = module
        self.source = source
        self.cache = cache
        self.faithful = round_trips(module, source)
        self._starts: Optional[list[int]] = None
        self._lines: Optional[dict[int, list[int]]] = None  # see `_line_index`
        self._rendered: dict[int, Optional[Rendering]] = {}  # by id of the anchor's node
        self._whole: Optional[dict] = None

    def line_of(self, offset: int) -> int:
        """1-based line of a character offset of the source."""
        return line_and_column(self._line_starts(), offset)[0]

    def locate(self, text: str) -> Optional[int]:
        """The offset where `text`, the rendering of some statement of the module, is in the source; None if unsure.

        It is there exactly once, unless it ends the file: libcst renders the module's last
        line break even when the source lacks one, so there it is the text without it.
        """
        source = self.source
        if not text or not self.faithful:
            return None
        count, found = self._occurrences(text)
        at_end = None
        if not self.module.has_trailing_newline:
            stripped = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith(("\n", "\r")) else text
            if stripped != text and stripped and source.endswith(stripped):
                at_end = len(source) - len(stripped)
        if count + (at_end is not None) != 1:
            return None
        return found if count else at_end

    def _occurrences(self, text: str) -> tuple[int, Optional[int]]:
        """How many times (0, 1, or 2 for more) `text`, a statement's rendering, starts a line of the
        source, and where it does first.

        A statement starts a line, so only lines can start it: the lines of the source are
        indexed once, and `text` is compared at each line holding its least common complete
        line. Searching the whole source for every finding's statements made a file of many
        findings quadratic (10,000 findings in a 50,000-line file: 10 s of `str.count`). An
        occurrence inside a line (in a string) is none: the statement is the one that starts
        a line. A text with a lone carriage return (whose line breaks the source may pair
        with the next character) or without a complete line is searched for as before.
        """
        source = self.source
        pieces = split_lines(text)
        complete = [index for index, piece in enumerate(pieces) if piece.endswith("\n")]
        if not complete or text.count("\r") != text.count("\r\n"):
            count = source.count(text)
            return min(count, 2), (source.find(text) if count else None)
        lines = self._line_index()
        offsets_in_text = [0]
        for piece in pieces:
            offsets_in_text.append(offsets_in_text[-1] + len(piece))
        best: Optional[tuple[int, list[int]]] = None
        for index in complete:
            candidates = lines.get(hash(pieces[index]), [])
            if best is None or len(candidates) < len(best[1]):
                best = (index, candidates)
                if len(candidates) <= 1:
                    break
        assert best is not None  # `complete` is not empty
        index, candidates = best
        starts = self._line_starts()
        found: list[int] = []
        for line in candidates:
            offset = starts[line] - offsets_in_text[index]
            if offset < 0 or line - index < 0 or starts[line - index] != offset:
                continue  # the text's first line would not start a line of the source there
            if source.startswith(text, offset):
                found.append(offset)
                if len(found) == 2:
                    break
        return len(found), (found[0] if found else None)

    def _line_starts(self) -> list[int]:
        if self._starts is None:
            self._starts = line_starts(self.source)
        return self._starts

    def _line_index(self) -> dict[int, list[int]]:
        """hash of each line of the source (with its line break) -> the 0-based numbers of the lines with that hash."""
        if self._lines is None:
            starts = self._line_starts()
            source = self.source
            index: dict[int, list[int]] = {}
            ends = starts[1:] + [len(source)]
            for number, (start, end) in enumerate(zip(starts, ends)):
                index.setdefault(hash(source[start:end]), []).append(number)
            self._lines = index
        return self._lines

    def rendering(self, anchor: Anchor) -> Optional[Rendering]:
        """The anchor rendered and placed in the source (once), or None when it cannot be placed."""
        if not self.faithful:
            return None
        node, indent_tokens = anchor
        key = id(node)
        if key not in self._rendered:
            cache_key = ("spans", tuple(indent_tokens), self.module.default_indent, self.module.default_newline)
            # The cache holds what `put` kept under this key: render_with_spans's triple.
            rendered = cast(Optional[tuple[str, dict, dict]],
                            self.cache.get(node, cache_key) if self.cache is not None else None)
            if rendered is None:
                rendered = render_with_spans(self.module, node, indent_tokens)
                if self.cache is not None:
                    self.cache.put(node, cache_key, rendered)
            text, spans, extents = rendered
            offset = self.locate(text)
            self._rendered[key] = None if offset is None else Rendering(
                self.source[offset:offset + len(text)], offset, self.line_of(offset) - 1, spans, extents)
        return self._rendered[key]

    def code_for(self, node: cst.CSTNode) -> str:
        """`module.code_for_node(node)`, kept in the cache when there is one."""
        key = ("code", self.module.default_indent, self.module.default_newline)
        code = self.cache.get(node, key) if self.cache is not None else None
        if code is None:
            code = render_at(self.module, node)
            if self.cache is not None:
                self.cache.put(node, key, code)
        return code  # type: ignore[return-value]

    def code_at(self, node: cst.CSTNode, indent: str) -> str:
        """The code of a statement indented by `indent`, kept in the cache when there is one."""
        key = ("code at", indent, self.module.default_indent, self.module.default_newline)
        code = self.cache.get(node, key) if self.cache is not None else None
        if code is None:
            code = render_at(self.module, node, [indent] if indent else [])
            if self.cache is not None:
                self.cache.put(node, key, code)
        return code  # type: ignore[return-value]

    def is_rendered(self, anchor: Anchor) -> bool:
        """Whether the anchor has been rendered already (asking for its rendering then costs nothing)."""
        return id(anchor[0]) in self._rendered

    def span(self, node: cst.CSTNode, anchors: Sequence[Anchor] = ()) -> Span:
        """The span PositionProvider gives `node`, from the innermost anchor that places it."""
        for anchor in reversed(anchors):
            rendering = self.rendering(anchor)
            if rendering is not None:
                span = rendering.spans.get(id(node))
                if span is not None:
                    shift = rendering.shift
                    return (span[0] + shift, span[1], span[2] + shift, span[3])
        return self.whole()[node]

    def whole(self) -> dict:
        """Every node's span, from libcst's PositionProvider over the whole module (the fallback)."""
        if self._whole is None:
            try:
                ranges = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
            except KeyError as error:
                # libcst's position codegen recurses per nesting level; on very deep code its
                # RecursionError surfaces as a KeyError in its context managers.
                raise RecursionError("too deeply nested to resolve positions") from error
            self._whole = {
                node: (r.start.line, r.start.column, r.end.line, r.end.column) for node, r in ranges.items()
            }
        return self._whole

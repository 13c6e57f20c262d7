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

import contextlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional, Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState  # what Module.code_for_node renders with
from libcst.metadata import MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from compile_lint.core.text_offsets import line_and_column, line_starts

# (start line 1-based, start column 0-based, end line, end column), as libcst's CodeRange.
Span = tuple[int, int, int, int]
# A statement that holds a node, and the indentation libcst's codegen has at its start.
Anchor = tuple[cst.CSTNode, tuple[str, ...]]


class _Recorder:
    """`record_syntactic_position` as a plain context manager (libcst's is a generator)."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: "_PositionState", node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, exc_type, *exc_info) -> None:
        if exc_type is not None:
            return  # let a RecursionError from deep code through, as it is
        state = self.state
        computed = state.spans
        start = computed[id(self.start_node)][:2] if self.start_node is not None else self.start
        end = computed[id(self.end_node)][2:] if self.end_node is not None else (state.line, state.column)
        computed[id(self.node)] = start + end


class _PositionState(PositionProvidingCodegenState):
    """libcst's position-tracking codegen state, with tuples instead of dataclasses.

    Same rules as `PositionProvidingCodegenState` (a node's span is where its code
    starts and ends, narrowed to its syntactic part where libcst records one), at a
    fraction of the cost: most tokens hold no line break and skip the regular expression.
    """

    __slots__ = ("spans", "extents", "starts")

    def __init__(self, default_indent: str, default_newline: str, indent_tokens: Sequence[str]) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline, provider=None,
                         indent_tokens=list(indent_tokens))
        # By id of the node (a node's own hash is a Python call; the rendered nodes stay alive).
        self.spans: dict[int, Span] = {}
        self.extents: dict[int, Span] = {}  # whitespace included: where the node's code starts and ends
        self.starts: list[tuple[int, int]] = []

    def _update_position(self, value: str) -> None:
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
        else:
            super()._update_position(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        extent = self.starts.pop() + (self.line, self.column)
        key = id(node)
        self.extents[key] = extent
        if key not in self.spans:
            self.spans[key] = extent

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):  # type: ignore[override]
        return _Recorder(self, node, start_node, end_node)


class _PlainState(CodegenState):
    """libcst's code generation state, without a generator per node for positions nobody records."""

    __slots__ = ()

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):  # type: ignore[override]
        return _NO_POSITION


_NO_POSITION = contextlib.nullcontext()


def render_at(module: cst.Module, node: cst.CSTNode, indent_tokens: Sequence[str] = ()) -> str:
    """The code of `node` at an indentation, as the module's code generation writes it there."""
    state = _PlainState(default_indent=module.default_indent, default_newline=module.default_newline,
                        indent_tokens=list(indent_tokens))
    node._codegen(state)
    return "".join(state.tokens)


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


def render_with_spans(module: cst.Module, node: cst.CSTNode, indent_tokens: Sequence[str] = ()) -> tuple[str, dict, dict]:
    """The code of `node` as it is in `module` at that indentation, and every node's span and extent in it."""
    state = _PositionState(module.default_indent, module.default_newline, indent_tokens)
    node._codegen(state)
    return "".join(state.tokens), state.spans, state.extents


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
        self._entries[(id(node), *key)] = (node, value)
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
        self._rendered: dict[int, Optional[Rendering]] = {}  # by id of the anchor's node
        self._whole: Optional[dict] = None

    def line_of(self, offset: int) -> int:
        """1-based line of a character offset of the source."""
        if self._starts is None:
            self._starts = line_starts(self.source)
        return line_and_column(self._starts, offset)[0]

    def locate(self, text: str) -> Optional[int]:
        """The offset where `text`, the rendering of some statement of the module, is in the source; None if unsure.

        It is there exactly once, unless it ends the file: libcst renders the module's last
        line break even when the source lacks one, so there it is the text without it.
        """
        source = self.source
        if not text or not self.faithful:
            return None
        count = source.count(text)
        at_end = None
        if not self.module.has_trailing_newline:
            stripped = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith(("\n", "\r")) else text
            if stripped != text and stripped and source.endswith(stripped):
                at_end = len(source) - len(stripped)
        if count + (at_end is not None) != 1:
            return None
        return source.find(text) if count else at_end

    def rendering(self, anchor: Anchor) -> Optional[Rendering]:
        """The anchor rendered and placed in the source (once), or None when it cannot be placed."""
        if not self.faithful:
            return None
        node, indent_tokens = anchor
        key = id(node)
        if key not in self._rendered:
            cache_key = ("spans", tuple(indent_tokens), self.module.default_indent, self.module.default_newline)
            rendered = self.cache.get(node, cache_key) if self.cache is not None else None
            if rendered is None:
                rendered = render_with_spans(self.module, node, indent_tokens)
                if self.cache is not None:
                    self.cache.put(node, cache_key, rendered)
            text, spans, extents = rendered  # type: ignore[misc]
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

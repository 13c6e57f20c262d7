"""A node's code as its module's code generation writes it, at an indentation, with or without every node's span."""

from __future__ import annotations

import contextlib
from typing import Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState  # what Module.code_for_node renders with
from libcst.metadata.position_provider import PositionProvidingCodegenState

# (start line 1-based, start column 0-based, end line, end column), as libcst's CodeRange.
Span = tuple[int, int, int, int]


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
        # No metadata provider: this state keeps the spans itself (libcst's signature wants one).
        super().__init__(default_indent=default_indent, default_newline=default_newline,
                         provider=None,  # type: ignore[arg-type]
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

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _Recorder(self, node, start_node, end_node)


class _PlainState(CodegenState):
    """libcst's code generation state, without a generator per node for positions nobody records."""

    __slots__ = ()

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _NO_POSITION


_NO_POSITION = contextlib.nullcontext()


def render_at(module: cst.Module, node: cst.CSTNode, indent_tokens: Sequence[str] = ()) -> str:
    """The code of `node` at an indentation, as the module's code generation writes it there."""
    state = _PlainState(default_indent=module.default_indent, default_newline=module.default_newline,
                        indent_tokens=list(indent_tokens))
    node._codegen(state)
    return "".join(state.tokens)


def render_with_spans(module: cst.Module, node: cst.CSTNode,
                      indent_tokens: Sequence[str] = ()) -> tuple[str, dict, dict]:
    """The code of `node` as it is in `module` at that indentation, and every node's span and extent in it."""
    state = _PositionState(module.default_indent, module.default_newline, indent_tokens)
    node._codegen(state)
    return "".join(state.tokens), state.spans, state.extents

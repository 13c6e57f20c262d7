"""One Dynamo log message read into a graph break or a recompile, with its whole user stack.

The messages are the ones torch 2.11-2.13 writes to the `graph_breaks` and `recompiles`
logs, and as the `dynamo_graph_break_reason` / `recompile_reasons` artifacts of a
TORCH_TRACE (torch/_dynamo/symbolic_convert.py, convert_frame.py and guards.py):

- "Graph break in user code at PATH:LINE / Graph Break Reason: ... / User code traceback: FRAMES"
- "Graph break (user stack suppressed due to duplicate graph break) in user code at PATH:LINE
  / Graph Break Reason: ...": a break Dynamo already logged with its stack (same type, same
  frames), logged again without it
- "Graph break: torch.compile cannot properly resume from this graph break ... The graph break
  occurred in the following user code: FRAMES": the whole frame falls back to eager
- "Recompiling function NAME in PATH:LINE / triggered by the following guard failure(s):
  / - 0/0: GUARD  # SOURCE / - User stack trace: / -   FRAMES"

The parsing is structural (a traceback is `File "...", line N, in NAME` lines and the code
lines indented below them), so lines of other output caught inside a record are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Iterable, Optional, Sequence, Union

BREAK_MARKERS = (
    "Graph break in user code at ",
    "Graph break (user stack suppressed due to duplicate graph break) in user code at ",
    "Graph break: torch.compile cannot properly resume from this graph break",
)
RECOMPILE_MARKER = "Recompiling function "
MARKERS = BREAK_MARKERS + (RECOMPILE_MARKER,)

_LOCATION = re.compile(r"in user code at (?P<path>.+):(?P<line>\d+)\s*$")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<function>.+?))?\s*$')
_SKIPPED_FRAME = re.compile(r"skip tracing the frame (?P<function>\S+) \((?P<path>.+) line (?P<line>\d+)\)")
_GB_ID = re.compile(r"/gb/(gb\d+)\.html")
_RECOMPILING = re.compile(r"Recompiling function (?P<function>\S+) in (?P<path>.+):(?P<line>\d+)\s*$")
# `0/1: GUARD`, with a compiled-autograd id (`!0/0/1: `) where there is one.
_GUARD_ENTRY = re.compile(r"^(?:guard \d+ failures:|(?:!\d+/)?\d+/\d+: (?P<guard>.*))$")
_SIZE_GUARD = re.compile(r"(size|stride) mismatch at index")
_EXCEPTION_PREFIX = re.compile(r"^[\w.]+(?:Error|Exception|Unsupported|Unsupported\w*): ")
SKIPPED_FRAME_TYPE = "Frame skipped after a graph break"
_WHILE_HANDLING = "*** While handling this graph break, another graph break occurred"
# A break inside a higher-order op's body gets this line between its type and its Explanation.
_HOP_CONTEXT = "Higher Order Operator:"


class MalformedRecord(ValueError):
    """A message that starts as a Dynamo graph break or recompile but lacks what it must hold."""


@dataclass(frozen=True)
class Frame:
    """One frame of a user stack: file, line and function as the log spells them."""

    path: str
    line: int
    function: str = ""


@dataclass(frozen=True)
class GraphBreakRecord:
    """A graph break: Dynamo's location, the user stack (outermost first) and the break's type.

    `stack` is empty for a duplicate Dynamo logged without it (`stack_suppressed`); `then`
    lists the breaks hit while handling this one ("graph break in loop": the frame ran eagerly).
    """

    location: Frame
    stack: tuple[Frame, ...]
    gb_type: str
    gb_id: Optional[str] = None
    explanation: str = ""
    then: tuple[str, ...] = ()
    stack_suppressed: bool = False


@dataclass(frozen=True)
class RecompileRecord:
    """A recompile: the function compiled again, the guard that failed and where its value was read.

    `sizes_only` when every failed guard is a tensor size or stride (automatic dynamic: one
    more compile, harmless), as the verifier judges it.
    """

    function: Optional[Frame]  # None: a trace that ended before saying which (killed mid-compile)
    guard: str
    stack: tuple[Frame, ...] = ()
    sizes_only: bool = False


Record = Union[GraphBreakRecord, RecompileRecord]


def parse_record(message: str) -> Optional[Record]:
    """The graph break or recompile a log message holds; None for any other message.

    Raises MalformedRecord for a message that starts like one but cannot be read.
    """
    first = message.lstrip().split("\n", 1)[0]
    if first.startswith(RECOMPILE_MARKER):
        return _recompile(message)
    if first.startswith(BREAK_MARKERS[2]):
        return _skipped_frame(message)
    if first.startswith(BREAK_MARKERS):
        return _graph_break(message, suppressed=first.startswith(BREAK_MARKERS[1]))
    return None


def frames_after(lines: Sequence[str], start: int) -> tuple[Frame, ...]:
    """The traceback that starts at `lines[start]`: each `File` line, its indented code lines skipped.

    Blank lines and `=====` separators (a verbose log's two stacks) are passed over; any other
    unindented line ends it (the exception's own traceback, other output).
    """
    frames: list[Frame] = []
    for line in lines[start:]:
        found = _FRAME.match(line)
        if found:
            frames.append(Frame(found["path"], int(found["line"]), (found["function"] or "").strip()))
        elif not line.strip() or line.startswith((" ", "\t", "=")):
            continue
        else:
            break
    return tuple(frames)


def _index_of(lines: Sequence[str], text: str) -> Optional[int]:
    return next((index for index, line in enumerate(lines) if line.strip() == text), None)


def _break_types(lines: Sequence[str]) -> tuple[list[str], str]:
    """The graph-break type of a reason and of each break hit while handling it, and the first explanation.

    A type is the line before its `Explanation:`, or before the `Higher Order Operator: NAME`
    line Dynamo puts there for a break inside autograd.Function, torch.cond...; the breaks hit
    while handling the first each follow a `*** While handling this graph break, another graph
    break occurred: ***`.
    Only the first `Explanation:` of each part counts (other output caught below is not one).
    """
    parts: list[list[str]] = [[]]
    for line in lines:
        if line.strip().startswith(_WHILE_HANDLING):
            parts.append([])
        else:
            parts[-1].append(line)
    types: list[str] = []
    explanation = ""
    for part in parts:
        index = next((i for i, line in enumerate(part) if line.strip().startswith("Explanation:")), None)
        if index is None:
            continue
        previous = next((item.strip() for item in reversed(part[:index])
                         if item.strip() and not item.strip().startswith(_HOP_CONTEXT)), "")
        previous = previous.split("Graph Break Reason:", 1)[-1].strip()
        if not types:
            explanation = part[index].strip()[len("Explanation:"):].strip()
        types.append(_EXCEPTION_PREFIX.sub("", previous))
    return [gb_type for gb_type in types if gb_type], explanation


def _graph_break(message: str, suppressed: bool) -> GraphBreakRecord:
    lines = message.strip("\n").splitlines()
    found = _LOCATION.search(lines[0])
    if found is None:
        raise MalformedRecord(f"a graph break without its location: {lines[0][:120]!r}")
    location = Frame(found["path"], int(found["line"]))
    traceback_at = _index_of(lines, "User code traceback:")
    reason = lines[1:traceback_at] if traceback_at is not None else lines[1:]
    types, explanation = _break_types(reason)
    if not types:
        reason_line = next((line for line in reason if line.startswith("Graph Break Reason:")), "")
        types = [reason_line.split(":", 1)[1].strip()] if reason_line else []
    if not types or not types[0]:
        raise MalformedRecord(f"a graph break without its reason: {lines[0][:120]!r}")
    stack = frames_after(lines, traceback_at + 1) if traceback_at is not None else ()
    if stack:
        location = replace(location, function=stack[-1].function)
    gb_id = _GB_ID.search(message)
    return GraphBreakRecord(location, stack, types[0], gb_id.group(1).upper() if gb_id else None, explanation,
                            tuple(types[1:]), suppressed and not stack)


def _skipped_frame(message: str) -> GraphBreakRecord:
    lines = message.strip("\n").splitlines()
    start = _index_of(lines, "The graph break occurred in the following user code:")
    stack = frames_after(lines, start + 1) if start is not None else ()
    skipped = _SKIPPED_FRAME.search(message)
    if stack:
        location = stack[-1]
    elif skipped:
        location = Frame(skipped["path"], int(skipped["line"]), skipped["function"])
    else:
        raise MalformedRecord(f"a skipped frame without its location: {lines[0][:120]!r}")
    types, explanation = _break_types(lines)  # a trace's payload carries the exception after the stack
    gb_id = _GB_ID.search(message)
    return GraphBreakRecord(location, stack, types[0] if types else SKIPPED_FRAME_TYPE,
                            gb_id.group(1).upper() if gb_id else None, explanation, tuple(types[1:]))


def guard_failures(lines: Iterable[str]) -> tuple[str, tuple[Frame, ...], bool]:
    """(the first failed guard, the user stack it came from, whether only sizes failed) of guard-failure lines.

    Each cached entry's lines read `0/1: GUARD  # SOURCE` then an optional `User stack trace:`
    and its frames; a recompile log prefixes each with `- `, a trace artifact does not. The
    first entry that is not a size guard is the reason, as the verifier reads it.
    """
    entries: list[tuple[str, list[str]]] = []
    for raw in lines:
        text = _undash(raw)
        found = _GUARD_ENTRY.match(text.strip())
        if found and found["guard"] is not None:
            entries.append((found["guard"].split("  #", 1)[0].strip(), []))
        elif entries and not found:
            entries[-1][1].append(text)
    if not entries:
        return "unknown guard", (), False
    semantic = [(guard, rest) for guard, rest in entries
                if any(not _SIZE_GUARD.search(part) for part in guard.split("; "))]
    guard, rest = (semantic or entries)[0]
    start = _index_of(rest, "User stack trace:")
    stack = frames_after(rest, start + 1) if start is not None else ()
    return guard, stack, not semantic


def _undash(line: str) -> str:
    """A recompile log's entry line without its `- ` (indentation below it kept); other lines as they are."""
    stripped = line.lstrip()
    if stripped.startswith("- "):
        return stripped[2:]
    return "" if stripped == "-" else line


def _recompile(message: str) -> RecompileRecord:
    lines = message.strip("\n").splitlines()
    found = _RECOMPILING.search(lines[0].strip())
    if found is None:
        raise MalformedRecord(f"a recompile without its function: {lines[0][:120]!r}")
    guard, stack, sizes_only = guard_failures(lines[1:])
    return RecompileRecord(Frame(found["path"], int(found["line"]), found["function"]), guard, stack, sizes_only)


def fill_suppressed_stacks(records: Iterable[Record]) -> list[Record]:
    """Each duplicate graph break given the stack of the full record Dynamo logged before it.

    Dynamo leaves the stack out of a break whose type and frames it already logged; the last
    full record of the same type at the same location is that one.
    """
    seen: dict[tuple[str, int, str], tuple[Frame, ...]] = {}
    out: list[Record] = []
    for record in records:
        if isinstance(record, GraphBreakRecord):
            key = (record.location.path, record.location.line, record.gb_type)
            if record.stack:
                seen[key] = record.stack
            elif record.stack_suppressed and key in seen:
                record = replace(record, stack=seen[key])
        out.append(record)
    return out

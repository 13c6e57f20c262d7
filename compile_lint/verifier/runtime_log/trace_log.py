"""A TORCH_TRACE log (the structured trace tlparse reads) read into graph breaks and recompiles.

torch/_logging/_internal.py writes one JSON object per event after a glog-style prefix, and
the event's payload, if any, on the lines below it, each starting with a tab. Two events
matter here:

- an `artifact` named `dynamo_graph_break_reason`: its payload is the graph-break message
  with the whole user stack (never suppressed as a duplicate, unlike the text log);
- an `artifact` named `recompile_reasons`: its payload is JSON, the guard failure (a string)
  or one per cached entry (a list), each with its `User stack trace:`.

A recompile's function is named by the `compilation_metrics` event of the same compile id
(`frame_id`/`frame_compile_id` on the artifact) that closes that compile. Every other event
(interned strings, graphs, guards, chromium events) is skipped without reading its payload.
"""

from __future__ import annotations

import json
import re
from typing import Iterable, Optional

from compile_lint.verifier.runtime_log.records import (
    Frame,
    MalformedRecord,
    RecompileRecord,
    Record,
    guard_failures,
    parse_record,
)

TRACE_HEADER = re.compile(r"^[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \S+?:\d+\] (?P<event>\{.*)$")
_WANTED = ("dynamo_graph_break_reason", "recompile_reasons")


class MalformedTrace(ValueError):
    """A line a TORCH_TRACE log cannot hold (the message says which)."""


def is_trace_line(line: str) -> bool:
    """Whether a line is a TORCH_TRACE event header (a glog prefix, then a JSON object)."""
    return TRACE_HEADER.match(line) is not None


def _artifact(event: dict) -> Optional[str]:
    artifact = event.get("artifact")
    return artifact.get("name") if isinstance(artifact, dict) else None


def _compile_id(event: dict) -> Optional[str]:
    if "frame_id" not in event or "frame_compile_id" not in event:
        return None
    return f"{event['frame_id']}/{event['frame_compile_id']}"


def _recompile(payload: str, where: str) -> RecompileRecord:
    """One cached entry's failure is written as it is, several as a JSON list of them."""
    reasons: object = payload
    if payload.lstrip().startswith("["):
        try:
            reasons = json.loads(payload)
        except ValueError as error:
            raise MalformedTrace(f"{where}: recompile_reasons payload is not a JSON list ({error})") from None
    reasons = reasons if isinstance(reasons, list) else [reasons]
    lines = [line for reason in reasons if isinstance(reason, str) for line in reason.splitlines()]
    guard, stack, sizes_only = guard_failures(lines)
    return RecompileRecord(None, guard, stack, sizes_only)


def read_trace(lines: Iterable[str], name: str) -> list[Record]:
    """The graph breaks and recompiles of one TORCH_TRACE file, in the order they were logged.

    Raises MalformedTrace for a line that is neither an event header nor a payload line, an
    event that is not JSON, or a graph-break payload that cannot be read.
    """
    records: list[Record] = []
    waiting: list[tuple[str, int]] = []  # (compile id, index in records) of recompiles not yet named
    header: Optional[tuple[dict, int]] = None
    payload: list[str] = []

    def finish() -> None:
        if header is None:
            return
        event, number = header
        where = f"{name}:{number}"
        artifact = _artifact(event)
        if artifact == "dynamo_graph_break_reason":
            try:
                record = parse_record("\n".join(payload))
            except MalformedRecord as error:
                raise MalformedTrace(f"{where}: {error}") from None
            if record is not None:
                records.append(record)
        elif artifact == "recompile_reasons":
            compile_id = _compile_id(event)
            records.append(_recompile("\n".join(payload), where))
            if compile_id is not None:
                waiting.append((compile_id, len(records) - 1))
        elif isinstance(event.get("compilation_metrics"), dict):
            _name_recompile(event["compilation_metrics"], records, waiting)

    for number, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if line.startswith("\t"):
            if header is not None and _artifact(header[0]) in _WANTED:
                payload.append(line[1:])
            elif header is None:
                raise MalformedTrace(f"{name}:{number}: a payload line before any event")
            continue
        if not line.strip():
            continue
        found = TRACE_HEADER.match(line)
        if found is None:
            raise MalformedTrace(f"{name}:{number}: not a TORCH_TRACE event line: {line[:80]!r}")
        finish()
        try:
            event = json.loads(found["event"])
        except ValueError as error:
            raise MalformedTrace(f"{name}:{number}: the event is not JSON ({error})") from None
        if not isinstance(event, dict):
            raise MalformedTrace(f"{name}:{number}: the event is not a JSON object")
        header, payload = (event, number), []
    finish()
    return records


def _name_recompile(metrics: dict, records: list[Record], waiting: list[tuple[str, int]]) -> None:
    """Give the first recompile of this compile id its function, from the compile's metrics."""
    compile_id = metrics.get("compile_id")
    for position, (waiting_id, index) in enumerate(waiting):
        if waiting_id != compile_id:
            continue
        record = records[index]
        assert isinstance(record, RecompileRecord)
        path, line = metrics.get("co_filename"), metrics.get("co_firstlineno")
        if isinstance(path, str) and isinstance(line, int):
            records[index] = RecompileRecord(Frame(path, line, str(metrics.get("co_name") or "")), record.guard,
                                             record.stack, record.sizes_only)
        del waiting[position]
        return

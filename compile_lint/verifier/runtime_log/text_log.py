"""A `TORCH_LOGS="graph_breaks,recompiles"` capture (a run's stderr) split into Dynamo's messages.

torch writes every line of a message with the same glog-style prefix
(`V1203 10:23:53.281000 12919 torch/_dynamo/symbolic_convert.py:5124] [0/0] [__graph_breaks] `:
level, time, pid, the logging call, the compile id, the log's name). A message is the run of
lines that share a prefix, from a line that starts a graph break or recompile; lines with
other prefixes (`trace_source`, `dynamo`, warnings) or none (the program's own output) are
not part of it, even when processes or threads interleave their lines. A log written with
another format (`TORCH_LOGS_FORMAT`) prefixes only a message's first line: there a message
runs from the line that holds the marker to the next marker or glog line, and the record
parser keeps only what has its structure.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

from compile_lint.verifier.runtime_log.records import MARKERS

# [rankN]:LEVEL+MMDD HH:MM:SS.micros PID FILE:LINE] then `[0/0]`-style trace ids and `[__name]` log names.
GLOG_LINE = re.compile(
    r"^(?P<prefix>(?:\[rank\d+\]:)?[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \S+?:\d+\](?: \[[^\]\s]*\])*)"
    r"(?: (?P<message>.*))?$")


def _marker_at(line: str) -> Optional[int]:
    """Where a graph break or recompile message starts in a line that has no glog prefix."""
    found = [index for index in (line.find(marker) for marker in MARKERS) if index >= 0]
    return min(found) if found else None


def split_messages(lines: Iterable[str]) -> list[str]:
    """The graph-break and recompile messages of a text log, in the order they start."""
    messages: list[list[str]] = []
    by_prefix: dict[str, list[str]] = {}  # a glog prefix -> the message its next lines continue
    bare: Optional[list[str]] = None  # the open message of a log without per-line prefixes
    for line in lines:
        line = line.rstrip("\r\n")
        glog = GLOG_LINE.match(line)
        if glog is not None:
            bare = None
            text = glog["message"] or ""
            if text.startswith(MARKERS):
                by_prefix[glog["prefix"]] = [text]
                messages.append(by_prefix[glog["prefix"]])
            elif glog["prefix"] in by_prefix:
                by_prefix[glog["prefix"]].append(text)
            continue
        at = _marker_at(line)
        if at is not None:
            bare = [line[at:]]
            messages.append(bare)
        elif bare is not None:
            bare.append(line)
    return ["\n".join(message) for message in messages]

"""Read the logs explain-log is given: text captures, TORCH_TRACE files and directories, stdin.

A file is a TORCH_TRACE log when its first non-blank line is a trace event (a glog prefix
and a JSON object); any other text file is a TORCH_LOGS capture. A directory is read file by
file (TORCH_TRACE writes one `dedicated_log_torch_trace_*.log` per process). Files are read
line by line: a trace of a large model runs to gigabytes.
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import Iterable, Iterator, Sequence, TextIO

from compile_lint.verifier.runtime_log.records import MalformedRecord, Record, fill_suppressed_stacks, parse_record
from compile_lint.verifier.runtime_log.text_log import split_messages
from compile_lint.verifier.runtime_log.trace_log import MalformedTrace, is_trace_line, read_trace

STDIN = "-"


class LogError(Exception):
    """A log that cannot be read or is not a Dynamo log: the one-line reason."""


def _checked_lines(handle: TextIO, name: str) -> Iterator[str]:
    try:
        for line in handle:
            if "\0" in line:
                raise LogError(f"{name}: not a text log (it holds NUL bytes)")
            yield line
    except UnicodeDecodeError as error:
        raise LogError(f"{name}: not a text log (not UTF-8 at byte {error.start} of a line)") from None
    except OSError as error:
        raise LogError(f"{name}: cannot read: {error.strerror or error}") from None


def read_lines(lines: Iterable[str], name: str) -> list[Record]:
    """The records of one log, a text capture or a trace, told apart by its first non-blank line."""
    lines = iter(lines)
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        return []
    everything = itertools.chain([first], lines)
    try:
        if is_trace_line(first.rstrip("\r\n")):
            return read_trace(everything, name)
        return fill_suppressed_stacks(
            record for record in (parse_record(message) for message in split_messages(everything)) if record)
    except (MalformedRecord, MalformedTrace) as error:
        text = str(error)
        raise LogError(text if text.startswith(name) else f"{name}: {text}") from None


def _read_file(path: str) -> list[Record]:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return read_lines(_checked_lines(handle, path), path)
    except OSError as error:
        raise LogError(f"{path}: cannot read: {error.strerror or error}") from None


def _directory_files(path: str) -> list[str]:
    try:
        names = sorted(os.listdir(path))
    except OSError as error:
        raise LogError(f"{path}: cannot list the directory: {error.strerror or error}") from None
    files = [os.path.join(path, name) for name in names
             if not name.startswith(".") and os.path.isfile(os.path.join(path, name))]
    if not files:
        raise LogError(f"{path}: no log files in the directory (TORCH_TRACE=DIR writes "
                       "dedicated_log_torch_trace_*.log there)")
    return files


def read_logs(paths: Sequence[str], stdin: TextIO = sys.stdin) -> list[Record]:
    """Every graph break and recompile in `paths` (`-` is stdin), in order; LogError on the first bad one."""
    records: list[Record] = []
    for path in paths:
        if path == STDIN:
            records += read_lines(_checked_lines(stdin, "<stdin>"), "<stdin>")
        elif os.path.isdir(path):
            for name in _directory_files(path):
                records += _read_file(name)
        elif os.path.exists(path):
            records += _read_file(path)
        else:
            raise LogError(f"{path}: no such file or directory")
    return records

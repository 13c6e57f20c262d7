"""Reading and writing source files without losing a byte of what we do not change."""

from __future__ import annotations

import codecs
import io
import os
import tempfile
import tokenize
from dataclasses import dataclass


class SourceError(Exception):
    """A file that cannot be read or decoded; the message is one line for the user."""


@dataclass(frozen=True)
class SourceFile:
    """A decoded file and what it takes to write it back byte for byte."""

    path: str
    text: str
    encoding: str
    bom: bool

    def encode(self, text: str) -> bytes:
        """Encode `text` the way the original file was encoded (same codec, same BOM)."""
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def decode_source(data: bytes, path: str = "<string>") -> SourceFile:
    """Decode bytes as Python does (PEP 263 coding cookie, BOM); raise SourceError if impossible."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "invalid or missing encoding declaration" in str(exc.msg):
            raise SourceError("cannot decode: not valid utf-8 and no coding declaration") from None
        raise SourceError(f"cannot decode: {exc.msg}") from None
    bom = encoding == "utf-8-sig"
    if bom:
        encoding = "utf-8"
        data = data[len(codecs.BOM_UTF8):]
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"cannot decode as {encoding}: {exc.reason} at byte {getattr(exc, 'start', '?')}"
                          if isinstance(exc, UnicodeDecodeError) else f"unknown encoding {encoding}") from None
    return SourceFile(path=path, text=text, encoding=encoding, bom=bom)


def read_bytes(path: str) -> bytes:
    """A file's bytes; raise SourceError with a one-line reason on failure."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None


def read_source(path: str) -> SourceFile:
    """Read and decode a file; raise SourceError with a one-line reason on failure."""
    return decode_source(read_bytes(path), path)


def write_atomically(path: str, data: bytes) -> None:
    """Replace `path` with `data` via a temp file and rename, keeping its permissions.

    A symlink is written through: the temp file goes next to the link's resolved target
    and is renamed onto it, so the link stays a link and its target gets the new text.
    """
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    mode = os.stat(target).st_mode & 0o7777
    if not mode & 0o222:
        # A read-only file is a statement of intent (generated or vendored code); root
        # could replace it, but a formatter-like tool should not.
        raise PermissionError(13, "file is read-only")
    fd, tmp_path = tempfile.mkstemp(prefix=".compile-lint-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_path, mode)
        os.replace(tmp_path, target)
    except BaseException:
        try:
            os.unlink(tmp_path)
        except OSError:
            pass
        raise

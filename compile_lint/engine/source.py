"""Reading and writing source files without losing a byte of what we do not change."""

from __future__ import annotations

import codecs
import io
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

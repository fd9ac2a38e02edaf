"""Reading Python files from disk: bytes to text, honouring the BOM and the coding cookie."""

from __future__ import annotations

import errno
import io
import os
import tokenize
from dataclasses import dataclass


class SourceError(Exception):
    """A file that cannot be read, decoded or parsed. The message is one line, without the path."""


@dataclass(frozen=True)
class SourceFile:
    path: str
    text: str  # decoded, without the BOM
    encoding: str  # as `tokenize.detect_encoding` names it, e.g. "utf-8" or "utf-8-sig"


def read_source(path: str) -> SourceFile:
    return decode_source(path, read_bytes(path))


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except IsADirectoryError:
        raise SourceError("is a directory, not a Python file") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise SourceError("symbolic link loop") from None
        if error.errno == errno.ENOENT and os.path.islink(path):
            raise SourceError(f"broken symbolic link to {os.readlink(path)}") from None
        raise SourceError(f"cannot read: {error.strerror or error}") from None


def decode_source(path: str, raw: bytes) -> SourceFile:
    """Decode a file's bytes (the fixer keeps them, to notice a file that changed before it writes)."""
    encoding = _encoding(raw)
    return SourceFile(path, _decode(raw, encoding), encoding)


def _decode(raw: bytes, encoding: str) -> str:
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as error:
        bad = raw[error.start : error.start + 1].hex()
        raise SourceError(f"not valid {encoding} text: byte 0x{bad} at offset {error.start}") from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r} in the coding cookie") from None
    if "\0" in text:
        raise SourceError("source contains NUL bytes")
    return text


def _encoding(raw: bytes) -> str:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as error:
        raise SourceError(str(error.msg)) from None
    return encoding

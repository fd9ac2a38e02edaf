"""Rewriting source files in place: atomically, keeping their encoding, BOM, line endings and mode."""

from __future__ import annotations

import os
import stat
import tempfile
from typing import Sequence

from h2dlint.analyzer import Diagnostic
from h2dlint.noqa import add_noqa
from h2dlint.sources import read_source


def add_noqa_to_file(path: str, diagnostics: Sequence[Diagnostic]) -> int:
    """Add `# noqa: CODE` for each diagnostic to the file; returns how many lines changed."""
    source = read_source(path)
    text, changed = add_noqa(source.text, [(d.span.row, d.code) for d in diagnostics])
    if changed:
        write_atomically(path, text.encode(source.encoding))
    return changed


def write_atomically(path: str, data: bytes) -> None:
    """Replace `path` with `data` through a temporary file in the same folder, so that a crash or a full
    disk never leaves a half-written file; the file keeps its permission bits."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".h2dlint-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise

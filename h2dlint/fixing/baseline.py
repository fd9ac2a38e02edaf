"""`h2dlint check --add-noqa`: suppress every current finding in its file, to adopt h2dlint with a clean
baseline. Files are written as `--fix` writes them (`autofix.write_atomically`)."""

from __future__ import annotations

from typing import Sequence

from h2dlint.facts.noqa import add_noqa
from h2dlint.facts.sources import decode_source, read_bytes
from h2dlint.fixing.autofix import write_atomically
from h2dlint.project.findings import Diagnostic


def add_noqa_to_file(path: str, diagnostics: Sequence[Diagnostic]) -> int:
    """Add `# noqa: CODE` for each diagnostic to the file, keeping its encoding, BOM, line endings and mode;
    returns how many lines changed. Raises SourceError or OSError when the file cannot be read or written."""
    raw = read_bytes(path)
    source = decode_source(path, raw)
    text, changed = add_noqa(source.text, [(d.span.row, d.code) for d in diagnostics])
    if changed:
        write_atomically(path, text.encode(source.encoding), expected=raw)
    return changed

"""Code frames for `--output-format full`: the finding's lines with a gutter and carets under the span,
as ruff and rustc show them."""

from __future__ import annotations

from typing import List

from h2dlint.facts.positions import source_lines
from h2dlint.facts.sources import SourceError, read_source
from h2dlint.facts.summary import Span

MAX_FRAME_LINES = 4  # a call spread over many lines shows its first lines and a marker for the rest


def code_frame(path: str, span: Span) -> List[str]:
    """The lines of `span` in `path`, each under a gutter, with carets under the span; nothing when the file
    cannot be read again (it changed or went away since it was checked: the finding still stands)."""
    try:
        lines = source_lines(read_source(path).text)
    except (SourceError, OSError):
        return []
    if not 1 <= span.row <= len(lines):
        return []
    last = min(span.end_row, len(lines), span.row + MAX_FRAME_LINES - 1)
    width = len(str(last))
    gutter = " " * width + " |"
    frame = [gutter]
    for row in range(span.row, last + 1):
        text = lines[row - 1].rstrip("\r\n")
        frame.append(f"{row:>{width}} | {text}")
        start = span.column - 1 if row == span.row else len(text) - len(text.lstrip())
        end = span.end_column - 1 if row == span.end_row else len(text)
        frame.append(f"{gutter} {' ' * start}{'^' * max(1, end - start)}")
    if last < span.end_row:
        frame.append(f"{gutter} … {span.end_row - last} more lines")
    return frame

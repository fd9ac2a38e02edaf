"""Positions of `ast` nodes as h2dlint reports them: 1-based rows, 1-based columns counted in characters.

`ast` gives columns as UTF-8 byte offsets; a line with non-ASCII text before a node would shift every column
after it, so offsets are converted with the line's own text.
"""

from __future__ import annotations

import ast
import bisect
import re
from functools import lru_cache
from typing import List, Optional, Sequence, Tuple

from h2dlint.facts.summary import Span

# Python's own line breaks. `str.splitlines` also splits on form feeds and other separators that Python
# treats as ordinary whitespace, which would shift every row after them.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> List[str]:
    """The lines of `text` as Python numbers them (index 0 is row 1), without their line breaks."""
    lines = text.split("\n") if "\r" not in text else _LINE_BREAK.split(text)  # the same; str.split is faster
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def lines_with_endings(text: str) -> List[str]:
    """The lines of `text` as Python numbers them, with their line breaks."""
    lines, start = [], 0
    for end in _LINE_BREAK.finditer(text):
        lines.append(text[start : end.end()])
        start = end.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def line_break_of(text: str) -> str:
    """The file's own line break (its first one), for lines a fix adds; "\\n" when it has none."""
    found = _LINE_BREAK.search(text)
    return found.group() if found else "\n"


@lru_cache(maxsize=4)  # asked once per fix of the same text: a file with thousands of fixes must stay linear
def line_starts(text: str) -> List[int]:
    """The offset in `text` where each row starts; a row ends with a line break iff a next entry exists."""
    if "\r" in text:
        return [0] + [found.end() for found in _LINE_BREAK.finditer(text)]
    starts = [0]
    at = text.find("\n")
    while at != -1:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def row_at(starts: List[int], offset: int) -> int:
    """The row (from 1, as `ast` counts rows) of `offset` in the text whose `line_starts` are `starts`."""
    return bisect.bisect_right(starts, offset)


def source_segment(text: str, node: ast.AST) -> str:
    """The source text of `node`, as `ast.get_source_segment` gives it, without re-splitting `text` per call."""
    start = _offset(text, node.lineno, node.col_offset)  # type: ignore[attr-defined]
    return text[start : _offset(text, node.end_lineno, node.end_col_offset)]  # type: ignore[attr-defined]


def _offset(text: str, row: int, byte_column: int) -> int:
    starts = line_starts(text)
    line = text[starts[row - 1] : starts[row] if row < len(starts) else len(text)]
    return starts[row - 1] + _characters_before(line, byte_column)


def char_column(lines: Sequence[str], row: int, byte_offset: int) -> int:
    """The 0-based character column of a UTF-8 byte offset on 1-based row `row`."""
    if row > len(lines):
        return byte_offset
    return _characters_before(lines[row - 1], byte_offset)


def _characters_before(line: str, byte_offset: int) -> int:
    if line.isascii():
        return byte_offset
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace"))


def span_of(node: ast.AST, lines: Sequence[str]) -> Span:
    """The span of `node` (end exclusive), for any node with a position: expressions and statements."""
    row, end_row = node.lineno, node.end_lineno  # type: ignore[attr-defined]
    column = char_column(lines, row, node.col_offset)  # type: ignore[attr-defined]
    end_column = char_column(lines, end_row, node.end_col_offset)  # type: ignore[attr-defined]
    return Span(row, column + 1, end_row, end_column + 1)


def skip_trivia(lines: Sequence[str], row: int, column: int) -> Tuple[int, int, Optional[int]]:
    """From 1-based (`row`, `column`), pass blanks, comments, backslash continuations and line breaks: returns
    where the next code starts (past the last row at the end of the text), and the row of the first line
    break passed that is not a continuation (None when none): outside brackets, the end of a logical line."""
    first_break = None
    while row <= len(lines):
        line = lines[row - 1]
        while column <= len(line) and line[column - 1] in " \t\f":
            column += 1
        if column == len(line) and line[-1] == "\\":  # only a continuation can end a line with a backslash
            row, column = row + 1, 1
        elif column > len(line) or line[column - 1] == "#":
            first_break = row if first_break is None else first_break
            row, column = row + 1, 1
        else:
            return row, column, first_break
    return row, 1, first_break

"""`# noqa` comments: deciding whether one suppresses a finding, and writing them (`check --add-noqa`).

A `# noqa` comment applies to the physical line it is on and, as in flake8, to every line joined with that one
by a backslash continuation or a multi-line string. A finding is suppressed by a matching comment on any line
of its call. Every face (CLI, flake8) decides suppression with `NoqaComments.suppress`.
"""

from __future__ import annotations

import re
import tokenize
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from h2dlint.facts.positions import lines_with_endings

NOQA = re.compile(r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_CODE_SEPARATOR = re.compile(r"[,\s]+")


class NoqaComments:
    """The `# noqa` comments of one file. Tokenizes the file at most once, and only when a comment that could
    suppress a finding is on none of the finding's own rows."""

    def __init__(self, lines: Sequence[str]) -> None:
        self._lines = lines
        self._noqa_rows: Optional[List[int]] = None  # looked for at the first finding: most files have none
        self._ranges: Optional[List[Tuple[int, int]]] = None

    def suppress(self, code: str, first_row: int, last_row: int) -> bool:
        """Whether a finding `code` spanning rows `first_row..last_row` (1-based) has a matching `# noqa`."""
        if self._noqa_rows is None:
            self._noqa_rows = _noqa_rows(self._lines)
        rows = [row for row in self._noqa_rows if _suppresses(self._lines[row - 1], code)]
        if not rows or any(first_row <= row <= last_row for row in rows):
            return bool(rows)
        if self._ranges is None:
            self._ranges = _joined_ranges(self._lines)
        joined = [(start, end) for start, end in self._ranges if start <= last_row and end >= first_row]
        return any(start <= row <= end for row in rows for start, end in joined)


def _noqa_rows(lines: Sequence[str]) -> List[int]:
    """The rows (from 1) holding a `# noqa` comment; one pass in C decides for the many files that have none."""
    if "noqa" not in "".join(lines).lower():
        return []
    return [row for row, line in enumerate(lines, 1) if NOQA.search(line)]


def _suppresses(line: str, code: str) -> bool:
    found = NOQA.search(line)
    if found is None:
        return False
    codes = found.group("codes")
    return codes is None or any(code.startswith(c.upper()) for c in _CODE_SEPARATOR.split(codes) if c)


def _joined_ranges(lines: Sequence[str]) -> List[Tuple[int, int]]:
    """Runs of physical lines that flake8 treats as one for `# noqa`: those joined by a backslash or a
    multi-line string. Each run ends at a line whose end is outside any string, where a comment may go."""
    ranges: List[Tuple[int, int]] = []
    start, end = None, None
    try:
        for token in tokenize.generate_tokens(iter(_with_ends(lines)).__next__):
            if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            start = token.start[0] if start is None else min(start, token.start[0])
            end = token.end[0] if end is None else max(end, token.end[0])
            if token.type in (tokenize.NL, tokenize.NEWLINE):
                if end > start:
                    ranges.append((start, end))
                start, end = None, None
    except (tokenize.TokenError, SyntaxError):
        pass  # unfinished input: keep the runs found so far
    return ranges


def _with_ends(lines: Sequence[str]) -> Iterable[str]:
    """The lines as tokenize reads them: one per row as Python counts rows, each ending with "\n". Joined and
    split again by `readline`, a lone "\r" would not end a row, and a backslash before it would not be seen
    as a continuation."""
    for line in lines:
        yield line.rstrip("\r\n") + "\n"


def _noqa_row(row: int, ranges: Sequence[Tuple[int, int]]) -> int:
    """The row where a `# noqa` for a finding starting on `row` can be written without changing the code:
    `row` itself, or the last row of a backslash continuation or multi-line string that holds it."""
    for start, end in ranges:
        if start <= row <= end:
            return end
    return row


def add_noqa(text: str, findings: Iterable[Tuple[int, str]]) -> Tuple[str, int]:
    """`text` with `# noqa: CODE` comments covering each `(first row, code)` finding, merged into existing
    `# noqa: ...` comments; and how many lines were changed."""
    lines = lines_with_endings(text)
    ranges = _joined_ranges(lines)
    wanted: Dict[int, List[str]] = {}
    for row, code in findings:
        target = _noqa_row(row, ranges)
        if not _suppresses(lines[target - 1], code) and code not in wanted.setdefault(target, []):
            wanted[target].append(code)
    changed = 0
    for row, codes in wanted.items():
        if codes:
            lines[row - 1] = _with_noqa(lines[row - 1], sorted(codes))
            changed += 1
    return "".join(lines), changed


def _with_noqa(line: str, codes: Sequence[str]) -> str:
    body = line.rstrip("\r\n")
    ending = line[len(body) :]
    existing = NOQA.search(body)
    if existing is not None and existing.group("codes") is not None:
        merged = f"{existing.group('codes')}, {', '.join(codes)}"
        body = body[: existing.start("codes")] + merged + body[existing.end("codes") :]
    else:
        body = f"{body.rstrip()}  # noqa: {', '.join(codes)}"
    return body + ending

"""Printing results: `text` (`path:row:col: CODE message`) and `json` (ruff's shape)."""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Dict, List, Sequence

from h2dlint.analyzer import FileResult
from h2dlint.rules import RULES_BY_CODE

FORMATS = ("text", "json")


def render(results: Sequence[FileResult], output_format: str) -> str:
    if output_format == "json":
        return render_json(results)
    return render_text(results)


def render_text(results: Sequence[FileResult]) -> str:
    lines = [
        f"{result.path}:{d.span.row}:{d.span.column}: {d.code} {d.message}"
        for result in results
        for d in result.diagnostics
    ]
    count = len(lines)
    if count:
        lines.append(f"Found {count} finding{'s' if count != 1 else ''}.")
    elif not any(result.error for result in results):
        lines.append("All checks passed!")
    return "\n".join(lines) + "\n"


def render_json(results: Sequence[FileResult]) -> str:
    entries: List[Dict[str, object]] = []
    for result in results:
        filename = os.path.abspath(result.path)
        for d in result.diagnostics:
            entries.append(
                {
                    "code": d.code,
                    "message": d.message,
                    "filename": filename,
                    "location": {"row": d.span.row, "column": d.span.column},
                    "end_location": {"row": d.span.end_row, "column": d.span.end_column},
                    "noqa_row": d.span.row,
                    "fix": None,
                    "url": None,
                }
            )
    return json.dumps(entries, indent=2) + "\n"


def render_errors(results: Sequence[FileResult]) -> str:
    """One line per file that could not be checked, naming it and the reason."""
    return "".join(f"{result.path}: error: {result.error}\n" for result in results if result.error)


def render_statistics(results: Sequence[FileResult], output_format: str) -> str:
    """Findings per code, most frequent first, as ruff's `--statistics` prints them."""
    counts = Counter(d.code for result in results for d in result.diagnostics)
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if output_format == "json":
        entries = [{"code": code, "name": RULES_BY_CODE[code].name, "count": count} for code, count in rows]
        return json.dumps(entries, indent=2) + "\n"
    width = max((len(str(count)) for _, count in rows), default=1)
    return "".join(f"{count:>{width}}\t{code}\t{RULES_BY_CODE[code].name}\n" for code, count in rows)

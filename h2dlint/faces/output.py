"""Printing results in each `--output-format`: text (short lines), full (the whole explanation and a code
frame), concise (one full line per finding), json (ruff's shape), sarif and github."""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Dict, List, Optional, Sequence

from h2dlint.faces.brief import short_message
from h2dlint.faces.frames import code_frame
from h2dlint.faces.rule_docs import rule_url
from h2dlint.faces.sarif import render_sarif
from h2dlint.facts.summary import SAFE, Span
from h2dlint.project.findings import Diagnostic, FileResult
from h2dlint.rules import RULES_BY_CODE

FORMATS = ("text", "full", "concise", "json", "sarif", "github")

# ANSI styles for the text format on a terminal, as ruff colours its output.
_BOLD, _RED, _CYAN, _RESET = "\033[1m", "\033[31m", "\033[36m", "\033[0m"


def render(
    results: Sequence[FileResult], output_format: str, *, colour: bool = False, summary: bool = True,
    reasons: bool = False,
) -> str:
    """The whole stdout of a run. `colour` only affects `text` and `full`; `summary` is the closing count
    line; `reasons` adds the full explanation under each short `text` line (`--show-reasons`)."""
    if output_format == "json":
        return render_json(results)
    if output_format == "sarif":
        return render_sarif(results)
    if output_format == "github":
        return render_github(results)
    if output_format == "concise":
        return "".join(f"{_location(r.path, d)}: {d.code} {d.message}\n" for r in results for d in r.diagnostics)
    if output_format == "full":
        return render_text(results, colour=colour, summary=summary, reasons=True, frames=True)
    return render_text(results, colour=colour, summary=summary, reasons=reasons)


def render_text(
    results: Sequence[FileResult], *, colour: bool = False, summary: bool = True, reasons: bool = False,
    frames: bool = False,
) -> str:
    paint = _painter(colour)
    lines = []
    for r in results:
        for d in r.diagnostics:
            lines.append(f"{paint(_location(r.path, d), _BOLD)}: {paint(d.code, _RED + _BOLD)} {short_message(d)}")
            if frames:
                lines.extend(code_frame(r.path, d.span))
            if reasons:
                lines.extend(_explanation(d, paint))
    if summary:
        count = sum(len(r.diagnostics) for r in results)
        lines.extend(_summary(count, results, paint))
    return "".join(line + "\n" for line in lines)


def _explanation(d: Diagnostic, paint) -> List[str]:
    """The full text under a short line: why it is reported, and what to do."""
    if not d.reason:
        return [f"  = {d.message}"]
    return [f"  {paint('= why:', _CYAN)} {d.reason}", f"  {paint('= fix:', _CYAN)} {d.remedy}"]


def _summary(count: int, results: Sequence[FileResult], paint) -> List[str]:
    if count:
        return [f"Found {count_findings(count)}.", *fixable_lines(results)]
    if any(result.error for result in results):
        return []  # the files that could not be checked are named on stderr; "passed" would mislead
    return [paint("All checks passed!", _CYAN)]


def fixable_lines(results: Sequence[FileResult]) -> List[str]:
    """ruff's closing lines: how many findings `--fix` fixes, and how many more `--unsafe-fixes` would."""
    fixes = [d.fix for r in results for d in r.diagnostics if d.fix is not None]
    safe = sum(fix.applicability == SAFE for fix in fixes)
    lines = [f"{safe} fixable with `h2dlint check --fix`."] if safe else []
    if len(fixes) > safe:
        lines.append(f"{len(fixes) - safe} more fixable with `--fix --unsafe-fixes` (check each: see the message).")
    return lines


def render_json(results: Sequence[FileResult]) -> str:
    entries: List[Dict[str, object]] = []
    for result in results:
        filename = os.path.abspath(result.path)
        for d in result.diagnostics:
            entries.append(
                {
                    "code": d.code,
                    "message": d.message,
                    "short_message": short_message(d),
                    "reason": d.reason,
                    "remedy": d.remedy,
                    "filename": filename,
                    **_json_span(d.span),
                    "noqa_row": d.span.row,
                    "fix": _json_fix(d),
                    "url": rule_url(d.code),
                    "level": d.level,
                    "confirmed": d.confirmed,
                    # Not in ruff's shape: the id of the heuristic that made the site hot (`h2dlint heuristics`).
                    "heuristic": d.heuristic,
                }
            )
    return json.dumps(entries, indent=2) + "\n"


def render_github(results: Sequence[FileResult]) -> str:
    """GitHub Actions workflow commands, which the runner turns into annotations on the pull request."""
    lines = []
    for result in results:
        for d in result.diagnostics:
            properties = {
                "file": result.path,
                "line": d.span.row,
                "col": d.span.column,
                "endLine": d.span.end_row,
                "endColumn": d.span.end_column,
                "title": d.code,
            }
            lines.append(_workflow_command("warning", properties, d.message))
        if result.error:
            lines.append(_workflow_command("error", {"file": result.path, "title": "h2dlint"}, result.error))
    return "".join(line + "\n" for line in lines)


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


def count_findings(count: int) -> str:
    """`1 finding`, `2 findings`."""
    return f"{count} finding{'s' if count != 1 else ''}"


def _location(path: str, d: Diagnostic) -> str:
    return f"{path}:{d.span.row}:{d.span.column}"


def _painter(colour: bool):
    if not colour:
        return lambda text, style: text
    return lambda text, style: f"{style}{text}{_RESET}"


def _json_span(span: Span) -> Dict[str, Dict[str, int]]:
    return {
        "location": {"row": span.row, "column": span.column},
        "end_location": {"row": span.end_row, "column": span.end_column},
    }


def _json_fix(d: Diagnostic) -> Optional[Dict[str, object]]:
    if d.fix is None:
        return None
    edits = [{"content": edit.content, **_json_span(edit.span)} for edit in d.edits]
    return {"applicability": d.fix.applicability, "message": d.fix.message, "edits": edits}


def _workflow_command(command: str, properties: Dict[str, object], message: str) -> str:
    rendered = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties.items())
    return f"::{command} {rendered}::{_escape_data(message)}"


def _escape_data(text: str) -> str:
    # The escaping of GitHub's own toolkit (@actions/core, command.ts).
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")

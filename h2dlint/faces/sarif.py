"""`--output-format sarif`: a SARIF 2.1.0 log, as code-scanning services (GitHub, GitLab, Azure) read it.

One run, with every rule's metadata and documentation, one result per finding (with its fix when there is
one), and the files that could not be checked as tool execution notifications.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, List, Sequence
from urllib.parse import quote

from h2dlint import __version__
from h2dlint.faces.rule_docs import rule_url
from h2dlint.facts.heat import OBSERVED_HOT, PER_REQUEST, PER_STEP
from h2dlint.facts.summary import Span
from h2dlint.project.findings import Diagnostic, FileResult
from h2dlint.rules import ALL_RULES, OBSERVED_RULES, Rule

_REPORTED_RULES = ALL_RULES + OBSERVED_RULES  # every code a result may carry

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SOURCE_ROOT = "%SRCROOT%"  # the base that relative artifact URIs resolve against: the current folder
LEVEL = "warning"  # every finding is a performance problem, not a correctness error
# A finding's SARIF level from how often its code runs: per step is the cost h2dlint exists to find; once per
# request is worth a look, not a warning.
SARIF_LEVELS = {PER_STEP: "warning", OBSERVED_HOT: "warning", PER_REQUEST: "note"}


def render_sarif(results: Sequence[FileResult]) -> str:
    rule_index = {rule.code: index for index, rule in enumerate(_REPORTED_RULES)}
    run = {
        "tool": {
            "driver": {
                "name": "h2dlint",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_rule_descriptor(rule) for rule in _REPORTED_RULES],
            }
        },
        "invocations": [_invocation(results)],
        "originalUriBaseIds": {SOURCE_ROOT: {"uri": Path.cwd().as_uri() + "/"}},
        # Spans count characters, that is code points, not SARIF's default UTF-16 code units.
        "columnKind": "unicodeCodePoints",
        "results": [_result(r.path, d, rule_index) for r in results for d in r.diagnostics],
    }
    log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2) + "\n"


def _rule_descriptor(rule: type[Rule]) -> Dict[str, object]:
    documentation = rule.documentation()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.description()},
        "help": {"text": documentation, "markdown": documentation},
        "defaultConfiguration": {"level": LEVEL},
        # SARIF's `helpUri` must be an absolute URI; the rule's page is a path in the repository (no site yet).
        "properties": {"url": rule_url(rule.code)},
    }


def _invocation(results: Sequence[FileResult]) -> Dict[str, object]:
    failures = [
        {
            "level": "error",
            "message": {"text": result.error},
            "locations": [{"physicalLocation": {"artifactLocation": _artifact(result.path)}}],
        }
        for result in results
        if result.error
    ]
    return {"executionSuccessful": not failures, "toolExecutionNotifications": failures}


def _result(path: str, d: Diagnostic, rule_index: Dict[str, int]) -> Dict[str, object]:
    result: Dict[str, object] = {
        "ruleId": d.code,
        "ruleIndex": rule_index[d.code],
        "level": SARIF_LEVELS[d.level],
        "message": {"text": d.message},
        "properties": {"h2dlintLevel": d.level},
        "locations": [{"physicalLocation": {"artifactLocation": _artifact(path), "region": _region(d.span)}}],
    }
    if d.fix is not None:
        result["fixes"] = [_fix(path, d)]
    if d.heuristic is not None:
        result["properties"] = {"heuristic": d.heuristic}  # the id of the heuristic that made the site hot
    return result


def _fix(path: str, d: Diagnostic) -> Dict[str, object]:
    replacements: List[Dict[str, object]] = [
        {"deletedRegion": _region(edit.span), "insertedContent": {"text": edit.content}} for edit in d.edits
    ]
    assert d.fix is not None
    return {
        "description": {"text": d.fix.message},
        "properties": {"applicability": d.fix.applicability},
        "artifactChanges": [{"artifactLocation": _artifact(path), "replacements": replacements}],
    }


def _region(span: Span) -> Dict[str, int]:
    # An empty region (end equal to start) is an insertion point, as in SARIF's own examples.
    return {
        "startLine": span.row,
        "startColumn": span.column,
        "endLine": span.end_row,
        "endColumn": span.end_column,
    }


def _artifact(path: str) -> Dict[str, str]:
    """A URI relative to the current folder when the file is below it (what code scanning expects), else an
    absolute `file:` URI."""
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(Path.cwd())
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(relative.as_posix()), "uriBaseId": SOURCE_ROOT}

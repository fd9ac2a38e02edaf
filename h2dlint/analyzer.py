"""The analysis core that every face (CLI, flake8, pre-commit) calls: source text in, diagnostics out."""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass
from typing import List, Optional, Sequence

from h2dlint.collector import summarize
from h2dlint.hotness import function_heat, mark_captured, site_reason
from h2dlint.noqa import NoqaComments
from h2dlint.positions import source_lines
from h2dlint.rules import ALL_CODES, RULES_BY_CODE, Rule
from h2dlint.settings import Settings, selected_codes
from h2dlint.sources import SourceError, read_source
from h2dlint.summary import Fix, Span


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    span: Span
    fix: Optional[Fix] = None  # None when the rule has no fix, or the site cannot be fixed safely


@dataclass(frozen=True)
class FileResult:
    path: str
    diagnostics: Sequence[Diagnostic]
    error: Optional[str] = None  # one line, when the file could not be checked


def enabled_rules(settings: Settings) -> List[Rule]:
    return [RULES_BY_CODE[code](settings) for code in selected_codes(ALL_CODES, settings.select, settings.ignore)]


def check_source(text: str, settings: Settings, rules: Optional[Sequence[Rule]] = None) -> List[Diagnostic]:
    """Diagnostics for one module's source text. Raises SourceError when it cannot be parsed."""
    rules = enabled_rules(settings) if rules is None else rules
    candidates = [r for r in rules if r.may_match(text)]
    if "torch" not in text or not candidates:
        return []  # every rule needs a torch import and its trigger words
    lines = source_lines(text)
    summary = summarize(_parse(text), lines, candidates)
    mark_captured(summary)
    heat = function_heat(summary, settings)
    noqa = NoqaComments(lines)
    found = []
    for site in summary.sites:
        reason = site.capture if RULES_BY_CODE[site.code].reports_capture else site_reason(site, heat)
        if reason is not None and not noqa.suppress(site.code, site.span.row, site.span.end_row):
            found.append(Diagnostic(site.code, f"{site.problem}; {reason}. {site.remedy}.", site.span))
    return sorted(found, key=lambda d: (d.span.row, d.span.column, d.code))


def check_file(path: str, settings: Settings, rules: Optional[Sequence[Rule]] = None) -> FileResult:
    """Check one file; any failure becomes a one-line error on the result, never an exception."""
    try:
        return FileResult(path, check_source(read_source(path).text, settings, rules))
    except SourceError as error:
        return FileResult(path, (), str(error))
    except RecursionError:
        return FileResult(path, (), "too deeply nested to analyse")
    except Exception as error:  # a bug in h2dlint must not stop the other files
        return FileResult(path, (), f"internal error ({type(error).__name__}: {error}); please report it")


def _parse(text: str) -> ast.Module:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings (say, invalid escapes) are other tools' business
            return ast.parse(text)
    except SyntaxError as error:
        raise SourceError(f"syntax error at {error.lineno}:{error.offset}: {error.msg}") from None
    except (RecursionError, MemoryError):
        raise SourceError("too deeply nested for Python's parser") from None
    except ValueError as error:
        raise SourceError(str(error)) from None

"""The analysis core that every face (CLI, flake8, pre-commit) calls: source text in, diagnostics out."""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass
from functools import partial
from typing import List, Optional, Sequence

from h2dlint.collector import summarize
from h2dlint.hotness import function_heat, site_reason
from h2dlint.positions import source_lines
from h2dlint.rewrites import plan_fix
from h2dlint.rules import ALL_CODES, RULES_BY_CODE, Rule
from h2dlint.settings import Settings, selected_codes
from h2dlint.sources import SourceError, read_source
from h2dlint.summary import Fix, Site, Span

NOQA = re.compile(r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


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
    return [RULES_BY_CODE[code]() for code in selected_codes(ALL_CODES, settings.select, settings.ignore)]


def check_source(text: str, settings: Settings, rules: Optional[Sequence[Rule]] = None) -> List[Diagnostic]:
    """Diagnostics for one module's source text. Raises SourceError when it cannot be parsed."""
    if "torch" not in text:
        return []  # every rule needs a torch import; this one search is all that most files cost
    rules = enabled_rules(settings) if rules is None else rules
    candidates = [r for r in rules if r.may_match(text)]
    if not candidates:
        return []  # nor can any rule match without its trigger words
    lines = source_lines(text)
    tree = _parse(text)
    summary = summarize(tree, lines, candidates, partial(plan_fix, tree=tree, text=text, lines=lines,
                                                        helper_module=settings.helper_module))
    heat = function_heat(summary, settings)
    found = []
    for site in summary.sites:
        reason = site_reason(site, heat)
        if reason is not None and not _suppressed(site, lines):
            found.append(Diagnostic(site.code, _message(site, reason), site.span, site.fix))
    return sorted(found, key=lambda d: (d.span.row, d.span.column, d.code))


def _message(site: Site, reason: str) -> str:
    message = f"{site.problem}; {reason}. {site.remedy}."
    if site.unfixable:
        message += f" Not fixed automatically: {site.unfixable}."
    return message


def check_file(path: str, settings: Settings, rules: Optional[Sequence[Rule]] = None) -> FileResult:
    """Check one file; any failure becomes a one-line error on the result, never an exception."""
    try:
        return FileResult(path, check_source(read_source(path).text, settings, rules))
    except Exception as error:  # even a bug in h2dlint must not stop the other files
        return FileResult(path, (), failure_reason(error))


def failure_reason(error: Exception) -> str:
    """The one-line reason, for the user, why checking a file raised `error`."""
    if isinstance(error, SourceError):
        return str(error)
    if isinstance(error, RecursionError):
        return "too deeply nested to analyse"
    return f"internal error ({type(error).__name__}: {error}); please report it"


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


def _suppressed(site: Site, lines: Sequence[str]) -> bool:
    """`# noqa` or `# noqa: HTD101` on any line of the site suppresses it (codes match by prefix, as flake8)."""
    for line in lines[site.span.row - 1 : site.span.end_row]:
        found = NOQA.search(line)
        if found is None:
            continue
        codes = found.group("codes")
        if codes is None or any(site.code.startswith(c.upper()) for c in re.split(r"[,\s]+", codes) if c):
            return True
    return False

"""Findings: a file's summarised sites and its functions' heat make its diagnostics.

This is also where one file is checked on its own (`check_source`, `check_file`) or with the heat a cached
project run found for it (`check_source_in_project`, for faces that see one file at a time).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from h2dlint.checker.analyzer import (
    FileSummary,
    candidate_rules,
    enabled_rules,
    failure_reason,
    summarize_text,
)
from h2dlint.checker.call_graph import ModuleGraph
from h2dlint.facts.heat import Heat
from h2dlint.facts.settings import Settings
from h2dlint.facts.sources import read_source
from h2dlint.facts.summary import Edit, Fix, Site, Span
from h2dlint.project.cache import Cache, cache_roots, file_stat
from h2dlint.project.hotness import function_heat, propagate
from h2dlint.rules import RULES_BY_CODE, Rule


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    span: Span
    fix: Optional[Fix] = None  # None when the rule has no fix, or the site cannot be fixed
    edits: Tuple[Edit, ...] = ()  # the fix's text edits, for the JSON and SARIF formats (`fixing/edits.py`)


@dataclass(frozen=True)
class FileResult:
    path: str
    diagnostics: Sequence[Diagnostic]
    error: Optional[str] = None  # one line, when the file could not be checked


def diagnostics(file: FileSummary, heat: Dict[str, Heat], module: str = "") -> List[Diagnostic]:
    """The reported findings of one summarised file, given the heat of its functions (by qualname)."""
    found = []
    for site, suppressed in zip(file.summary.sites, file.suppressed):
        reason = report_reason(site, heat.get(site.function), module)
        if reason is not None and not suppressed:
            found.append(Diagnostic(site.code, _message(site, reason), site.span, site.fix))
    return sorted(found, key=lambda d: (d.span.row, d.span.column, d.code))


def report_reason(site: Site, owner: Optional[Heat], module: str = "") -> Optional[str]:
    """Why `site` is reported, or None when it is not: its rule decides, given its function's heat."""
    return RULES_BY_CODE[site.code].report_reason(site, owner, module)


def check_source(text: str, settings: Settings, rules: Optional[Sequence[Rule]] = None) -> List[Diagnostic]:
    """Diagnostics for one module's source text, reasoning about that module alone.
    Raises SourceError when it cannot be parsed."""
    return check_source_with_heat(text, settings, rules)


def _message(site: Site, reason: str) -> str:
    message = f"{site.problem}; {reason}. {site.remedy}."
    if site.fix is not None and site.fix.caveat:
        message += f" Unsafe fix ({site.fix.caveat}): apply it with `--unsafe-fixes`."
    if site.unfixable:
        message += f" Not fixed automatically: {site.unfixable}."
    return message


def check_file(path: str, settings: Settings, rules: Optional[Sequence[Rule]] = None) -> FileResult:
    """Check one file; any failure becomes a one-line error on the result, never an exception."""
    try:
        return FileResult(path, check_source(read_source(path).text, settings, rules))
    except Exception as error:  # even a bug in h2dlint must not stop the other files
        return FileResult(path, (), failure_reason(error))


def check_source_in_project(
    text: str, path: str, settings: Settings, rules: Optional[Sequence[Rule]] = None
) -> List[Diagnostic]:
    """Diagnostics for one file, for faces that see one file at a time (the flake8 plugin).

    `text` is the file's current content and `path` where it lives. When the last `h2dlint check` run with
    the same settings cached a project index covering `path` (in `.h2dlint_cache/`: see `h2dlint.project.cache`),
    the file's functions take the heat that run found across the project, so a function called per step
    from another file is hot here too; functions the file itself makes cold stay cold. Without such an
    index this is exactly `check_source`: reasoning about the file alone. Raises SourceError when `text`
    cannot be parsed.
    """
    if "torch" not in text:
        return []  # before looking for an index: most files a linter sees cost one substring search
    return check_source_with_heat(text, settings, rules, project_heat_for(path, settings))


def check_source_with_heat(
    text: str,
    settings: Settings,
    rules: Optional[Sequence[Rule]] = None,
    known: Optional[Tuple[str, Dict[str, Heat]]] = None,
) -> List[Diagnostic]:
    """`check_source`, with the heat a project run found for this file when `known` gives it: (module name,
    heat by qualname). The fixer re-checks a file it has just rewritten this way, so that fixing agrees with
    the project check. Raises SourceError when `text` cannot be parsed."""
    if "torch" not in text:
        return []  # every rule needs a torch import; this one search is all that most files cost
    rules = enabled_rules(settings) if rules is None else rules
    candidates = candidate_rules(text, rules)
    if not candidates:
        return []  # nor can any rule match without its trigger words
    file = summarize_text(text, settings, candidates)
    summary = file.summary
    if known is None:
        return diagnostics(file, function_heat(summary, settings))
    module, project_heat = known
    heat = {qualname: h for (_, qualname), h in propagate(ModuleGraph(summary, module), settings).items()}
    for qualname, found in project_heat.items():
        # The project's heat wins, except where the file itself makes a function cold.
        if qualname in summary.functions and (qualname not in heat or heat[qualname].hot):
            heat[qualname] = found
    return diagnostics(file, heat, module)


def project_heat_for(path: str, settings: Settings) -> Optional[Tuple[str, Dict[str, Heat]]]:
    """(module name, heat by qualname) of `path` from the cached project index, or None when none covers it."""
    for root in cache_roots(path):
        cache = Cache(settings, root)
        stamp = file_stat(cache.last_run_path)
        found = _cached_project_heat(cache, stamp).get(os.path.abspath(path)) if stamp else None
        if found is not None:
            return found
    return None


@functools.lru_cache(maxsize=4)
def _cached_project_heat(cache: Cache, stamp: Tuple[int, int]) -> Dict[str, Tuple[str, Dict[str, Heat]]]:
    """Loaded once per process and per version of the index: flake8 asks for every file in turn."""
    return cache.load_last_run().heat or {}

"""The analysis core that every face (CLI, flake8, pre-commit) calls: source text in, diagnostics out."""

from __future__ import annotations

import ast
import functools
import os
import warnings
from dataclasses import dataclass
from functools import partial
from typing import Dict, List, Optional, Sequence, Tuple

from h2dlint.cache import Cache, cache_roots, file_stat
from h2dlint.collector import summarize
from h2dlint.hotness import Heat, ModuleGraph, function_heat, mark_captured, propagate, site_reason_for
from h2dlint.noqa import NoqaComments
from h2dlint.positions import source_lines
from h2dlint.recursion import with_room_to_recurse
from h2dlint.rewrites import plan_fix
from h2dlint.rules import ALL_CODES, RULES_BY_CODE, Rule
from h2dlint.settings import Settings, UsageError, selected_codes
from h2dlint.sources import SourceError, read_source
from h2dlint.summary import Fix, ModuleSummary, Site, Span


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
    return [RULES_BY_CODE[code](settings) for code in enabled_codes(settings)]


@functools.lru_cache(maxsize=64)
def enabled_codes(settings: Settings) -> Tuple[str, ...]:
    """The rule codes `settings` selects; asked once per file by faces that filter findings per file."""
    return selected_codes(ALL_CODES, settings.select, settings.ignore)


@dataclass(frozen=True)
class FileSummary:
    """What one file contributes to a run, and what the cache keeps per file content."""

    summary: ModuleSummary
    suppressed: Tuple[bool, ...] = ()  # per site of `summary`: covered by a `# noqa` comment
    error: Optional[str] = None  # one line, when the file could not be analysed


def candidate_rules(text: str, rules: Sequence[Rule]) -> List[Rule]:
    """The rules that may match in `text`: a substring test costing microseconds, not a parse."""
    if "torch" not in text:
        return []  # every rule needs a torch import
    return [r for r in rules if r.may_match(text)]


def summarize_source(text: str, settings: Settings, rules: Sequence[Rule]) -> FileSummary:
    """Parse and summarise one file for a project run. A file that no rule can match is still summarised
    (its functions and calls carry hotness to other files), but its parse errors are not reported."""
    candidates = candidate_rules(text, rules)
    try:
        lines = source_lines(text)
        summary = _summarize(text, lines, candidates, settings)
    except (SourceError, RecursionError) as error:
        return FileSummary(ModuleSummary(), (), failure_reason(error) if candidates else None)
    return FileSummary(summary, _suppressed(summary, lines))


def diagnostics(file: FileSummary, heat: Dict[str, Heat], module: str = "") -> List[Diagnostic]:
    """The reported findings of one summarised file, given the heat of its functions (by qualname)."""
    found = []
    for site, suppressed in zip(file.summary.sites, file.suppressed):
        reason = report_reason(site, heat.get(site.function), module)
        if reason is not None and not suppressed:
            found.append(Diagnostic(site.code, _message(site, reason), site.span, site.fix))
    return sorted(found, key=lambda d: (d.span.row, d.span.column, d.code))


def report_reason(site: Site, owner: Optional[Heat], module: str = "") -> Optional[str]:
    """Why `site` is reported, or None when it is not: hot code for most rules; CUDA-graph capture, whatever
    the heat, for a rule that reports capture (HTD106)."""
    if RULES_BY_CODE[site.code].reports_capture:
        return site.capture
    return site_reason_for(site, owner, module)


def _summarize(text: str, lines: Sequence[str], rules: Sequence[Rule], settings: Settings) -> ModuleSummary:
    """Parse `text` and summarise it, planning each site's fix. Raises SourceError."""
    return with_room_to_recurse(_parse_and_summarize, text, lines, rules, settings)


def _parse_and_summarize(text: str, lines: Sequence[str], rules: Sequence[Rule], settings: Settings) -> ModuleSummary:
    tree = _parse(text)
    planner = partial(plan_fix, tree=tree, text=text, lines=lines, helper_module=settings.helper_module)
    summary = summarize(tree, lines, rules, planner)
    mark_captured(summary)
    return summary


def check_source(text: str, settings: Settings, rules: Optional[Sequence[Rule]] = None) -> List[Diagnostic]:
    """Diagnostics for one module's source text, reasoning about that module alone.
    Raises SourceError when it cannot be parsed."""
    return check_source_with_heat(text, settings, rules)


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
    if isinstance(error, (SourceError, UsageError)):  # UsageError: the file's configuration is broken
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


def _suppressed(summary: ModuleSummary, lines: Sequence[str]) -> Tuple[bool, ...]:
    """Per site: covered by a matching `# noqa` comment (see `h2dlint.noqa`)."""
    noqa = NoqaComments(lines)
    return tuple(noqa.suppress(site.code, site.span.row, site.span.end_row) for site in summary.sites)


def check_source_in_project(
    text: str, path: str, settings: Settings, rules: Optional[Sequence[Rule]] = None
) -> List[Diagnostic]:
    """Diagnostics for one file, for faces that see one file at a time (the flake8 plugin).

    `text` is the file's current content and `path` where it lives. When the last `h2dlint check` run with
    the same settings cached a project index covering `path` (in `.h2dlint_cache/`: see `h2dlint.cache`),
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
    lines = source_lines(text)
    summary = _summarize(text, lines, candidates, settings)
    file = FileSummary(summary, _suppressed(summary, lines))
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

"""Findings: a file's summarised sites and its functions' heat make its diagnostics.

This is also where one file is checked on its own (`check_source`, `check_file`) or with the heat a project
run found for it (`check_source_with_heat`; `one_file` gives faces that see one file at a time that heat).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from h2dlint.checker.call_graph import ModuleGraph
from h2dlint.checker.file_summary import FileSummary, candidate_rules, enabled_rules, failure_reason
from h2dlint.facts.heat import PER_REQUEST, PER_STEP, Heat, at_least, site_heuristic, site_level, site_reason_for
from h2dlint.facts.settings import Settings
from h2dlint.facts.sources import read_source
from h2dlint.facts.summary import Edit, Fix, Site, Span
from h2dlint.project.hotness import function_heat, propagate
from h2dlint.project.observed import observe
from h2dlint.rules import RULES_BY_CODE, Rule


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    span: Span
    fix: Optional[Fix] = None  # None when the rule has no fix, or the site cannot be fixed
    # The parts of `message`, for faces that show them apart (JSON, `--show-reasons`, the language server):
    reason: str = ""  # why the site is reported: "in a loop at line 6; `Runner.forward` runs per step"
    remedy: str = ""  # what to do instead, and why the fix does not apply here when it does not
    level: str = PER_STEP  # how often the code runs (`facts.heat.LEVELS`); capture findings count as per step
    confirmed: Optional[int] = None  # the syncs a traced CUDA run saw at its lines (`project.confirmed`)
    heuristic: Optional[str] = None  # the id of the heuristic that made the site hot (`report_heuristic`)
    edits: Tuple[Edit, ...] = ()  # the fix's text edits, for the JSON and SARIF formats (`fixing/edits.py`)


@dataclass(frozen=True)
class FileResult:
    path: str
    diagnostics: Sequence[Diagnostic]
    error: Optional[str] = None  # one line, when the file could not be checked


def diagnostics(
    file: FileSummary, heat: Dict[str, Heat], module: str = "", min_level: str = PER_REQUEST
) -> List[Diagnostic]:
    """The reported findings of one summarised file, given the heat of its functions (by qualname), of code
    that runs at least as often as `min_level`."""
    found = []
    for pending, suppressed in zip(file.summary.sites, file.suppressed):
        site = pending.decided()  # a question that no file answers (or none was asked) has an unknown answer
        owner = heat.get(site.function)
        reason = report_reason(site, owner, module)
        if reason is None or suppressed:
            continue
        level = report_level(site, owner)
        if at_least(level, min_level):
            found.append(Diagnostic(
                site.code, _message(site, reason), site.span, site.fix, reason, _remedy(site), level=level,
                heuristic=report_heuristic(site, owner, reason, module),
            ))
    return sorted(found, key=lambda d: (d.span.row, d.span.column, d.code))


def report_level(site: Site, owner: Optional[Heat]) -> str:
    """The level of a reported site; one that no heat explains (a capture finding, about every replay of the
    graph) is per step."""
    return site_level(site, owner) or PER_STEP


def report_reason(site: Site, owner: Optional[Heat], module: str = "") -> Optional[str]:
    """Why `site` is reported, or None when it is not: its rule decides, given its function's heat. A site
    still waiting on another file's placement (`placement_links`) is not."""
    return RULES_BY_CODE[site.code].report_reason(site, owner, module) if site.query is None else None


def report_heuristic(site: Site, owner: Optional[Heat], reason: str, module: str = "") -> Optional[str]:
    """The id of the heuristic that made a `site` reported for `reason` hot; None when its rule reports it
    for a reason of its own (HTD106: CUDA-graph capture, a fact of the code, not a heuristic)."""
    return site_heuristic(site, owner) if reason == site_reason_for(site, owner, module) else None


def check_source(text: str, settings: Settings, rules: Optional[Sequence[Rule]] = None) -> List[Diagnostic]:
    """Diagnostics for one module's source text, reasoning about that module alone.
    Raises SourceError when it cannot be parsed."""
    return check_source_with_heat(text, settings, rules)


def _message(site: Site, reason: str) -> str:
    return f"{site.problem}; {reason}. {_remedy(site)}"


def _remedy(site: Site) -> str:
    remedy = f"{site.remedy}."
    if site.fix is not None and site.fix.caveat:
        remedy += f" Unsafe fix ({site.fix.caveat}): apply it with `--unsafe-fixes`."
    if site.unfixable:
        remedy += f" Not fixed automatically: {site.unfixable}."
    return remedy


def check_file(path: str, settings: Settings, rules: Optional[Sequence[Rule]] = None) -> FileResult:
    """Check one file; any failure becomes a one-line error on the result, never an exception."""
    try:
        return FileResult(path, check_source(read_source(path).text, settings, rules))
    except Exception as error:  # even a bug in h2dlint must not stop the other files
        return FileResult(path, (), failure_reason(error))


def check_source_with_heat(
    text: str,
    settings: Settings,
    rules: Optional[Sequence[Rule]] = None,
    known: Optional[Tuple[str, Dict[str, Heat]]] = None,
    path: Optional[str] = None,
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
    from h2dlint.checker.analyzer import summarize_text  # the walk: imported once a file must be analysed

    file = summarize_text(text, settings, candidates)
    summary = file.summary
    if known is None:
        heat = function_heat(summary, settings)
        if path is not None and settings.profile:  # a traced run's counts, for the file alone
            observed = observe({("", q): h for q, h in heat.items()}, {"": (path, summary)}, settings)
            heat = {qualname: h for (_, qualname), h in observed.items()}
            from h2dlint.project.confirmed import heat_by_line, with_observed_syncs  # built on this module

            found = diagnostics(file, heat, min_level=settings.min_level)
            return with_observed_syncs(path, found, settings, heat_by_line(summary, heat))
        return diagnostics(file, heat, min_level=settings.min_level)
    module, project_heat = known
    heat = {qualname: h for (_, qualname), h in propagate(ModuleGraph(summary, module), settings).items()}
    for qualname, found in project_heat.items():
        # The project's heat wins, except where the file itself makes a function cold.
        if qualname in summary.functions and (qualname not in heat or heat[qualname].hot):
            heat[qualname] = found
    return diagnostics(file, heat, module, settings.min_level)

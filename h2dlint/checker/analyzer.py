"""The analysis core that every face (CLI, flake8, pre-commit) calls: source text in, diagnostics out."""

from __future__ import annotations

import ast
import warnings
from functools import partial
from typing import Optional, Sequence, Tuple

from h2dlint.checker.collector import summarize
from h2dlint.checker.file_summary import (  # noqa: F401 - this module's API before they moved
    FileSummary,
    candidate_rules,
    enabled_codes,
    enabled_rules,
    failure_reason,
)
from h2dlint.checker.jit import without_fixes_in_jit_code
from h2dlint.checker.walk import placements_of
from h2dlint.facts.noqa import NoqaComments
from h2dlint.facts.placement_summary import ModulePlacements
from h2dlint.facts.positions import source_lines
from h2dlint.facts.recursion import with_room_to_recurse
from h2dlint.facts.settings import Settings
from h2dlint.facts.sources import SourceError
from h2dlint.facts.summary import ModuleSummary, PlacementExports
from h2dlint.rules import Rule
from h2dlint.rules.fix_plan import plan_fix


def summarize_source(text: str, settings: Settings, rules: Sequence[Rule]) -> FileSummary:
    """Parse and summarise one file for a project run. A file that no rule can match is still summarised
    (its functions and calls carry hotness to other files), but its parse errors are not reported."""
    candidates = candidate_rules(text, rules)
    try:
        return summarize_text(text, settings, candidates)
    except (SourceError, RecursionError) as error:
        return FileSummary(ModuleSummary(), (), failure_reason(error) if candidates else None)


def summarize_text(text: str, settings: Settings, rules: Sequence[Rule]) -> FileSummary:
    """Parse and summarise `text` with `rules`, noting which sites a `# noqa` covers. Raises SourceError."""
    lines = source_lines(text)
    summary = _summarize(text, lines, rules, settings)
    return FileSummary(summary, _suppressed(summary, lines))


def _summarize(text: str, lines: Sequence[str], rules: Sequence[Rule], settings: Settings) -> ModuleSummary:
    """Parse `text` and summarise it, planning each site's fix. Raises SourceError."""
    return with_room_to_recurse(_parse_and_summarize, text, lines, rules, settings)


def _parse_and_summarize(text: str, lines: Sequence[str], rules: Sequence[Rule], settings: Settings) -> ModuleSummary:
    tree = _parse(text)
    summary = summarize(tree, lines, rules, partial(plan_fix, tree=tree, lines=lines), settings)
    return without_fixes_in_jit_code(summary, tree, text)


def placement_exports(text: str, settings: Settings) -> PlacementExports:
    """What `text`'s placement analysis tells other files (`ModulePlacements.exports`), asked by the project
    of the files its questions reach; nothing for a file that cannot be parsed."""
    try:
        return with_room_to_recurse(_parse_and_export, text, settings)
    except (SourceError, RecursionError):
        return PlacementExports()


def _parse_and_export(text: str, settings: Settings) -> PlacementExports:
    placements = _parse_and_place(text, settings)
    return placements.exports() if placements is not None else PlacementExports()


def module_placements(text: str, settings: Settings) -> Optional[ModulePlacements]:
    """A fresh placement knowledge of `text`, for the project's questions about the calls it makes
    (`ModulePlacements.argument_at`); None for a file that cannot be parsed or uses no torch."""
    try:
        return with_room_to_recurse(_parse_and_place, text, settings)
    except (SourceError, RecursionError):
        return None


def _parse_and_place(text: str, settings: Settings) -> Optional[ModulePlacements]:
    return placements_of(_parse(text), source_lines(text), settings)


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
    """Per site: covered by a matching `# noqa` comment (see `h2dlint.facts.noqa`)."""
    noqa = NoqaComments(lines)
    return tuple(noqa.suppress(site.code, site.span.row, site.span.end_row) for site in summary.sites)



"""The analysis core that every face (CLI, flake8, pre-commit) calls: source text in, diagnostics out."""

from __future__ import annotations

import ast
import functools
import warnings
from dataclasses import dataclass
from functools import partial
from typing import List, Optional, Sequence, Tuple

from h2dlint.checker.collector import summarize
from h2dlint.checker.jit import without_fixes_in_jit_code
from h2dlint.facts.noqa import NoqaComments
from h2dlint.facts.positions import source_lines
from h2dlint.facts.recursion import with_room_to_recurse
from h2dlint.facts.settings import Settings, UsageError, selected_codes
from h2dlint.facts.sources import SourceError
from h2dlint.facts.summary import ModuleSummary
from h2dlint.rules import ALL_CODES, RULES_BY_CODE, Rule
from h2dlint.rules.fix_plan import plan_fix


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
    return without_fixes_in_jit_code(summary, tree)


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
    """Per site: covered by a matching `# noqa` comment (see `h2dlint.facts.noqa`)."""
    noqa = NoqaComments(lines)
    return tuple(noqa.suppress(site.code, site.span.row, site.span.end_row) for site in summary.sites)



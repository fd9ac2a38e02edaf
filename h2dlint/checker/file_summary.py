"""What one file contributes to a run, which rules run on it, and why a file could not be analysed.

Kept apart from `analyzer` (the parse and the walk) so that a run that analyses no file, the warm run where
nothing changed, never imports the walk: it reads these records from the cache and filters findings by
rule code, nothing more.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from h2dlint.facts.settings import Settings, UsageError, selected_codes
from h2dlint.facts.sources import SourceError
from h2dlint.facts.summary import ModuleSummary
from h2dlint.rules import ALL_CODES, RULES_BY_CODE, Rule


def enabled_rules(settings: Settings) -> List[Rule]:
    return [RULES_BY_CODE[code](settings) for code in enabled_codes(settings)]


def enabled_codes(settings: Settings) -> Tuple[str, ...]:
    """The rule codes `settings` selects; asked once per file by faces that filter findings per file."""
    return _selected(settings.select, settings.ignore)


@functools.lru_cache(maxsize=64)  # keyed on the two selections, not on the whole Settings: cheap to hash
def _selected(select: Tuple[str, ...], ignore: Tuple[str, ...]) -> Tuple[str, ...]:
    return selected_codes(ALL_CODES, select, ignore)


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


def failure_reason(error: Exception) -> str:
    """The one-line reason, for the user, why checking a file raised `error`."""
    if isinstance(error, (SourceError, UsageError)):  # UsageError: the file's configuration is broken
        return str(error)
    if isinstance(error, RecursionError):
        return "too deeply nested to analyse"
    return f"internal error ({type(error).__name__}: {error}); please report it"

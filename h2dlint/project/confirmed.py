"""Runtime confirmation: the synchronisations a traced CUDA run saw, set against a file's findings.

With a profile holding sync records (`h2dlint trace` on CUDA), each finding whose lines the run saw
synchronise is marked "confirmed (N syncs observed)", and each such line that no finding covers is
reported under HTD301 (`rules.observed_sync`), where it runs hot: in a hot function, at that function's
level; elsewhere only when the run saw it sync at least `profile-min-calls` times (a loop in a function that
ran once, or in no function), as "observed-hot". A sync in one-time code (`__init__`, a warmup, a function
the run saw run once) is not reported, and no claim says more often than the run showed. A file changed
since the trace is left as it is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Dict, List, Optional, Sequence

from h2dlint.facts.heat import OBSERVED_HOT, Heat, at_least
from h2dlint.facts.observations import PAGEABLE_COPY, SyncRecord
from h2dlint.facts.settings import Settings
from h2dlint.facts.summary import ModuleSummary, Span
from h2dlint.project.findings import Diagnostic
from h2dlint.project.observed import traced_records_path
from h2dlint.project.profile_file import observations_for

OBSERVED_SYNC = "HTD301"
_KINDS = {PAGEABLE_COPY: "non-blocking copies from pageable memory, which ran synchronously"}


HeatAt = Callable[[int], Optional[Heat]]  # the heat of the innermost function holding a line (None: none)


def with_observed_syncs(
    path: str, found: Sequence[Diagnostic], settings: Settings, heat_at: HeatAt
) -> List[Diagnostic]:
    """`found` (the findings of `path`), confirmed by the profile's sync records, plus HTD301 findings."""
    observations = observations_for(settings)
    rel = traced_records_path(observations, path) if observations is not None and observations.syncs else None
    if rel is None:
        return list(found)
    syncs = [s for s in observations.syncs if s.path == rel]  # type: ignore[union-attr]
    confirmed = [_confirmed(d, syncs) for d in found]
    covered = {row for d in found for row in range(d.span.row, d.span.end_row + 1)}
    unexplained = []
    for sync in syncs:
        level = None if sync.line in covered else _observed_level(sync, heat_at(sync.line), settings.profile_min_calls)
        if level is not None and at_least(level, settings.min_level):
            unexplained.append(_unexplained(sync, level))
    return sorted(confirmed + unexplained, key=lambda d: (d.span.row, d.span.column, d.code))


def heat_by_line(summary: ModuleSummary, heat: Dict[str, Heat]) -> HeatAt:
    """`HeatAt` for a file of `summary` whose functions have `heat` (by qualname; absent: neutral)."""

    def heat_at(line: int) -> Optional[Heat]:
        holding = [f for f in summary.functions.values() if f.line <= line <= f.end_line]
        innermost = max(holding, key=lambda f: f.line, default=None)
        return heat.get(innermost.qualname) if innermost is not None else None

    return heat_at


def _observed_level(sync: SyncRecord, owner: Optional[Heat], min_calls: int) -> Optional[str]:
    """How often an unexplained sync's line runs, or None for one-time code: the level of the hot function
    around it; in one that the run saw run once, in a neutral one or in none, "observed-hot" if the run saw
    the line sync at least `min_calls` times; in a function cold for a reason of its own, never (cold wins)."""
    if owner is not None and owner.hot:
        return owner.level
    if owner is not None and owner.observed != 1:
        return None
    return OBSERVED_HOT if sync.count >= min_calls else None


def _confirmed(d: Diagnostic, syncs: Sequence[SyncRecord]) -> Diagnostic:
    count = sum(s.count for s in syncs if d.span.row <= s.line <= d.span.end_row)
    if not count:
        return d
    return replace(d, message=f"{d.message} Confirmed ({count} syncs observed in the traced run).", confirmed=count)


def _unexplained(sync: SyncRecord, level: str) -> Diagnostic:
    what = _KINDS.get(sync.kind, "synchronising CUDA calls")
    via = f" (stack: {', '.join(sync.stack[:4])})" if len(sync.stack) > 1 else ""
    message = f"the traced run saw {sync.count} {what} at this line{via}; no rule explains it"
    span = Span(sync.line, 1, sync.line, 1)
    return Diagnostic(OBSERVED_SYNC, message, span, level=level, confirmed=sync.count)

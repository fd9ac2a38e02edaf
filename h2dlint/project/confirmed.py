"""Runtime confirmation: the synchronisations a traced CUDA run saw, set against a file's findings.

With a profile holding sync records (`h2dlint trace` on CUDA), each finding whose lines the run saw
synchronise is marked "confirmed (N syncs observed)", and each such line that no finding covers is
reported under HTD301 (`rules.observed_sync`). A file changed since the trace is left as it is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import List, Sequence

from h2dlint.facts.heat import OBSERVED_HOT
from h2dlint.facts.observations import PAGEABLE_COPY, SyncRecord
from h2dlint.facts.settings import Settings
from h2dlint.facts.summary import Span
from h2dlint.project.findings import Diagnostic
from h2dlint.project.observed import traced_records_path
from h2dlint.project.profile_file import observations_for

OBSERVED_SYNC = "HTD301"
_KINDS = {PAGEABLE_COPY: "non-blocking copies from pageable memory, which ran synchronously"}


def with_observed_syncs(path: str, found: Sequence[Diagnostic], settings: Settings) -> List[Diagnostic]:
    """`found` (the findings of `path`), confirmed by the profile's sync records, plus HTD301 findings."""
    observations = observations_for(settings)
    rel = traced_records_path(observations, path) if observations is not None and observations.syncs else None
    if rel is None:
        return list(found)
    syncs = [s for s in observations.syncs if s.path == rel]  # type: ignore[union-attr]
    confirmed = [_confirmed(d, syncs) for d in found]
    covered = {row for d in found for row in range(d.span.row, d.span.end_row + 1)}
    unexplained = [_unexplained(s) for s in syncs if s.line not in covered]
    return sorted(confirmed + unexplained, key=lambda d: (d.span.row, d.span.column, d.code))


def _confirmed(d: Diagnostic, syncs: Sequence[SyncRecord]) -> Diagnostic:
    count = sum(s.count for s in syncs if d.span.row <= s.line <= d.span.end_row)
    if not count:
        return d
    return replace(d, message=f"{d.message} Confirmed ({count} syncs observed in the traced run).", confirmed=count)


def _unexplained(sync: SyncRecord) -> Diagnostic:
    what = _KINDS.get(sync.kind, "synchronising CUDA calls")
    via = f" (stack: {', '.join(sync.stack[:4])})" if len(sync.stack) > 1 else ""
    message = f"the traced run saw {sync.count} {what} at this line{via}; no rule explains it"
    span = Span(sync.line, 1, sync.line, 1)
    return Diagnostic(OBSERVED_SYNC, message, span, level=OBSERVED_HOT, confirmed=sync.count)

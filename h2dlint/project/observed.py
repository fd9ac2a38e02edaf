"""Heat observed in a real run: a profile's call counts decide the heat of every function the run reached.

With a profile (`check --profile FILE`, config `profile`), a function the traced run saw run at least
`profile-min-calls` times is hot ("`_pack` ran 240 times in the traced run"), and one it saw run exactly once
is one-time; the loops inside that one still repeat (see `facts.heat.site_level`), unless the static model
already made it one-time (a warmup's loop over batch sizes). A function the run never
reached, or saw run a few times, keeps the static model, and so does every function of a file whose content
changed since the trace (`stale_note` names those). Markers (`# h2dlint: hot` / `cold`) are the user's word
and win over the run.

The level of an observed hot function comes from its count against the run's step count (`STEP_COUNT`).
"""

from __future__ import annotations

import os
from typing import Dict, Iterable, List, Optional, Tuple

from h2dlint.facts.heat import HERE, OBSERVED_HOT, PER_REQUEST, PER_STEP, Heat, Key
from h2dlint.facts.observations import FunctionCount, Observations, digest
from h2dlint.facts.settings import Settings
from h2dlint.facts.summary import FunctionInfo, ModuleSummary
from h2dlint.project.profile_file import observations_for

# Heuristic `STEP_COUNT`: the number of steps the run took is the count of the least busy statically
# per-step root that the run saw repeat. Every per-step root runs at least once per step, while the busiest
# ones run once per layer or per token (a model's `forward` in each of its layers), so the least busy is the
# closest to one call per step. Without such a root there is nothing to rank against: "observed-hot".
# Heuristic `PER_STEP_SHARE`: a function that ran at least half as often as the steps is per step (one skipped
# on some steps, as a draft-only path on the non-speculative batches, still is); less often, per request.
PER_STEP_SHARE = 0.5

Files = Dict[str, Tuple[str, ModuleSummary]]  # module -> (its path, its summary)


def observe(heat: Dict[Key, Heat], files: Files, settings: Settings) -> Dict[Key, Heat]:
    """`heat`, with the observed counts of `settings.profile` deciding the functions the run reached."""
    observations = observations_for(settings)
    if observations is None:
        return heat
    counts = _observed_counts(observations, files)
    steps = _step_count(heat, counts, settings.profile_min_calls)
    found = dict(heat)
    for key, calls in counts.items():
        function = files[key[0]][1].functions[key[1]]
        if _marked(function, files[key[0]][1]):
            continue
        if calls >= settings.profile_min_calls:
            found[key] = _hot(key, calls, steps)
        elif calls == 1 and (key not in heat or heat[key].hot):  # once agrees with a static one-time verdict
            origin = f"`{HERE}{key[1]}` ran once in the traced run"
            found[key] = Heat(False, origin, "ran once in the traced run", module=key[0], observed=1)
    return found


def stale_note(settings: Settings, paths: Iterable[str]) -> Optional[str]:
    """One line naming the checked files that changed since the profile was traced, or None."""
    observations = observations_for(settings)
    if observations is None:
        return None
    basenames = _by_basename(observations)
    stale = [p for p in paths if (rel := _traced_path(observations, p, basenames)) and _is_stale(observations, rel, p)]
    if not stale:
        return None
    shown = ", ".join(stale[:3]) + (f" and {len(stale) - 3} more" if len(stale) > 3 else "")
    return (
        f"note: {len(stale)} file{'s' if len(stale) != 1 else ''} changed since {settings.profile} was traced "
        f"({shown}); their functions keep the static model"
    )


def traced_records_path(observations: Observations, path: str) -> Optional[str]:
    """The path the trace names `path` by, when it did and the file has not changed since; else None."""
    rel = _traced_path(observations, path, _by_basename(observations))
    return rel if rel is not None and not _is_stale(observations, rel, path) else None


def _hot(key: Key, calls: int, steps: Optional[int]) -> Heat:
    if steps is None:
        level = OBSERVED_HOT
    else:
        level = PER_STEP if calls >= PER_STEP_SHARE * steps else PER_REQUEST
    origin = f"`{HERE}{key[1]}` ran {calls} times in the traced run"
    return Heat(True, origin, f"ran {calls} times in the traced run", module=key[0], level=level, observed=calls)


def _step_count(heat: Dict[Key, Heat], counts: Dict[Key, int], min_calls: int) -> Optional[int]:
    roots = [
        calls
        for key, calls in counts.items()
        if calls >= min_calls and (h := heat.get(key)) is not None and h.hot and h.level == PER_STEP and not h.chain
    ]
    return min(roots) if roots else None


def _marked(function: FunctionInfo, summary: ModuleSummary) -> bool:
    cls = summary.classes.get(function.class_qualname or "")
    return function.marker is not None or (cls is not None and cls.marker is not None)


def _observed_counts(observations: Observations, files: Files) -> Dict[Key, int]:
    """The calls of each function of `files` the run reached, leaving out files changed since the trace."""
    by_path, basenames = observations.by_path(), _by_basename(observations)
    counts: Dict[Key, int] = {}
    for module, (path, summary) in files.items():
        rel = _traced_path(observations, path, basenames)
        if rel is None or _is_stale(observations, rel, path):
            continue
        for record in by_path.get(rel, ()):
            qualname = _matching_function(record, summary)
            if qualname is not None:
                counts[(module, qualname)] = counts.get((module, qualname), 0) + record.calls
    return counts


def _matching_function(record: FunctionCount, summary: ModuleSummary) -> Optional[str]:
    """The function a record counts: by qualname, or (cProfile has none) by name and first line, which is the
    first decorator's line and so at most a few lines above the `def`."""
    if record.qualname is not None:
        return record.qualname if record.qualname in summary.functions else None
    near = [f for f in summary.functions.values() if f.name == record.name and 0 <= f.line - record.line <= 20]
    return min(near, key=lambda f: f.line - record.line).qualname if near else None


def _traced_path(observations: Observations, path: str, basenames: Dict[str, List[str]]) -> Optional[str]:
    """The path the trace names `path` by: relative to the traced root, or, for a project checked out
    elsewhere, the longest traced path that the file's path ends with."""
    full = os.path.abspath(path).replace(os.sep, "/")
    if observations.root:
        rel = os.path.relpath(full, observations.root).replace(os.sep, "/")
        if rel in observations.files:
            return rel
    matches = [rel for rel in basenames.get(full.rpartition("/")[2], ()) if full.endswith("/" + rel)]
    return max(matches, key=len) if matches else None


def _by_basename(observations: Observations) -> Dict[str, List[str]]:
    index: Dict[str, List[str]] = {}
    for rel in observations.files:
        index.setdefault(rel.rpartition("/")[2], []).append(rel)
    return index


def _is_stale(observations: Observations, rel: str, path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return digest(handle.read()) != observations.files.get(rel)
    except OSError:
        return True

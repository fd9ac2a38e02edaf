"""After edits that leave the heat as it was, the findings of the files whose pending sites may now be answered
differently (`run._recheck_changed`): a file's edit changes other files' answers when what its summary tells them
changed, when the last run asked for its exports and they changed, or when it asked what its calls pass."""

from __future__ import annotations

import os
from typing import AbstractSet, Dict, Optional, Sequence, Tuple

from h2dlint.checker.file_summary import FileSummary
from h2dlint.facts.heat import Heat
from h2dlint.facts.settings import Settings
from h2dlint.facts.summary import PlacementExports
from h2dlint.project.cache import Cache, LastRun, Stat
from h2dlint.project.files import Candidate
from h2dlint.project.findings import FileResult, diagnostics
from h2dlint.project.index import ProjectGraph
from h2dlint.project.placement_demand import CALLS_ASKED, DemandedExports, worked_out
from h2dlint.project.placement_links import PlacementLinks, has_pending

_Keyed = Tuple[Optional[Stat], str]  # a file's stat and content key


def relink(
    candidates: Sequence[Candidate],
    cache: Cache,
    last: LastRun,
    stats: Dict[str, _Keyed],
    heat: Dict[str, Tuple[str, Dict[str, Heat]]],
    files: Dict[str, FileSummary],
    settings: Settings,
    results: Dict[str, FileResult],
) -> Optional[AbstractSet[str]]:
    """After edits that leave the heat as it was (`run._recheck_changed`), the findings of every file with
    pending sites, recomputed in `results` when an edited file (`files`, by path as given) exports other
    placements than before or has pending sites itself; the heat is not propagated again. `stats` holds the
    content keys after the edits, `heat` the module and heat of each file, both by absolute path. Returns the
    files whose exports the findings now read (`LastRun.asked`); None when a summary it needs is no longer in
    the cache."""
    edited = [(p, f) for p, f in files.items() if last.stats[os.path.abspath(p)][1] != stats[os.path.abspath(p)][1]]
    if not any(has_pending(file) or _exports_changed(cache, last, stats, settings, p, file) for p, file in edited):
        return last.asked
    summaries: Dict[str, FileSummary] = {}
    for candidate in candidates:
        if candidate.error is None:
            full = os.path.abspath(candidate.path)
            found = files.get(candidate.path) or cache.load_summary(stats[full][1])
            if not isinstance(found, FileSummary):
                return None
            summaries[candidate.path] = found
    modules = {path: heat[os.path.abspath(path)][0] for path in summaries}
    by_module, paths = {modules[p]: f.summary for p, f in summaries.items()}, {m: p for p, m in modules.items()}
    demand = DemandedExports(settings, cache, paths, {p: stats[os.path.abspath(p)][1] for p in summaries})
    links = PlacementLinks(
        ProjectGraph(by_module, paths), by_module, paths, demand, demand.argument, demand.record_fills,
        demand.submodule_calls,
    )
    for path, file in summaries.items():
        if has_pending(file):
            module, file_heat = heat[os.path.abspath(path)]
            found = diagnostics(links.resolved(file, module), file_heat, module, settings.min_level)
            results[path] = FileResult(path, found, file.error)
    return frozenset(demand.asked)


def _exports_changed(
    cache: Cache, last: LastRun, stats: Dict[str, _Keyed], settings: Settings, path: str, new: FileSummary
) -> bool:
    """Whether an edited file may answer other files' questions differently: what its summary tells them
    changed, or its exports did, where the last run asked for them (one it did not ask still answers
    nothing: the questions and where they lead are as they were)."""
    full = os.path.abspath(path)
    if full + CALLS_ASKED in last.asked:
        return True  # what its calls pass placed another file's parameter: worked out again, not compared
    old = cache.load_summary(last.stats[full][1])
    if not isinstance(old, FileSummary) or _read_by_others(old) != _read_by_others(new):
        return True
    if full not in last.asked:
        return False
    before, after = cache.load_exports(last.stats[full][1]), worked_out(path, stats[full][1], settings, cache)
    return not isinstance(before, PlacementExports) or before != after


def _read_by_others(file: FileSummary) -> object:
    """What other files' answers read of `file`'s summary: the attributes its classes hold, the names it calls
    and the attributes it stores, which decide whether a record's field is trusted (`PlacementLinks._trusted`,
    `record_fills`), and the names it calls or imports, whether a public function's module calls are all its
    calls."""
    summary = file.summary
    return (
        summary.attribute_names, summary.filled_records, summary.called_names, summary.stored_attributes,
        summary.imports,
    )

"""A run over many files: per-file summaries (cached, in worker processes), then hotness across the project.

    discover -> stat each file -> summaries from the cache, or read, hashed and parsed (in parallel when many:
             `summaries`)
             -> ProjectGraph over all summaries -> propagate heat -> pending placements resolved through
             the graph (`placement_links`) -> diagnostics per file

With the cache, a run where nothing changed returns the last run's results; one where some files changed
re-summarises only those, and when the edits leave propagation's input as it was (`moved_loops.moved_loops`),
keeps the last run's heat and recomputes only the findings it must (`_recheck_changed`).

Nothing here decides what a finding is: summaries come from `analyzer.summarize_source`, heat from
`hotness.propagate`, findings from `analyzer.diagnostics`. Results are the same with or without the cache
and with any number of workers: a file's summary depends only on its content and the settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import AbstractSet, Dict, List, Optional, Sequence, Tuple

from h2dlint.checker.file_summary import FileSummary
from h2dlint.facts.heat import Heat, Key
from h2dlint.facts.settings import Settings
from h2dlint.project.cache import Cache, LastRun, Stat, default_cache_root
from h2dlint.project.confirmed import heat_by_line, with_observed_syncs
from h2dlint.project.files import Candidate, Excluded, discover
from h2dlint.project.fingerprints import content_keys, fingerprint, layout_key, same_stat, unchanged_since
from h2dlint.project.findings import FileResult, diagnostics
from h2dlint.project.hotness import propagate
from h2dlint.project.moved_loops import MovedLoops, moved_loops, moved_root, with_moved_loops
from h2dlint.project.index import ProjectGraph
from h2dlint.project.module_names import module_names
from h2dlint.project.observed import observe
from h2dlint.project.placement_demand import DemandedExports
from h2dlint.project.placement_links import PlacementLinks, first_asked, has_pending
from h2dlint.project.placement_relink import relink
from h2dlint.project.roots import Project
from h2dlint.project.summaries import SERIAL_BELOW, Outcome, Progress, Summarized, collector_paused, no_progress
from h2dlint.project.summaries import summaries as file_summaries, summarize_all


@dataclass(frozen=True)
class ProjectRun:
    """Everything a run concluded: results in discovery order, and what `explain` needs."""

    results: List[FileResult]
    summaries: Dict[str, FileSummary]  # by path
    modules: Dict[str, str]  # path -> its module name in the project graph
    heat: Dict[Key, Heat]
    stats: Dict[str, Tuple[Optional[Stat], str]]  # path -> (stat, content key)
    asked: AbstractSet[str] = frozenset()  # the files whose placement exports were read (`placement_demand`)


def default_jobs() -> int:
    return os.cpu_count() or 1


def check_paths(
    paths: Sequence[str],
    settings: Settings,
    exclude: Sequence[str] = (),
    jobs: Optional[int] = None,
    use_cache: bool = True,
    excluded: Optional[Excluded] = None,
    progress: Optional[Progress] = None,
) -> List[FileResult]:
    """Check files and folders as one project (whatever project roots they lie in: see `index_project` for
    that); results are in discovery order. `excluded` skips more paths while walking folders (a
    configuration's `exclude`); `progress` wraps the files as they are parsed (the CLI's progress bar)."""
    last = index_project(Project(None, tuple(paths)), settings, exclude, jobs, use_cache, excluded, progress)
    return list(last.results.values())  # in discovery order


def index_project(
    project: Project,
    settings: Settings,
    exclude: Sequence[str] = (),
    jobs: Optional[int] = None,
    use_cache: bool = True,
    excluded: Optional[Excluded] = None,
    progress: Optional[Progress] = None,
    also: Sequence[str] = (),
) -> LastRun:
    """Check a whole project; its results (by path as discovered) and heat (by absolute path), as the cache
    keeps them. `also`: files to check with it though its walk passes them over (named on the command line,
    yet excluded or ignored)."""
    with collector_paused():
        candidates = project_candidates(project, exclude, excluded, also)
        return _check_candidates(candidates, settings, jobs, project_cache(project, settings, use_cache), progress)


def fresh_index(
    project: Project, settings: Settings, excluded: Optional[Excluded] = None
) -> Optional[LastRun]:
    """The project's cached last run when no file of it changed since (a stat per file), else None: for a
    face that must not rebuild the index itself while another process does (see `flake8_plugin`)."""
    with collector_paused():
        candidates = project_candidates(project, (), excluded)
        last = project_cache(project, settings, True).load_last_run()  # type: ignore[union-attr]
        return last if unchanged_since(candidates, last) else None


def project_candidates(
    project: Project, exclude: Sequence[str] = (), excluded: Optional[Excluded] = None, also: Sequence[str] = ()
) -> List[Candidate]:
    found = discover(project.paths, exclude, excluded)
    if not also:
        return found
    known = {os.path.abspath(c.path) for c in found}
    return found + [c for c in discover(also) if os.path.abspath(c.path) not in known]


def project_cache(project: Project, settings: Settings, use_cache: bool = True) -> Optional[Cache]:
    return Cache(settings, default_cache_root(project.root), project.identity) if use_cache else None


def _check_candidates(
    candidates: Sequence[Candidate],
    settings: Settings,
    jobs: Optional[int],
    cache: Optional[Cache],
    progress: Optional[Progress] = None,
) -> LastRun:
    last = cache.load_last_run() if cache is not None else LastRun()
    if unchanged_since(candidates, last):
        return last  # nothing changed since the last run
    summarised: Dict[str, Outcome] = {}
    rechecked = _recheck_changed(candidates, settings, jobs, cache, last, progress, summarised) if cache else None
    if rechecked is not None:
        cache.store_last_run(rechecked)  # type: ignore[union-attr]
        return rechecked
    found = _last_run(candidates, analyse(candidates, settings, jobs, cache, last, progress, summarised))
    if cache is not None:
        cache.store_last_run(found)
    return found


def analyse_paths(
    paths: Sequence[str], settings: Settings, jobs: Optional[int] = None, use_cache: bool = True,
    project: Optional[Project] = None,
) -> ProjectRun:
    """The whole analysis of `paths`, for questions about it (`explain`); reads the cache of `project`
    (by default the paths themselves), leaves its last check run's record alone."""
    with collector_paused():
        cache = project_cache(project or Project(None, tuple(paths)), settings, use_cache)
        return analyse(discover(paths), settings, jobs, cache, cache.load_last_run() if cache else None)


def analyse(
    candidates: Sequence[Candidate],
    settings: Settings,
    jobs: Optional[int] = None,
    cache: Optional[Cache] = None,
    last: Optional[LastRun] = None,
    progress: Optional[Progress] = None,
    summarised: Optional[Dict[str, Outcome]] = None,
) -> ProjectRun:
    """Summarise every file (from the cache where it can, or from `summarised`: files this run already
    summarised), then reason about hotness and placements across all of them."""
    jobs = jobs or default_jobs()
    paths = [c.path for c in candidates if c.error is None]
    outcomes = file_summaries(paths, settings, jobs, cache, last or LastRun(), progress, summarised)
    # In discovery order, whichever files came from the cache: ties between call chains break the same way.
    done = {p: outcomes[p] for p in paths if not isinstance(outcomes.get(p, ""), str)}
    modules = module_names(done)
    summaries, files = {modules[p]: o[2].summary for p, o in done.items()}, {modules[p]: p for p in done}
    graph = ProjectGraph(summaries, files)
    demand = DemandedExports(settings, cache, files, {p: o[1] for p, o in done.items()})
    workers = jobs - 1 if len(paths) >= SERIAL_BELOW else 0  # the main process keeps one processor
    if workers:  # exports worked out beside propagation, which needs none of them
        pending = [(o[2], modules[p]) for p, o in done.items() if has_pending(o[2])]
        demand.prefetch(first_asked(graph, summaries, files, pending), workers)
    try:
        heat = observe(propagate(graph, settings), {modules[p]: (p, o[2].summary) for p, o in done.items()}, settings)
        links = PlacementLinks(
            graph, summaries, files, demand, demand.argument, demand.record_fills, demand.submodule_calls
        )
        results, resolved = [], {}
        for candidate in candidates:
            outcome = outcomes.get(candidate.path, candidate.error)
            if isinstance(outcome, str) or outcome is None:
                results.append(FileResult(candidate.path, (), outcome))
                continue
            module = modules[candidate.path]
            file = resolved[candidate.path] = links.resolved(outcome[2], module)
            functions_heat = file_heat(heat, module, file)
            found = diagnostics(file, functions_heat, module, settings.min_level)
            if settings.profile:
                found = with_observed_syncs(candidate.path, found, settings, heat_by_line(file.summary, functions_heat))
            results.append(FileResult(candidate.path, found, file.error))
    finally:
        demand.close()
    return ProjectRun(results, resolved, modules, heat, {p: (o[0], o[1]) for p, o in done.items()}, demand.asked)


def file_heat(heat: Dict[Key, Heat], module: str, file: FileSummary) -> Dict[str, Heat]:
    return {q: found for q in file.summary.functions if (found := heat.get((module, q))) is not None}


def _last_run(candidates: Sequence[Candidate], run: ProjectRun) -> LastRun:
    stats = {os.path.abspath(p): stat for p, stat in run.stats.items()}
    complete = all(c.error is not None or c.path in run.stats for c in candidates)
    heat = {
        os.path.abspath(p): (run.modules[p], file_heat(run.heat, run.modules[p], file))
        for p, file in run.summaries.items()
    }
    return LastRun(
        stats=stats,
        fingerprint=fingerprint(candidates, content_keys(candidates, lambda p: run.stats[p][1])) if complete else "",
        results={r.path: r for r in run.results},
        heat=heat,
        # Heat is kept by absolute path: a run naming one file twice cannot reuse it.
        layout=layout_key(candidates) if complete and len(heat) == len(run.summaries) else "",
        # What a call may name: a function, a dispatch table (whose calls name the table), or a method alias.
        names=frozenset(f.name for file in run.summaries.values() for f in file.summary.functions.values())
        | frozenset(table for file in run.summaries.values() for table in file.summary.tables)
        | frozenset(a for file in run.summaries.values() for c in file.summary.method_aliases.values() for a in c),
        asked=run.asked,
    )


# --- the cache's second path: some files changed, and nothing that hotness reads -------------------------------


def _recheck_changed(
    candidates: Sequence[Candidate],
    settings: Settings,
    jobs: Optional[int],
    cache: Cache,
    last: LastRun,
    progress: Optional[Progress],
    summarised: Dict[str, Outcome],
) -> Optional[LastRun]:
    """The last run, updated for the files whose content changed since, when it covered the same files and
    no change alters propagation (`moved_loops`: an edit inside a function body, a comment, new lines). The
    heat it found then still holds, but for the lines of loops that moved, so only the changed files, and
    those whose messages name a moved loop, have their findings recomputed. None when that does not apply:
    the caller runs the whole analysis, with the changed files' new summaries, left in `summarised`."""
    if not last.layout or last.names is None or last.layout != layout_key(candidates):
        return None
    if settings.profile:
        return None  # an edited file no longer matches the trace: its functions' heat changes
    changed = [c.path for c in candidates if c.error is None and not same_stat(c.path, last)]
    stats, heat = dict(last.stats), dict(last.heat)
    files: Dict[str, FileSummary] = {}  # by path as given: the files whose findings are recomputed
    moved: Dict[str, MovedLoops] = {}  # by module
    summarised.update(summarize_all(changed, settings, jobs or default_jobs(), cache, progress or no_progress))
    for path, outcome in summarised.items():
        full = os.path.abspath(path)  # in `stats` and `heat`: the last run covered the same files
        module = heat[full][0]
        found = None if isinstance(outcome, str) else _moved_loops(cache, stats[full][1], outcome, module, last.names)
        if found is None:
            return None
        stats[full], files[path] = outcome[:2], outcome[2]  # type: ignore[assignment,index]
        if found:
            moved[module] = found
    if moved and not _move_loops(candidates, cache, stats, heat, moved, files):
        return None
    results = dict(last.results)
    for path, file in files.items():
        module, file_heat = heat[os.path.abspath(path)]
        results[path] = FileResult(path, diagnostics(file, file_heat, module, settings.min_level), file.error)
    asked = relink(candidates, cache, last, stats, heat, files, settings, results)
    if asked is None:
        return None
    keys = content_keys(candidates, lambda p: stats[os.path.abspath(p)][1])
    return LastRun(stats, fingerprint(candidates, keys), results, heat, last.layout, last.names, asked)


def _moved_loops(
    cache: Cache, old_key: str, new: Summarized, module: str, names: AbstractSet[str]
) -> Optional[MovedLoops]:
    """What a file's new summary changes in propagation against its summary of `old_key` (see `moved_loops`)."""
    if new[1] == old_key:
        return {}  # touched, not changed
    old = cache.load_summary(old_key)
    return moved_loops(old.summary, new[2].summary, module, names) if isinstance(old, FileSummary) else None


def _move_loops(
    candidates: Sequence[Candidate],
    cache: Cache,
    stats: Dict[str, Tuple[Optional[Stat], str]],
    heat: Dict[str, Tuple[str, Dict[str, Heat]]],
    moved: Dict[str, MovedLoops],
    files: Dict[str, FileSummary],
) -> bool:
    """Give every function that a moved loop makes hot its new line in `heat`, adding the files that hold such
    functions to `files`; False when one of their summaries is no longer in the cache."""
    paths = {os.path.abspath(c.path): c.path for c in candidates if c.error is None}
    for full, (module, file_heat) in heat.items():
        if not any(moved_root(h, moved) is not None for h in file_heat.values()):
            continue
        heat[full] = (module, {q: with_moved_loops(h, moved) for q, h in file_heat.items()})
        path = paths[full]
        if path not in files:
            file = cache.load_summary(stats[full][1])
            if not isinstance(file, FileSummary):
                return False
            files[path] = file
    return True

"""A run's per-file summaries: from the cache when a file's stat and content key say it is unchanged, else
read, decoded and analysed (`analyzer.summarize_source`), in worker processes when there are many files. A file
that cannot be read or decoded gets its one-line reason instead; a bug in h2dlint on one file does not stop the
others and is never cached.
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from h2dlint.checker.file_summary import FileSummary, enabled_rules, failure_reason
from h2dlint.facts.settings import Settings
from h2dlint.facts.sources import SourceError, decode_source, read_bytes
from h2dlint.facts.summary import ModuleSummary
from h2dlint.project.cache import Cache, LastRun, Stat, content_key, file_stat
from h2dlint.rules import Rule

# Below this many files to parse, starting worker processes costs more than it saves.
SERIAL_BELOW = 48

Progress = Callable[[Sequence[str]], Iterable[str]]  # wraps the paths being parsed, e.g. in a progress bar
Summarized = Tuple[Optional[Stat], str, FileSummary]  # a file's stat, content key and summary
Outcome = Union[Summarized, str]  # or the one-line reason it could not be read


def summaries(
    paths: Sequence[str], settings: Settings, jobs: int, cache: Optional[Cache], last: LastRun,
    progress: Optional[Progress] = None, summarised: Optional[Dict[str, Outcome]] = None,
) -> Dict[str, Outcome]:
    found: Dict[str, Outcome] = dict(summarised or {})
    todo: List[str] = []
    for path in paths:
        if path in found:
            continue
        known = last.stats.get(os.path.abspath(path))
        stat = file_stat(path) if known is not None else None
        cached = cache.load_summary(known[1]) if cache is not None and known and known[0] == stat else None
        if cached is not None:
            found[path] = (stat, known[1], cached)  # type: ignore[index]
        else:
            todo.append(path)
    found.update(summarize_all(todo, settings, jobs, cache, progress or no_progress))
    return found


def no_progress(paths: Sequence[str]) -> Iterable[str]:
    return paths


def summarize_all(
    paths: Sequence[str], settings: Settings, jobs: int, cache: Optional[Cache], progress: Progress
) -> Iterable[Tuple[str, Outcome]]:
    cache_root = cache.root if cache is not None else None
    jobs = max(1, min(jobs, len(paths)))
    if jobs == 1 or len(paths) < SERIAL_BELOW:
        with collector_paused():
            _init_worker(settings, cache_root)
            return [(p, _summarize_file(p)) for p in progress(paths)]
    from concurrent.futures import ProcessPoolExecutor  # imported here: it costs a warm run ~20 ms
    from concurrent.futures.process import BrokenProcessPool

    chunk = max(1, min(32, len(paths) // (jobs * 8)))
    try:
        with ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(settings, cache_root)) as pool:
            # zip draws one path from `progress` as each result arrives, so a bar advances with the work.
            return list(zip(progress(paths), pool.map(_summarize_file, paths, chunksize=chunk)))
    # A worker killed (say, out of memory), no processes to be had, or this process a daemon, which may not
    # start children (multiprocessing asserts it).
    except (BrokenProcessPool, OSError, AssertionError):
        return summarize_all(paths, settings, 1, cache, progress)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector: syntax trees and summaries hold no reference cycles, and collecting
    while building or unpickling hundreds of thousands of them costs a third of a run."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_WORKER: dict = {}  # what each worker process (or the serial path) needs: the rules and the cache


def _init_worker(settings: Settings, cache_root: Optional[str]) -> None:
    gc.disable()  # see `collector_paused`
    _WORKER["settings"] = settings
    _WORKER["rules"] = enabled_rules(settings)
    _WORKER["cache"] = Cache(settings, cache_root) if cache_root is not None else None


def summarize_source(text: str, settings: Settings, rules: Sequence[Rule]) -> FileSummary:
    """`analyzer.summarize_source`, imported when a first file must be analysed: a run that takes every
    summary from the cache (the warm run) never imports the walk."""
    from h2dlint.checker.analyzer import summarize_source as summarize

    return summarize(text, settings, rules)


def _summarize_file(path: str) -> Outcome:
    stat = file_stat(path)
    try:
        data = read_bytes(path)
    except SourceError as error:
        return str(error)
    key = content_key(data)
    cache: Optional[Cache] = _WORKER["cache"]
    summary = cache.load_summary(key) if cache is not None else None
    if summary is None:
        try:
            summary = summarize_source(decode_source(path, data).text, _WORKER["settings"], _WORKER["rules"])
        except SourceError as error:
            summary = FileSummary(ModuleSummary(), (), str(error))
        except Exception as error:  # a bug in h2dlint must not stop the other files; never cached
            return failure_reason(error)
        if cache is not None:
            cache.store_summary(key, summary)
    return (stat, key, summary)

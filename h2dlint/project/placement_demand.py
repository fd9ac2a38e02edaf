"""The placement exports of the files the project's questions reach, worked out when first asked.

A file's summary does not carry what its functions return and its classes' attributes hold
(`facts.summary.PlacementExports`): on sglang, 44 of its 1,392 modules are ever asked, and placing every return
and attribute of all the others cost 13-22% of a cold run. So `PlacementLinks` asks `DemandedExports` for the
exports of one module at a time: read from the cache by the file's content key, or worked out from the file
(parsed again) and stored there. The answer depends only on the file's content and the settings, like a
summary, so results are the same with and without the cache.

A cold run knows most of the files it will ask before it asks them: `prefetch` works their exports out in
worker processes while the run propagates heat, which needs none of them (`placement_links.first_asked`).

The run remembers which files it asked (`asked`, by absolute path): a later run where one of them changed
must resolve the project's pending sites again (`placement_relink.relink`), one where only other files
changed need not.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Optional, Set, Tuple, TypeVar, Union

from h2dlint.facts.placement_callers import NOT_PASSED as NO_TENSOR_PASSED
from h2dlint.facts.placement_exports import exported
from h2dlint.facts.placement_values import Placement
from h2dlint.facts.recursion import with_room_to_recurse
from h2dlint.facts.settings import Settings
from h2dlint.facts.sources import SourceError, decode_source, read_bytes
from h2dlint.facts.summary import CallRef, ExportedPlacement, PlacementExports, PlacementQuery
from h2dlint.project.cache import Cache, content_key
from h2dlint.project.placement_passed import NOT_PASSED

CALLS_ASKED = "\0calls"  # marks a file in `asked` whose calls' arguments were asked, not only its exports

if TYPE_CHECKING:  # `concurrent.futures` costs a warm run, which works nothing out, ~20 ms to import
    from concurrent.futures import Future

    from h2dlint.facts.placement_summary import ModulePlacements

_NOTHING = PlacementExports()
T = TypeVar("T")


class DemandedExports:
    """The exports of a project's modules, each worked out (or read from the cache) when first asked."""

    def __init__(
        self, settings: Settings, cache: Optional[Cache], paths: Dict[str, str], keys: Dict[str, str]
    ) -> None:
        """`paths`: the file of each module; `keys`: the content key each file had when it was summarised, by
        the path as given. A file whose content has changed since exports nothing: its answers would not
        belong to the summary the run holds."""
        self._settings = settings
        self._cache = cache
        self._paths = paths
        self._keys = keys
        self._found: Dict[str, PlacementExports] = {}
        self._placements: Dict[str, Optional["ModulePlacements"]] = {}  # by module: for `argument`
        # By module: what `prefetch` found in the cache, or is working out.
        self._pending: Dict[str, "Union[PlacementExports, Future[Optional[PlacementExports]]]"] = {}
        self._pool = None
        self.asked: Set[str] = set()  # the files asked, by absolute path (+ `CALLS_ASKED` for their calls)

    def __call__(self, module: str) -> PlacementExports:
        found = self._found.get(module)
        if found is None:
            found = self._found[module] = self._exports_of(module)
        return found

    def argument(self, module: str, call: CallRef, query: PlacementQuery) -> Optional[ExportedPlacement]:
        """What `call`, made in `module`, passes for the parameter `query` asks about (`NOT_PASSED` for no
        tensor); None where that is not known. Worked out from the file, whose placement knowledge the run
        keeps for its other calls; the run remembers the file as asked for its calls (`CALLS_ASKED`)."""
        placements = self._placements_of(module)
        if placements is None:
            return None
        try:
            found = with_room_to_recurse(placements.argument_at, call.caller, call.line, query.name, query.parameter)
        except Exception:  # a bug in h2dlint, or too deep: the argument stays unknown, so nothing is reported
            return None
        if found is NO_TENSOR_PASSED:
            return NOT_PASSED
        return exported(found) if isinstance(found, Placement) else None

    def record_fills(self, module: str, name: str, field: str) -> Optional[List[ExportedPlacement]]:
        """What each call in `module` of `name`, a record class of another file, puts in its field `field`
        (`ModulePlacements.imported_fills`); None where that is not known. Remembered as `argument` is."""
        placements = self._placements_of(module)
        if placements is None:
            return None
        try:
            found = with_room_to_recurse(placements.imported_fills, name, field)
        except Exception:  # as in `argument`
            return None
        placed = [exported(each) for each in found] if found is not None else None
        return None if placed is None or None in placed else placed  # type: ignore[return-value]

    def submodule_calls(self, module: str, name: str) -> Optional[Tuple[Tuple[str, int, str], ...]]:
        """The calls in `module` of the instances of `name`, a module class of another file that it builds
        (`ModulePlacements.imported_submodule_calls`); None where they are not all its uses. Remembered as
        `argument` is."""
        placements = self._placements_of(module)
        if placements is None:
            return None
        try:
            return with_room_to_recurse(placements.imported_submodule_calls, name)
        except Exception:  # as in `argument`
            return None

    def _placements_of(self, module: str) -> Optional["ModulePlacements"]:
        """The placement knowledge of `module`'s file, for the project's questions about its calls; the run
        remembers the file as asked for its calls (`CALLS_ASKED`)."""
        path = self._paths[module]
        key = self._keys.get(path)
        if key is None:
            return None
        self.asked.add(os.path.abspath(path) + CALLS_ASKED)
        if module not in self._placements:
            self._placements[module] = placements_of_file(path, key, self._settings)
        return self._placements[module]

    def prefetch(self, modules: Iterable[str], workers: int) -> None:
        """Start working out the exports of `modules` that the cache does not hold, in `workers` processes;
        `__call__` waits for each when it is asked. Nothing starts for fewer than two such modules or no
        worker, or where no process can be had: each is then worked out when asked, as without this."""
        todo = []
        for module in dict.fromkeys(modules):
            if module in self._found or self._keys.get(self._paths[module]) is None:
                continue
            stored = self._stored(module)
            if stored is not None:
                self._pending[module] = stored  # read once: `_exports_of` takes it from here
            else:
                todo.append(module)
        if workers < 1 or len(todo) < 2:
            return
        from concurrent.futures import ProcessPoolExecutor  # as in `summaries.summarize_all`: not on a warm run

        try:
            self._pool = ProcessPoolExecutor(min(workers, len(todo)))
            for module in todo:
                path = self._paths[module]
                self._pending[module] = self._pool.submit(exports_of_file, path, self._keys[path], self._settings)
        except Exception:  # no processes to be had (none left, or this one is a daemon): worked out when asked
            self.close()

    def close(self) -> None:
        """Stop the workers of `prefetch`; what they had not finished is worked out when asked."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending.clear()

    def _stored(self, module: str) -> Optional[PlacementExports]:
        key = self._keys.get(self._paths[module])
        stored = self._cache.load_exports(key) if self._cache is not None and key is not None else None
        return stored if isinstance(stored, PlacementExports) else None

    def _exports_of(self, module: str) -> PlacementExports:
        path = self._paths[module]
        self.asked.add(os.path.abspath(path))
        key = self._keys.get(path)
        if key is None:
            return _NOTHING
        pending = self._pending.pop(module, None)
        if isinstance(pending, PlacementExports):
            return pending
        if pending is not None:
            try:
                found = pending.result()
            except Exception:  # a worker lost (say, out of memory): worked out here instead
                pass
            else:
                return _stored_in(self._cache, key, found) or _NOTHING
        return self._stored(module) or worked_out(path, key, self._settings, self._cache) or _NOTHING


def worked_out(path: str, key: str, settings: Settings, cache: Optional[Cache]) -> Optional[PlacementExports]:
    """The exports of the file at `path`, worked out from it and stored in `cache` under `key`, if its content
    still has that key; else None."""
    return _stored_in(cache, key, exports_of_file(path, key, settings))


def _stored_in(cache: Optional[Cache], key: str, found: Optional[PlacementExports]) -> Optional[PlacementExports]:
    """`found`, stored in `cache` under the content key `key` when there is a cache and something to store."""
    if found is not None and cache is not None:
        cache.store_exports(key, found)
    return found


def placements_of_file(path: str, key: str, settings: Settings) -> Optional["ModulePlacements"]:
    """The placement knowledge of the file at `path`, if its content still has the content key `key`; None also
    where working it out fails (a bug in h2dlint: the file's calls stay unknown, so nothing is reported)."""
    from h2dlint.checker.analyzer import module_placements  # as for the exports: not on a warm run

    return _worked_out_from(path, key, lambda text: module_placements(text, settings), None)


def exports_of_file(path: str, key: str, settings: Settings) -> Optional[PlacementExports]:
    """The exports of the file at `path` if its content still has the content key `key`; else None. Where working
    them out fails (a bug in h2dlint), nothing: this file's answers stay unknown, so nothing is reported."""
    from h2dlint.checker.analyzer import placement_exports  # as in `summaries.summarize_source`: not on a warm run

    return _worked_out_from(path, key, lambda text: placement_exports(text, settings), _NOTHING)


def _worked_out_from(path: str, key: str, work: Callable[[str], T], failed: T) -> Optional[T]:
    """`work` of the text of the file at `path`, if its content still has the content key `key` (else None);
    `failed` where `work` raises."""
    try:
        data = read_bytes(path)
        if content_key(data) != key:
            return None
        text = decode_source(path, data).text
    except SourceError:
        return None
    try:
        return work(text)
    except Exception:
        return failed

"""The on-disk cache: per-file summaries keyed by content, and the last runs' results.

Layout, in `.h2dlint_cache/` of the project's root folder (or of the working folder for paths with no
project root; `$H2DLINT_CACHE_DIR` overrides both), as ruff keeps `.ruff_cache/`:

    .gitignore                      `*`: the cache is never committed
    <run key>/files/ab/abcdef...    one file's `FileSummary`, named by the hash of its content
    <run key>/files/ab/abcdef...-placements
                                    its placement exports, once another file asked (`placement_demand`)
    <run key>/runs/<project key>    one project's last run: paths -> (mtime, size, content hash), the results
                                    and the project heat, the run's files and function names (for reusing
                                    that heat after edits)

The run key digests h2dlint's version, its own source files (so an edited rule never reads stale entries)
and the whole `Settings` object, so any configuration change (including fields added later) starts afresh.
The project key digests the project's root (or the paths a run was given), so alternating between projects
or settings keeps each one warm; the `KEPT_RUNS` most recent runs and `KEPT_RUN_KEYS` run keys are kept,
older ones pruned. Entries are written to a temporary file and renamed into place, so concurrent runs never
see a torn file; at worst one run's record replaces another's, and both are complete.

A file whose size and modification time match the last run is taken to have the same content without being
read (as git's index does); otherwise it is read and hashed.

The last run's results and the hotness it found across files are reused. When nothing changed they are the
answer. When some files changed, those are re-summarised; if their new summaries give the propagation the
same input (the same functions, classes, imports, markers, and calls that can reach a project function, in
the same order: an edit inside a function body, a comment, added or removed lines), the last run's hotness
is kept, with the lines of moved loops renamed in the messages that name them, and only the affected files'
findings are recomputed. Any other change (a new call to a project function, a new, renamed or deleted
function or file) recomputes the propagation across the project from the cached summaries, so editing one
file correctly changes another file's findings either way. Results are identical with and without the cache
and with any number of workers (tests/test_cache.py).
"""

from __future__ import annotations

import hashlib
import os
import pickle
from contextlib import contextmanager
from typing import AbstractSet, Any, Dict, Iterator, Optional, Tuple, Union

import h2dlint
from h2dlint.facts.settings import Settings

CACHE_DIR_NAME = ".h2dlint_cache"
ENVIRONMENT_VARIABLE = "H2DLINT_CACHE_DIR"

Stat = Tuple[int, int]  # (mtime in ns, size)

# How much the cache keeps: last runs per run key (projects and file subsets alternated between), and run
# keys (settings, and h2dlint versions: each edit of h2dlint's own code starts a new one).
KEPT_RUNS = 16
KEPT_RUN_KEYS = 4
_EXPORTS = "-placements"  # the suffix of a file's placement exports, beside its summary


def content_key(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_stat(path: str) -> Optional[Stat]:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_mtime_ns, found.st_size)


def default_cache_root(project_root: Optional[str] = None) -> str:
    """`$H2DLINT_CACHE_DIR`, else `.h2dlint_cache/` in the project's root, else in the working folder."""
    return os.environ.get(ENVIRONMENT_VARIABLE) or os.path.join(os.path.abspath(project_root or "."), CACHE_DIR_NAME)


class LastRun:
    """What the previous run saw and concluded, for skipping work when nothing (or little) changed.

    The project heat and the function names are two thirds of the stored record, and a run where nothing
    changed reads neither: they are kept pickled apart inside it, and unpickled when first asked for."""

    def __init__(
        self,
        stats: Optional[Dict[str, Tuple[Stat, str]]] = None,  # absolute path -> (stat, content key)
        fingerprint: str = "",  # digest of every (path, content key) of that run
        results: Any = None,  # the run's results, reusable when the fingerprint matches
        heat: Any = None,  # the project heat per file, for one-file faces such as flake8
        layout: str = "",  # digest of the run's files, in order: a run over the same files may reuse `heat`
        names: Any = None,  # the names of all the functions of the run's files
        asked: AbstractSet[str] = frozenset(),  # the files whose placement exports the run read, by absolute path
    ) -> None:
        self.stats = {} if stats is None else stats
        self.asked = asked
        self.fingerprint, self.results, self.layout = fingerprint, results, layout
        self._later: Union[Tuple[Any, Any], bytes] = (heat, names)  # or pickled, as stored

    @property
    def heat(self) -> Any:
        return self._unpickled_later()[0]

    @property
    def names(self) -> Any:
        return self._unpickled_later()[1]

    def _unpickled_later(self) -> Tuple[Any, Any]:
        if isinstance(self._later, bytes):
            try:
                self._later = pickle.loads(self._later)
            except _UNREADABLE:
                self._later = (None, None)  # as if that run had kept none: heat is recomputed
        return self._later  # type: ignore[return-value]

    def __reduce__(self) -> Tuple[Any, ...]:
        later = self._later
        if not isinstance(later, bytes):
            later = pickle.dumps(later, protocol=pickle.HIGHEST_PROTOCOL)
        return (_stored_run, (self.stats, self.fingerprint, self.results, self.layout, later, self.asked))


def _stored_run(
    stats: Dict[str, Tuple[Stat, str]], fingerprint: str, results: Any, layout: str, later: bytes,
    asked: AbstractSet[str],
) -> LastRun:
    found = LastRun(stats, fingerprint, results, layout=layout, asked=asked)
    found._later = later
    return found


# What unpickling an entry written by another h2dlint, or a damaged one, may raise.
_UNREADABLE = (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, IndexError, TypeError)


class Cache:
    def __init__(self, settings: Settings, root: Optional[str] = None, project: str = "") -> None:
        """`project` names the project whose last run `load_last_run` and `store_last_run` read and write."""
        self.root = root or default_cache_root()
        self.folder = os.path.join(self.root, run_key(settings))
        self.last_run_path = os.path.join(self.folder, "runs", _digest(project))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cache) and other.folder == self.folder

    def __hash__(self) -> int:
        return hash(self.folder)

    def load_summary(self, key: str) -> Any:
        try:
            with open(self._entry(key), "rb") as handle:
                return pickle.load(handle)
        except _UNREADABLE:
            return None  # missing, or written by an incompatible h2dlint: recompute

    def store_summary(self, key: str, summary: Any) -> None:
        self._write(self._entry(key), summary)

    def load_exports(self, key: str) -> Any:
        """The placement exports of the file content `key` (`project.placement_demand`), or None."""
        return self.load_summary(key + _EXPORTS)

    def store_exports(self, key: str, exports: Any) -> None:
        self.store_summary(key + _EXPORTS, exports)

    def load_last_run(self) -> LastRun:
        try:
            with open(self.last_run_path, "rb") as handle:
                found = pickle.load(handle)
        except _UNREADABLE:
            return LastRun()
        return found if isinstance(found, LastRun) else LastRun()

    @property
    def lock_path(self) -> str:
        """Held while one process (re)builds this project's last run for others (see `one_file`)."""
        return self.last_run_path + ".lock"

    def store_last_run(self, last: LastRun) -> None:
        self._write(self.last_run_path, last)
        _prune(os.path.dirname(self.last_run_path), KEPT_RUNS)
        _prune(self.root, KEPT_RUN_KEYS, lambda name: os.path.join(name, "runs"))

    def _entry(self, key: str) -> str:
        return os.path.join(self.folder, "files", key[:2], key)

    def _write(self, path: str, value: Any) -> None:
        """Write atomically: a reader sees the old file or the new one, never half of one."""
        import tempfile  # only runs that write need it

        try:
            folder = os.path.dirname(path)
            os.makedirs(folder, exist_ok=True)
            self._mark_ignored()
            descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            try:
                with os.fdopen(descriptor, "wb") as handle:
                    pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(temporary, path)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError:
            pass  # a read-only or full disk makes the run slower, not wrong

    def _mark_ignored(self) -> None:
        marker = os.path.join(self.root, ".gitignore")
        if not os.path.exists(marker):
            with open(marker, "w", encoding="utf-8") as handle:
                handle.write("# Automatically created by h2dlint.\n*\n")


def _prune(folder: str, kept: int, stamp_of=lambda path: path) -> None:
    """Remove all but the `kept` most recently written entries of `folder` (by the mtime of `stamp_of` each).
    Only names h2dlint made (`_digest`s) are touched: `$H2DLINT_CACHE_DIR` may name a folder holding more."""
    import shutil  # only runs that write need it

    try:
        names = [n for n in os.listdir(folder) if _is_digest(n)]
    except OSError:
        return
    if len(names) <= kept:
        return
    stamped = sorted(((file_stat(stamp_of(os.path.join(folder, n))) or (0, 0), n) for n in names), reverse=True)
    for _, name in stamped[kept:]:
        path = os.path.join(folder, name)
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass  # another run pruned it first


def _is_digest(name: str) -> bool:
    return len(name) == 2 * _DIGEST_SIZE and all(c in "0123456789abcdef" for c in name)


_DIGEST_SIZE = 12


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=_DIGEST_SIZE).hexdigest()


def run_key(settings: Settings) -> str:
    return _digest("\0".join([h2dlint.__version__, repr(settings), _code_fingerprint()]))


def _code_fingerprint() -> str:
    """Size and modification time of h2dlint's own modules: an edited checkout invalidates the cache."""
    package = os.path.dirname(os.path.abspath(h2dlint.__file__))
    found = []
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                stat = file_stat(os.path.join(folder, name))
                found.append(f"{os.path.relpath(os.path.join(folder, name), package)}:{stat}")
    return ";".join(found)


@contextmanager
def locked(path: str) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if needed) across processes; others wait for it. Where the
    platform has no `fcntl`, or the folder cannot be written, this locks nothing: work may then be done twice,
    never wrongly (entries are replaced whole)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle = open(path, "a+b")
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

"""The on-disk cache: per-file summaries keyed by content, and the last run's results.

Layout, in `.h2dlint_cache/` of the working folder (or `$H2DLINT_CACHE_DIR`), as ruff keeps `.ruff_cache/`:

    .gitignore                      `*`: the cache is never committed
    <run key>/files/ab/abcdef...    one file's `FileSummary`, named by the hash of its content
    <run key>/last-run              paths -> (mtime, size, content hash), the results and the project heat,
                                    the run's files and function names (for reusing that heat after edits)

The run key digests h2dlint's version, its own source files (so an edited rule never reads stale entries)
and the whole `Settings` object, so any configuration change (including fields added later) starts afresh.
Entries are written to a temporary file and renamed into place, so concurrent runs never see a torn file;
at worst one run's `last-run` replaces another's, and both are complete.

A file whose size and modification time match `last-run` is taken to have the same content without being
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
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import h2dlint
from h2dlint.facts.settings import Settings

CACHE_DIR_NAME = ".h2dlint_cache"
ENVIRONMENT_VARIABLE = "H2DLINT_CACHE_DIR"

Stat = Tuple[int, int]  # (mtime in ns, size)


def content_key(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_stat(path: str) -> Optional[Stat]:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_mtime_ns, found.st_size)


def default_cache_root() -> str:
    return os.environ.get(ENVIRONMENT_VARIABLE) or os.path.abspath(CACHE_DIR_NAME)


@dataclass
class LastRun:
    """What the previous run saw and concluded, for skipping work when nothing (or little) changed."""

    stats: Dict[str, Tuple[Stat, str]] = field(default_factory=dict)  # absolute path -> (stat, content key)
    fingerprint: str = ""  # digest of every (path, content key) of that run
    results: Any = None  # the run's results, reusable when the fingerprint matches
    heat: Any = None  # the project heat per file, for one-file faces such as flake8
    layout: str = ""  # digest of the run's files, in order: a run over the same files may reuse `heat`
    names: Any = None  # the names of all the functions of the run's files


def cache_roots(path: str) -> List[str]:
    """Where a cache for the project holding `path` may be: `$H2DLINT_CACHE_DIR`, the working folder's,
    or the nearest `.h2dlint_cache` above `path`."""
    found = [default_cache_root()]
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        candidate = os.path.join(folder, CACHE_DIR_NAME)
        if os.path.isdir(candidate) and candidate not in found:
            found.append(candidate)
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return found


class Cache:
    def __init__(self, settings: Settings, root: Optional[str] = None) -> None:
        self.root = root or default_cache_root()
        self.folder = os.path.join(self.root, run_key(settings))
        self.last_run_path = os.path.join(self.folder, "last-run")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cache) and other.folder == self.folder

    def __hash__(self) -> int:
        return hash(self.folder)

    def load_summary(self, key: str) -> Any:
        try:
            with open(self._entry(key), "rb") as handle:
                return pickle.load(handle)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, IndexError, TypeError):
            return None  # missing, or written by an incompatible h2dlint: recompute

    def store_summary(self, key: str, summary: Any) -> None:
        self._write(self._entry(key), summary)

    def load_last_run(self) -> LastRun:
        try:
            with open(self.last_run_path, "rb") as handle:
                found = pickle.load(handle)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, IndexError, TypeError):
            return LastRun()
        return found if isinstance(found, LastRun) else LastRun()

    def store_last_run(self, last: LastRun) -> None:
        self._write(self.last_run_path, last)

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


def run_key(settings: Settings) -> str:
    parts = [h2dlint.__version__, repr(settings), _code_fingerprint()]
    return hashlib.blake2b("\0".join(parts).encode("utf-8"), digest_size=12).hexdigest()


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

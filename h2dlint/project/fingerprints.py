"""Whether a project's files are as the last run saw them: their stats, content keys and layout, digested
(the cache's fast path: nothing changed, so the last run's results stand)."""

from __future__ import annotations

import hashlib
import os
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

from h2dlint.project.cache import LastRun, Stat, file_stat
from h2dlint.project.files import Candidate


def unchanged_since(candidates: Sequence[Candidate], last: LastRun) -> bool:
    unchanged = unchanged_keys(candidates, last)
    return bool(unchanged is not None and last.fingerprint == fingerprint(candidates, unchanged) and last.results)


def unchanged_keys(candidates: Sequence[Candidate], last: LastRun) -> Optional[List[str]]:
    """The content key of every candidate, when all of them still have the stat the last run saw."""
    keys = []
    for candidate in candidates:
        if candidate.error is not None:
            keys.append("!" + candidate.error)
            continue
        known = last.stats.get(os.path.abspath(candidate.path))  # one abspath per file: a warm run makes thousands
        if not _still(known, candidate.path):
            return None
        keys.append(known[1])  # type: ignore[index]
    return keys


def same_stat(path: str, last: LastRun) -> bool:
    return _still(last.stats.get(os.path.abspath(path)), path)


def _still(known: Optional[Tuple[Optional[Stat], str]], path: str) -> bool:
    """Whether `path` still has the stat the last run recorded for it (`known`: its (stat, content key))."""
    return known is not None and known[0] is not None and known[0] == file_stat(path)


def fingerprint(candidates: Sequence[Candidate], keys: Sequence[str]) -> str:
    return _digest(f"{candidate.path}\0{key}" for candidate, key in zip(candidates, keys))


def layout_key(candidates: Sequence[Candidate]) -> str:
    """Which files a run covers, in which order, and which of them could not be found: what module names and
    the order of propagation (which breaks ties between call chains) depend on."""
    return _digest(f"{candidate.path}\0{candidate.error}" for candidate in candidates)


def _digest(lines: Iterable[str]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for line in lines:
        digest.update(f"{line}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def content_keys(candidates: Sequence[Candidate], key_of: Callable[[str], str]) -> List[str]:
    """Each candidate's content key (`key_of` its path), or why it could not be found."""
    return ["!" + c.error if c.error is not None else key_of(c.path) for c in candidates]

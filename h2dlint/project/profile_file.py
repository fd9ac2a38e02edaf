"""Reading a traced run's records (`profile = "..."`, `check --profile FILE`) from disk, once per version."""

from __future__ import annotations

import functools
import os
from typing import Dict, Optional

from h2dlint.facts.observations import BadObservations, Observations, digest, parse
from h2dlint.facts.settings import Settings, UsageError


def profile_settings(path: Optional[str]) -> Dict[str, object]:
    """The `Settings` fields for a profile at `path` (none: no profile). Raises UsageError, one line naming
    the file, when it cannot be read."""
    if path is None:
        return {}
    full = os.path.abspath(path)
    return {"profile": full, "profile_digest": _loaded(full)[0]}


def observations_for(settings: Settings) -> Optional[Observations]:
    """The records of the profile `settings` name, or None without one."""
    return _loaded(settings.profile)[1] if settings.profile else None


def _loaded(path: str) -> "tuple[str, Observations]":
    try:
        stat = os.stat(path)
    except OSError as error:
        raise UsageError(f"{path}: cannot read the profile: {error.strerror or error}") from None
    return _load(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int, size: int) -> "tuple[str, Observations]":
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        return digest(data), parse(data.decode("utf-8"))
    except OSError as error:
        raise UsageError(f"{path}: cannot read the profile: {error.strerror or error}") from None
    except (UnicodeDecodeError, BadObservations) as error:
        raise UsageError(f"{path}: not a usable profile: {error}") from None

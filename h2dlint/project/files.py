"""Which files a run checks: recursion into folders, `.gitignore` files, and `--exclude` patterns."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, List, Optional, Sequence, Tuple

if TYPE_CHECKING:  # imported when a .gitignore or --exclude needs it: a warm run has no time for it
    import pathspec

# Folders never worth linting, as in ruff's defaults.
DEFAULT_EXCLUDED_DIRS = frozenset(
    {
        ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox",
        ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode",
        "__pycache__", "__pypackages__", "_build", "buck-out", "dist", "node_modules", "site-packages", "venv",
    }
)


@dataclass(frozen=True)
class Candidate:
    """A path to check, or a path given on the command line that cannot be (with the reason)."""

    path: str
    error: Optional[str] = None


GITIGNORE = ".gitignore"
_Ignore = Tuple[str, "pathspec.GitIgnoreSpec"]  # a folder and the patterns that apply below it
Excluded = Callable[[str, bool], bool]  # (path, is_dir) -> skip it; e.g. a configuration's `exclude`


def discover(paths: Sequence[str], exclude: Sequence[str] = (), excluded: Optional[Excluded] = None) -> List[Candidate]:
    """Python files under `paths`, sorted per argument. Files named explicitly are always checked."""
    found: List[Candidate] = []
    for path in paths:
        if not os.path.lexists(path):
            found.append(Candidate(path, "no such file or directory"))
        elif os.path.isdir(path):
            found.extend(Candidate(p) for p in sorted(_walk(path, exclude, excluded or _nothing_excluded)))
        elif _readable_kind(path):
            found.append(Candidate(path))
        else:
            found.append(Candidate(path, "not a regular file"))
    return _first_of_each(found) if len(paths) > 1 else found  # one path's walk meets each file once


def _first_of_each(candidates: List[Candidate]) -> List[Candidate]:
    """A file reached twice (named, and inside a named folder) is checked and reported once."""
    seen = set()
    kept = []
    for candidate in candidates:
        key = os.path.abspath(candidate.path)
        if key not in seen:
            seen.add(key)
            kept.append(candidate)
    return kept


def _nothing_excluded(path: str, is_dir: bool) -> bool:
    return False


def _walk(top: str, exclude: Sequence[str], excluded: Excluded) -> Iterator[str]:
    base = _ancestor_ignores(top)
    if exclude:
        base.append((top, _spec(exclude)))
    inherited = {os.path.normpath(top): base}
    for folder, dirs, files in os.walk(top):
        here = inherited.pop(os.path.normpath(folder))
        local = _read_gitignore(folder) if GITIGNORE in files else None  # the listing says: no failed open per folder
        if local is not None:
            here = here + [(folder, local)]
        dirs[:] = sorted(
            d for d in dirs if d not in DEFAULT_EXCLUDED_DIRS and not _skipped(folder, d, True, here, excluded)
        )
        for d in dirs:
            inherited[os.path.normpath(os.path.join(folder, d))] = here
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".py") and _readable_kind(path) and not _skipped(folder, name, False, here, excluded):
                yield path


def _readable_kind(path: str) -> bool:
    """A regular file, or a symlink that leads nowhere (a loop, a missing target): reading it reports why.
    Pipes, sockets and devices are passed over, since reading one could block forever."""
    return os.path.isfile(path) or (os.path.islink(path) and not os.path.exists(path))


def _skipped(folder: str, name: str, is_dir: bool, ignores: Sequence[_Ignore], excluded: Excluded) -> bool:
    path = os.path.join(folder, name)
    return _ignored(path, is_dir, ignores) or excluded(path, is_dir)


def _ancestor_ignores(top: str) -> List[_Ignore]:
    """`.gitignore` files of the folders above `top`, up to the repository root, outermost first."""
    folder = os.path.abspath(top)
    chain: List[str] = []
    while True:
        parent = os.path.dirname(folder)
        if os.path.exists(os.path.join(folder, ".git")) or parent == folder:
            break
        folder = parent
        chain.append(folder)
    if not os.path.exists(os.path.join(folder, ".git")):
        return []
    found = []
    for ancestor in reversed(chain):
        spec = _read_gitignore(ancestor)
        if spec is not None:
            found.append((ancestor, spec))
    return found


def _spec(lines: Sequence[str]) -> "pathspec.GitIgnoreSpec":
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _read_gitignore(folder: str) -> "Optional[pathspec.GitIgnoreSpec]":
    try:
        with open(os.path.join(folder, GITIGNORE), encoding="utf-8", errors="replace") as handle:
            return _spec(handle.read().splitlines())
    except OSError:
        return None


def _ignored(path: str, is_dir: bool, ignores: Sequence[_Ignore]) -> bool:
    """Git's rule: the deepest `.gitignore` with a matching pattern decides, and `!` patterns re-include."""
    if not ignores:
        return False
    verdict = None
    absolute = os.path.abspath(path)
    for base, spec in ignores:
        relative = os.path.relpath(absolute, os.path.abspath(base)).replace(os.sep, "/")
        result = spec.check_file(relative + "/" if is_dir else relative)
        if result.include is not None:
            verdict = result.include
    return bool(verdict)

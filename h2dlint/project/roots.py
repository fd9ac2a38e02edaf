"""Which project a file belongs to, so that its verdict never depends on which files a face was handed.

A file's project is the nearest folder at or above it holding one of `ROOT_MARKERS` (as ruff and pytest find
a project). `check pkg/batching.py`, the pre-commit hook (handed the staged files), flake8 (one file at a
time), stdin and the language server all analyse that whole folder (the cache makes it cheap) and report only
the files they were given. A file with no marker above it has no project: the paths a face was given are
then the project, as before. `--project DIR` on the command line, or `project-root` in `[tool.h2dlint]`,
names the root instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from h2dlint.project.config import ConfigError, config_for_path

# What marks a project's root folder: packaging metadata, or a repository. `setup.cfg`/`setup.py` cover
# projects without a pyproject.toml; `.git` covers applications that are not packaged at all (it is a file,
# not a folder, in a git worktree or submodule).
ROOT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")


@dataclass(frozen=True)
class Project:
    """What one analysis covers: a root folder, or (with no root) the paths a face was given."""

    root: Optional[str]  # absolute; None: no marker above the given paths
    paths: Tuple[str, ...]  # what is analysed: (root,), or the given paths

    @property
    def identity(self) -> str:
        """Names the project in the cache: runs over different projects keep different last-run records."""
        return self.root if self.root is not None else "\0".join(os.path.abspath(p) for p in self.paths)


def marked_root(path: str) -> Optional[str]:
    """The nearest folder at or above `path` (a file or a folder) that holds a root marker, or None."""
    folder = os.path.abspath(path)
    if not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    while True:
        if any(os.path.lexists(os.path.join(folder, marker)) for marker in ROOT_MARKERS):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def project_root(path: str, named: Optional[str] = None) -> Optional[str]:
    """The root of the project holding `path`: `named` (`--project`), else the `project-root` of the
    configuration governing `path`, else the nearest marked folder."""
    if named is not None:
        return os.path.abspath(named)
    try:
        config = config_for_path(path)
    except ConfigError:
        config = None  # reported by the face that checks the files it governs
    if config is not None and config.project_root is not None:
        return os.path.normpath(os.path.join(config.root, config.project_root))
    return marked_root(path)


def projects_for(paths: Sequence[str], named: Optional[str] = None) -> List[Tuple[Project, List[str]]]:
    """The projects the given paths belong to, each with the given paths it holds, in the order first met.
    Paths with no project root form one project of their own."""
    rooted: Dict[str, List[str]] = {}
    loose: List[str] = []
    for path in paths:
        root = project_root(path, named) if os.path.lexists(path) else None
        if root is None or not _inside(path, root):
            loose.append(path)
        else:
            rooted.setdefault(root, []).append(path)
    # Absolute, so that a run from another folder (`explain`, an editor) finds the same cached run.
    found = [(Project(root, (root,)), given) for root, given in rooted.items()]
    if loose:
        found.append((Project(None, tuple(loose)), loose))
    return found


def _inside(path: str, root: str) -> bool:
    full = os.path.abspath(path)
    return full == root or full.startswith(root.rstrip(os.sep) + os.sep)


def shown_path(found: str, given: Sequence[str]) -> Optional[str]:
    """`found` (a file the project analysis reached) as the user would write it from the paths they gave:
    a given file as given, a file inside a given folder below that folder; None when no given path covers it."""
    full = os.path.abspath(found)
    for path in given:
        base = os.path.abspath(path)
        if full == base:
            return path
        if full.startswith(base.rstrip(os.sep) + os.sep):
            return os.path.join(path, os.path.relpath(full, base))
    return None

"""One file's verdict within its whole project, for the faces that see one file at a time: flake8, stdin
(`check --stdin-filename`) and the language server.

Each gets the project of the file (`roots`), its index (the project run, from the cache when no file of it
changed), and then exactly the findings `h2dlint check` reports for that file: the project run's own result
when the text is the file's content on disk, else the text checked with the heat the run found for the file
(an unsaved editor buffer). So no face depends on what an earlier run happened to leave in the cache.
"""

from __future__ import annotations

import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from h2dlint.checker.file_summary import enabled_codes
from h2dlint.facts.settings import Settings
from h2dlint.facts.sources import SourceError, decode_source, read_bytes
from h2dlint.project.cache import LastRun, content_key, locked
from h2dlint.project.config import Overrides, config_for_path, excluded_by_config, settings_from
from h2dlint.project.findings import Diagnostic, FileResult, check_source_with_heat
from h2dlint.project.roots import Project, project_root
from h2dlint.project.run import fresh_index, index_project, project_cache


def project_of(path: str, loose: Sequence[str] = (), named: Optional[str] = None) -> Project:
    """The project holding `path`; with no root above it, `loose` (the paths a face was given) or the file."""
    root = project_root(path, named)
    return Project(root, (root,)) if root is not None else Project(None, tuple(loose) or (path,))


def project_settings(project: Project, overrides: Overrides = Overrides()) -> Settings:
    """The settings a project is analysed with (what decides heat): its root's configuration, or that of the
    first given path. Each file's findings are then selected by its own configuration (`file_findings`)."""
    return settings_from(config_for_path(project.paths[0]), overrides)


class ProjectIndex:
    """A project run, looked up by file."""

    def __init__(self, last: LastRun) -> None:
        self.last = last
        self.results: Dict[str, FileResult] = {os.path.abspath(p): r for p, r in (last.results or {}).items()}

    def heat_of(self, path: str) -> Optional[Tuple[str, dict]]:
        return (self.last.heat or {}).get(os.path.abspath(path))

    def verdict(self, text: str, path: str, settings: Settings) -> List[Diagnostic]:
        """What `h2dlint check` reports for `path` holding `text`, with `settings` the file's own (its rule
        selection). Raises SourceError when `text` cannot be parsed."""
        full = os.path.abspath(path)
        result = self.results.get(full)
        if result is not None and self._is_on_disk(full, text):
            if result.error is not None:
                raise SourceError(result.error)
            return file_findings(result.diagnostics, settings)
        return check_source_with_heat(text, settings, known=self.heat_of(full), path=full)

    def _is_on_disk(self, full: str, text: str) -> bool:
        """Whether `text` is what the run read from the file (flake8 and editors hand over the text)."""
        known = self.last.stats.get(full)
        try:
            data = read_bytes(full)
        except SourceError:
            return False
        if known is None or content_key(data) != known[1]:
            return False
        try:
            return _lines(decode_source(full, data).text) == _lines(text)
        except SourceError:
            return False


def _lines(text: str) -> str:
    """flake8 reads files with universal newlines; line endings change no finding."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def file_findings(diagnostics: Sequence[Diagnostic], settings: Settings) -> List[Diagnostic]:
    """The findings that the file's own configuration selects (`per-file-ignores`, nested tables)."""
    codes = enabled_codes(settings)
    return [d for d in diagnostics if d.code in codes]


def built_index(
    project: Project, settings: Settings, jobs: Optional[int] = None, use_cache: bool = True
) -> ProjectIndex:
    """The project's index, built or refreshed here when files changed (the CLI, the language server)."""
    return ProjectIndex(index_project(project, settings, jobs=jobs, use_cache=use_cache, excluded=excluded_by_config))


def shared_index(project: Project, settings: Settings) -> ProjectIndex:
    """The project's index, built once across the processes of one tool run (flake8's workers): the first to
    find it stale rebuilds it under the cache's lock while the others wait, then they read what it stored."""
    fresh = fresh_index(project, settings, excluded_by_config)
    if fresh is not None:
        return ProjectIndex(fresh)
    import multiprocessing  # only a stale index needs it: `h2dlint check` imports this module too

    cache = project_cache(project, settings)
    with locked(cache.lock_path):  # type: ignore[union-attr]
        fresh = fresh_index(project, settings, excluded_by_config)
        if fresh is not None:
            return ProjectIndex(fresh)
        if multiprocessing.current_process().daemon and _built_by_the_cli(project):
            fresh = fresh_index(project, settings, excluded_by_config)
            if fresh is not None:
                return ProjectIndex(fresh)
        return built_index(project, settings, jobs=1 if multiprocessing.current_process().daemon else None)


def _built_by_the_cli(project: Project) -> bool:
    """Build the index with `h2dlint check` in a child process: a pool worker (flake8's) may not start the
    worker processes that parse a large project in parallel, but a fresh interpreter may. The CLI analyses
    the same project with the same settings, so it stores exactly the index this process then reads."""
    named = ["--project", project.root, project.root] if project.root is not None else list(project.paths)
    command = [sys.executable, "-m", "h2dlint", "check", "--quiet", "--output-format", "concise", *named]
    import subprocess  # imported here for the same reason as multiprocessing above

    try:
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    except OSError:
        return False
    return done.returncode in (0, 1)

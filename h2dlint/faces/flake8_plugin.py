"""The flake8 face: a tree plugin, registered as the `flake8.extension` entry point `HTD`.

flake8 hands over one file at a time, yet a file's verdict depends on its whole project (a function is hot
because another file calls it per step). So the plugin finds the file's project (`project.roots`; with no
root above it, the paths flake8 was given), and gets that project's index itself: built, or refreshed when
files changed, once per flake8 run across its worker processes under a lock in the cache
(`one_file.shared_index`). A file's findings are then exactly those `h2dlint check` reports for it, at the
same rows and columns, whether or not any `check` ran before.

A file without `torch` costs one substring search; when flake8's `--select`/`--ignore` leave no HTD code
selected, the plugin does nothing at all.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

from h2dlint import __version__
from h2dlint.checker.file_summary import failure_reason
from h2dlint.facts.settings import Settings
from h2dlint.facts.sources import read_source
from h2dlint.project.config import settings_for_path
from h2dlint.project.findings import Diagnostic, check_source
from h2dlint.project.one_file import ProjectIndex, project_of, project_settings, shared_index
from h2dlint.project.roots import Project
from h2dlint.rules import ALL_CODES

# Reported once, at 1:1, when a file that Python parses cannot be analysed (too deeply nested for the
# analysis, or a bug). flake8 reports real syntax errors itself (E999) and then runs no tree plugin.
NOT_ANALYSED = "HTD001"

Finding = Tuple[int, int, str, type]

# Set by `parse_options` in flake8's main process (and inherited by, or re-made in, its workers).
_RUN: Dict[str, Any] = {"selected": True, "paths": ()}
_INDEXES: Dict[Tuple[str, Settings], ProjectIndex] = {}  # this process's indexes, by project and settings


class Flake8Checker:
    name = "h2dlint"
    version = __version__

    def __init__(self, tree: Any, lines: Any, filename: str = "stdin") -> None:
        # flake8's own tree is not used: the core works on text. `lines` are what flake8 read (BOM
        # stripped, or stdin), so the core sees exactly what flake8 checks.
        self.lines = lines
        self.filename = filename

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        """Note whether any HTD code is selected, and the paths flake8 was given (the project of files
        that lie under no project root)."""
        _RUN["selected"] = _any_code_selected(options)
        _RUN["paths"] = tuple(getattr(options, "filenames", None) or (os.curdir,))

    def run(self) -> Iterator[Finding]:
        if not _RUN["selected"]:
            return
        text = "".join(self.lines)
        if "torch" not in text:
            return  # every rule needs a torch import: most files cost this one search
        try:
            diagnostics = _check(text, self.filename)
        except Exception as error:  # a file that cannot be analysed is one finding, never a flake8 crash
            yield 1, 0, f"{NOT_ANALYSED} h2dlint could not analyse this file: {failure_reason(error)}", type(self)
            return
        for d in diagnostics:
            # flake8 columns are 0-based and it prints them 1-based; the core's are 1-based.
            yield d.span.row, d.span.column - 1, f"{d.code} {d.message}", type(self)


def _any_code_selected(options: argparse.Namespace) -> bool:
    try:
        from flake8.style_guide import Decision, DecisionEngine
    except ImportError:  # pragma: no cover - a flake8 without the decision engine: always run
        return True
    try:
        engine = DecisionEngine(options)
        return any(engine.decision_for(code) is Decision.Selected for code in (NOT_ANALYSED, *ALL_CODES))
    except (AttributeError, TypeError):  # options of another flake8 version: always run
        return True


def _check(text: str, filename: str) -> List[Diagnostic]:
    """The findings `h2dlint check` reports for `filename` holding `text`. Raises ConfigError for a
    broken configuration and SourceError for text that cannot be parsed, which `run` reports as HTD001."""
    if filename in ("stdin", "-"):
        return check_source(text, settings_for_path(os.curdir))  # no path: the file alone
    if os.path.exists(filename):  # flake8 decodes a file not valid in its encoding as latin-1; the CLI refuses it
        read_source(filename)
    project = project_of(filename, loose=_RUN["paths"])
    return _index(project).verdict(text, filename, settings_for_path(filename))


def _index(project: Project) -> ProjectIndex:
    settings = project_settings(project)
    key = (project.identity, settings)
    found: Optional[ProjectIndex] = _INDEXES.get(key)
    if found is None:
        found = _INDEXES[key] = shared_index(project, settings)
    return found

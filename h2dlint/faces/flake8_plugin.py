"""The flake8 face: a tree plugin, registered as the `flake8.extension` entry point `HTD`.

It runs the same analysis core as the command line, so `flake8 --select HTD` reports the same findings at
the same rows and columns as `h2dlint check`.
"""

from __future__ import annotations

import os
from typing import Any, Iterator, List, Tuple

from h2dlint import __version__
from h2dlint.checker.analyzer import failure_reason
from h2dlint.facts.settings import Settings
from h2dlint.facts.sources import read_source
from h2dlint.project.config import settings_for_path
from h2dlint.project.findings import Diagnostic, check_source, check_source_in_project

# Reported once, at 1:1, when a file that Python parses cannot be analysed (too deeply nested for the
# analysis, or a bug). flake8 reports real syntax errors itself (E999) and then runs no tree plugin.
NOT_ANALYSED = "HTD001"

Finding = Tuple[int, int, str, type]


class Flake8Checker:
    name = "h2dlint"
    version = __version__

    def __init__(self, tree: Any, lines: Any, filename: str = "stdin") -> None:
        # flake8's own tree is not used: the core works on text. `lines` are what flake8 read (BOM
        # stripped, or stdin), so the core sees exactly what flake8 checks.
        self.lines = lines
        self.filename = filename

    def run(self) -> Iterator[Finding]:
        text = "".join(self.lines)
        try:
            diagnostics = _check(text, self.filename)
        except Exception as error:  # a file that cannot be analysed is one finding, never a flake8 crash
            yield 1, 0, f"{NOT_ANALYSED} h2dlint could not analyse this file: {failure_reason(error)}", type(self)
            return
        for d in diagnostics:
            # flake8 columns are 0-based and it prints them 1-based; the core's are 1-based.
            yield d.span.row, d.span.column - 1, f"{d.code} {d.message}", type(self)


def _check(text: str, filename: str) -> List[Diagnostic]:
    """flake8 sees one file at a time: it uses the project index that the last cached `h2dlint check` left
    (so a function made hot from another file is hot here too), and reasons about the file alone without one."""
    settings = _settings_for(filename)
    if filename in ("stdin", "-"):
        return check_source(text, settings)
    if "torch" in text:
        read_source(filename)  # flake8 decodes a file that is not valid in its encoding as latin-1; the CLI refuses it
    return check_source_in_project(text, filename, settings)


def _settings_for(filename: str) -> Settings:
    """The settings that apply to `filename`: its `[tool.h2dlint]` table, found as the CLI finds it (stdin
    uses the current folder's). flake8's own `--select` and `--extend-ignore` then filter the codes on top of
    it. A broken configuration raises ConfigError, which `run` reports as HTD001."""
    return settings_for_path(os.curdir if filename in ("stdin", "-") else filename)

"""h2dlint's fix as a libcst codemod, for codebases that run their refactors through libcst's tool:

    python -m libcst.tool codemod --no-format -x h2dlint.codemod.FixHostToDeviceCopies PATH

It is the transformer `h2dlint check --fix` runs (`h2dlint.fixing.transform`), on the tree libcst's tool parsed
(no second parse), with each file's `[tool.h2dlint]` settings. Like flake8 it sees one file at a time, so it
reasons about each file alone; `h2dlint check --fix` also follows hot paths across files.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Optional

import libcst as cst
from libcst.codemod import CodemodContext, SkipFile, VisitorBasedCodemodCommand

from h2dlint.fixing.autofix import applies
from h2dlint.fixing.transform import HostToDeviceRewrites, RewritePlan
from h2dlint.project.config import config_for_path, helper_settings, settings_for_path
from h2dlint.project.findings import check_source


class FixHostToDeviceCopies(HostToDeviceRewrites, VisitorBasedCodemodCommand):
    DESCRIPTION: str = "Rewrite per-step blocking host-to-device copies to h2dlint's pinned, non-blocking helper."

    def __init__(self, context: CodemodContext, helper_module: Optional[str] = None, unsafe_fixes: bool = False):
        super().__init__(context)
        self.helper_module = helper_module
        self.unsafe_fixes = unsafe_fixes

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--helper-module", dest="helper_module", default=None,
            help="the module that fixed code imports h2d_tensor / h2d_as_tensor from (default: the file's "
            "[tool.h2dlint] helper-module, else h2dlint.runtime)",
        )
        arg_parser.add_argument(
            "--unsafe-fixes", dest="unsafe_fixes", action="store_true",
            help="also make the fixes that may change behaviour, as `h2dlint check --fix --unsafe-fixes` does",
        )

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        path = self.context.filename or os.curdir
        settings = settings_for_path(path)
        if self.helper_module is not None:
            settings = dataclasses.replace(settings, **helper_settings(self.helper_module, config_for_path(path), path))
        if tree.default_newline == "\r":
            # libcst's tool parsed it already, dropping blank lines: `h2dlint check --fix` keeps such files
            raise SkipFile("classic Mac (CR) line endings, which libcst does not keep; use `h2dlint check --fix`")
        text = tree.code
        fixes = [d.fix for d in check_source(text, settings) if applies(d.fix, self.unsafe_fixes)]
        if not fixes:
            raise SkipFile("no fixable host-to-device copies")
        self.start_rewrites(RewritePlan.for_source(text, fixes, settings.helper_module, settings.helper_first_party))
        fixed = super().transform_module_impl(tree)
        if not self.applied:
            raise SkipFile("libcst's scope analysis confirmed none of the fixes")
        return fixed

"""h2dlint's fix as a libcst codemod, for codebases that run their refactors through libcst's tool:

    python -m libcst.tool codemod -x h2dlint.faces.codemod.FixHostToDeviceCopies PATH

It applies the fixes `h2dlint check --fix` applies, with the same core and each file's `[tool.h2dlint]`
settings. Like flake8 it sees one file at a time, so it reasons about each file alone; `h2dlint check --fix`
also follows hot paths across files.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Optional

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext, SkipFile

from h2dlint.fixing.autofix import fix_source
from h2dlint.project.config import settings_for_path


class FixHostToDeviceCopies(CodemodCommand):
    DESCRIPTION: str = "Rewrite per-step blocking host-to-device copies to h2dlint's pinned, non-blocking helper."

    def __init__(self, context: CodemodContext, helper_module: Optional[str] = None) -> None:
        super().__init__(context)
        self.helper_module = helper_module

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--helper-module", dest="helper_module", default=None,
            help="the module that fixed code imports h2d_tensor / h2d_as_tensor from (default: the file's "
            "[tool.h2dlint] helper-module, else h2dlint.runtime)",
        )

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        settings = settings_for_path(self.context.filename or os.curdir)
        if self.helper_module is not None:
            settings = dataclasses.replace(settings, helper_module=self.helper_module)
        fixed, count, _ = fix_source(tree.code, settings)
        if count == 0:
            raise SkipFile("no fixable host-to-device copies")
        return cst.parse_module(fixed)

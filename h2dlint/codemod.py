"""h2dlint's fix as a libcst codemod, for codebases that run their refactors through libcst's tool:

    python -m libcst.tool codemod -x h2dlint.codemod.FixHostToDeviceCopies PATH

It applies exactly the fixes `h2dlint check --fix` applies (the same core and the same settings file), so the
two never disagree.
"""

from __future__ import annotations

import argparse

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext, SkipFile

from h2dlint.autofix import fix_source
from h2dlint.settings import Settings


class FixHostToDeviceCopies(CodemodCommand):
    DESCRIPTION: str = "Rewrite per-step blocking host-to-device copies to h2dlint's pinned, non-blocking helper."

    def __init__(self, context: CodemodContext, helper_module: str = Settings().helper_module) -> None:
        super().__init__(context)
        self.settings = Settings(helper_module=helper_module)

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--helper-module", dest="helper_module", default=Settings().helper_module,
            help="the module that fixed code imports h2d_tensor / h2d_as_tensor from",
        )

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        fixed, count, _ = fix_source(tree.code, self.settings)
        if count == 0:
            raise SkipFile("no fixable host-to-device copies")
        return cst.parse_module(fixed)

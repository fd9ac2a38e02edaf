"""The shape of a rule: one plain idea, its documentation, and its own examples (which are its tests).

A rule only recognises a construct at a call site. Whether the site is hot, and so whether it is reported,
is decided once for all rules by `h2dlint.project.hotness`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import ClassVar, Optional, Sequence, Tuple, Union

from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.settings import Settings
from h2dlint.rules.docs import dedent, render_documentation
from h2dlint.rules.examples import Invalid, Valid
from h2dlint.rules.rewrites import Rewrite


@dataclass(frozen=True)
class Match:
    """What a rule found at one call: the node to report, what happens, and what to use instead."""

    node: ast.AST
    problem: str
    remedy: str
    rewrite: Optional[Rewrite] = None  # how to fix it, when the rule knows a behaviour-preserving fix
    unfixable: Optional[str] = None  # why a rule that has a fix cannot apply it here


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    # Documentation, in the sections of ruff's rule pages.
    what_it_does: ClassVar[str]
    why_bad: ClassVar[str]
    example: ClassVar[str]
    use_instead: ClassVar[str]
    fix_availability: ClassVar[str]  # "sometimes" or "never": whether `--fix` can rewrite its findings
    # What the fix changes and when it is withheld: one block, or several (shared text, then the rule's own).
    fix_safety: ClassVar[Union[str, Tuple[str, ...]]]
    known_problems: ClassVar[Union[str, Tuple[str, ...]]]  # where the rule is wrong or blind, honestly
    options: ClassVar[Tuple[str, ...]] = ()  # the `[tool.h2dlint]` keys that change what it reports or fixes
    references: ClassVar[Tuple[str, ...]] = ()  # keys of `docs.REFERENCES`
    # A cheap prefilter: the file must contain at least one word of every group, or the rule cannot match.
    triggers: ClassVar[Tuple[Tuple[str, ...], ...]]
    VALID: ClassVar[Sequence[Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()
    # True for a rule that reports constructs under CUDA-graph capture: its sites are reported when they run
    # under capture (see `analyzer.report_reason`), whatever their hotness, and other rules' sites there are not.
    reports_capture: ClassVar[bool] = False

    def __init__(self, settings: Optional[Settings] = None) -> None:
        self.settings = settings if settings is not None else Settings()

    def match(self, call: ast.Call, names: NameResolver) -> Optional[Match]:
        raise NotImplementedError

    @classmethod
    def may_match(cls, text: str) -> bool:
        return all(any(word in text for word in group) for group in cls.triggers)

    @classmethod
    def description(cls) -> str:
        """What the rule does, in plain text: the first section of its documentation."""
        return dedent(cls.what_it_does)

    @classmethod
    def documentation(cls) -> str:
        """The rule's page, as `h2dlint rule CODE` prints it and SARIF carries it."""
        return render_documentation(cls)

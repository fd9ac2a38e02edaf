"""The shape of a rule: one plain idea, its documentation, and its own examples (which are its tests).

A rule recognises a construct at the nodes it looks at (`looks_at`: calls, subscripts, tests, `for`
iterables; see `h2dlint.rules.context`), given the context the checker's walk keeps of each. Whether a site
is hot is decided once for all rules by `h2dlint.project.hotness`; whether it is then reported is the
rule's `report_reason`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import ClassVar, FrozenSet, Optional, Sequence, Tuple, Union

from h2dlint.facts.heat import Heat, site_cold_reason, site_reason_for, site_unreported_reason
from h2dlint.facts.settings import Settings
from h2dlint.facts.summary import Site
from h2dlint.rules.context import Context, NodeKind
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
    placement: Tuple[str, ...] = ()  # the placement evidence the finding rests on, for `explain`


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
    # Quiet inside a `sync-allowed-contexts` block (`with gpu_sync_allowed():`): the rule reports a sync or a
    # blocking copy, which the project keeps there on purpose (the checker skips the rule in such blocks).
    quiet_where_syncs_allowed: ClassVar[bool] = False
    options: ClassVar[Tuple[str, ...]] = ()  # the `[tool.h2dlint]` keys that change what it reports or fixes
    references: ClassVar[Tuple[str, ...]] = ()  # keys of `docs.REFERENCES`
    # Reads what other rules found at the same call (`Context.call_matches`): the checker runs it after them.
    reuses_call_matches: ClassVar[bool] = False
    # A cheap prefilter: the file must contain at least one word of every group, or the rule cannot match.
    triggers: ClassVar[Tuple[Tuple[str, ...], ...]]
    VALID: ClassVar[Sequence[Valid]] = ()
    INVALID: ClassVar[Sequence[Invalid]] = ()

    def __init__(self, settings: Optional[Settings] = None) -> None:
        self.settings = settings if settings is not None else Settings()

    # The nodes the rule looks at: the walk calls `check_<kind>` (`check_call`, ...) for each of these.
    looks_at: ClassVar[FrozenSet[NodeKind]] = frozenset({NodeKind.CALL})

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        raise NotImplementedError

    def check_subscript(self, subscript: ast.Subscript, context: Context) -> Optional[Match]:
        """`x[i]` read."""
        raise NotImplementedError

    def check_subscript_target(self, subscript: ast.Subscript, context: Context) -> Optional[Match]:
        """`x[i]` assigned to (`x[i] = v`, `x[i] += v`) or deleted."""
        raise NotImplementedError

    def check_test(self, test: ast.expr, context: Context) -> Optional[Match]:
        """The test of an `if`, `while`, `assert` or conditional expression."""
        raise NotImplementedError

    def check_for_iterable(self, iterable: ast.expr, context: Context) -> Optional[Match]:
        """What a `for` statement iterates over."""
        raise NotImplementedError

    @classmethod
    def report_reason(cls, site: Site, owner: Optional[Heat], module: str = "") -> Optional[str]:
        """Why `site`, one of this rule's, is reported, given the heat of its function (`owner`) and its
        module; None when it is not. Most rules report hot code that is not one-time and does not run under
        CUDA-graph capture. Findings and `explain` both ask this."""
        if cls._quiet_on_arrival(site, owner) is not None:
            return None
        return site_reason_for(site, owner, module)

    @classmethod
    def unreported_reason(cls, site: Site, owner: Optional[Heat]) -> str:
        """Why `site` is not reported, when `report_reason` gives None: for `explain`."""
        on_arrival = cls._quiet_on_arrival(site, owner)
        if on_arrival is not None and site_cold_reason(site) is None:
            return on_arrival
        return site_unreported_reason(site, owner)

    @classmethod
    def on_arrival_reason(cls, site: Site) -> Optional[str]:
        """Why the rule says nothing of `site` in code that only request arrival reaches (`Heat.on_arrival`:
        host tensors, in the tokenizer's process), or None where it reports there. A copy to a device taken from
        a local or parameter (`device=ids.device`) is host to host there; other copies are still copies."""
        return BORROWED_ON_ARRIVAL if site.borrowed_device else None

    @classmethod
    def _quiet_on_arrival(cls, site: Site, owner: Optional[Heat]) -> Optional[str]:
        return cls.on_arrival_reason(site) if owner is not None and owner.on_arrival else None

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


BORROWED_ON_ARRIVAL = (
    "the code around it runs only as a request arrives, on host tensors, where a device taken from an input "
    "tensor (`device=ids.device`) is the host (`cold-sync-on-request-arrival`)"
)

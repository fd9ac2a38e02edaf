"""The values of the placement analysis (`facts.placement`): where a tensor lives (`Place`), with its evidence
(`Placement`); how two or more pieces of evidence combine (`agree`, `agree_all`); and how a message or
`explain` words them."""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Optional, Sequence, Tuple, Union

from h2dlint.facts.summary import UNANSWERED, PlacementQuery


class Place(str, enum.Enum):
    PAGEABLE = "host (pageable)"
    PINNED = "host (pinned)"
    HOST = "host"  # on the host; whether pinned is not known (a name says host, `.cpu` of a buffer pair)
    DEVICE = "device"
    UNKNOWN = UNANSWERED

    @property
    def on_host(self) -> bool:
        return self in (Place.PAGEABLE, Place.PINNED, Place.HOST)


@dataclass(frozen=True)
class Placement:
    place: Place
    evidence: str = ""  # a clause completing "`x` ...": "is built on the host by `torch.zeros(...)` at line 12"
    chain: Tuple[str, ...] = ()  # the steps followed, from the use back to the evidence: for `explain`
    heuristic: Optional[str] = None  # the convention that decided it, when one did (`placement-name-host`)
    # Unknown here, and known only to another file: what to ask the project index (`placement_summary`)
    pending: Optional[PlacementQuery] = None

    def via(self, step: Union[str, Callable[[], str]]) -> "Placement":
        """This placement, reached through `step` (a line of `explain`'s chain; a function that words it, where
        wording costs more than most unknown results are worth)."""
        if self.place is Place.UNKNOWN:
            return self
        return replace(self, chain=(step if isinstance(step, str) else step(), *self.chain))

    def unpinned(self) -> "Placement":
        """The placement of a new tensor computed from this one: a host result is pageable, whatever memory
        this one is in (PyTorch allocates a result without the pin flag), and the evidence says so."""
        if not self.place.on_host or self.place is Place.PAGEABLE:
            return self
        evidence = f"is a new tensor in pageable memory, computed from one that {self.evidence}" if self.evidence else ""
        return replace(self, place=Place.PAGEABLE, evidence=evidence)


UNKNOWN = Placement(Place.UNKNOWN)
# What a summary being worked out reads of itself (`self.ids = self.ids[keep]`, `torch.cat([self.ids, other.ids])`
# in the class of `self.ids`): no evidence either way, so a choice between alternatives skips it (`agree_all`),
# and the summary is what the other alternatives agree on; with nothing else, unknown.
CYCLE = Placement(Place.UNKNOWN, "is computed from itself")
# A tensor with no elements (`torch.empty(0)`, `torch.tensor([])`): a copy of it moves nothing, so it is never
# reported; and as one alternative of several (`torch.cat(parts) if parts else torch.empty(0)`) it says nothing
# of where the others live, so a choice skips it too.
EMPTY = Placement(Place.UNKNOWN, "has no elements")
# A tensor moved to, or built on, a device that may be the CPU (`device = "cpu"` in one branch): configuration
# decides, so a name that says where it lives (`tensor` beside a `tensor_cpu`) is overruled, not believed.
EITHER = Placement(Place.UNKNOWN, "is on a device that may be the CPU")
# Evidence that disagrees (`prefix_lens = torch.tensor(...)`, built on the host, beside a `prefix_lens_cpu` that
# makes it the device copy by name): unknown, and what is computed from it too, so no name overrules it either.
DISPUTED = Placement(Place.UNKNOWN, "has evidence that disagrees")
# `None`, as one alternative of several (`t.cpu() if c else None`, `x = None` then `if c: x = t.cpu()`): no tensor
# at all, so a tensor operation on the value sees only the others, and a choice skips it.
NO_TENSOR = Placement(Place.UNKNOWN, "is None")
# What a NumPy function returns (`np.concatenate(...)`): host data, but no torch tensor, so PyTorch never copies
# nor syncs on it (a `.to(dev)` of it would raise), and a name that says a device (`positions` in a model) is
# overruled, not believed: no rule reports it.
NUMPY = Placement(Place.UNKNOWN, "is a NumPy array")


def agree(first: Placement, second: Placement) -> Placement:
    """One placement from two pieces of evidence: `DISPUTED` when one says host and the other device."""
    if first.place is Place.UNKNOWN:
        return second
    if second.place is Place.UNKNOWN or first.place is second.place:
        return first
    if first.place.on_host and second.place.on_host:
        return first if first.place is not Place.HOST else second  # the one that knows the memory
    return DISPUTED


def agree_all(placements: Iterable[Placement]) -> Placement:
    """Where a value that is one of several alternatives (branches, assignments, items) lives: the same side
    for every one; `DISPUTED` where one alternative is, or where one says host and another device; else
    UNKNOWN (also for none). Host alternatives whose memory differs give the host, memory unknown: one may be
    pinned. An alternative that is the value itself (`CYCLE`), has no elements (`EMPTY`)
    or is `None` (`NO_TENSOR`) is skipped. Alternatives that wait on the same question to another file
    (`pending`) and no unknown one give that question: the project's answer decides, and the choice is worked
    out again under it."""
    result: Optional[Placement] = None
    cycle = False
    waiting: Optional[Placement] = None
    for placement in placements:
        if placement is CYCLE:
            cycle = True
            continue
        if placement is EMPTY or placement is NO_TENSOR:
            continue
        if placement is DISPUTED:
            return DISPUTED
        if placement.place is Place.UNKNOWN:
            if placement.pending is None or (waiting is not None and waiting.pending != placement.pending):
                return UNKNOWN
            waiting = waiting or placement
            continue
        if result is None or result.place is placement.place:
            result = result or placement
        elif result.place.on_host and placement.place.on_host:
            result = replace(result, place=Place.HOST)
        else:
            return DISPUTED
    if waiting is not None:
        return waiting
    return result if result is not None else (CYCLE if cycle else UNKNOWN)


def short(expr: ast.expr, limit: int = 40) -> str:
    text = ast.unparse(expr)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(expr: ast.expr) -> str:
    """`expr` as a message names it: its source, shortened."""
    return short(expr, 32)


def clause(expr: ast.expr, placement: Placement) -> str:
    """The evidence as a message's short clause: "`seq_lens_cpu` is built on the host at line 412"."""
    return f"`{describe(expr)}` {placement.evidence}"


def explanation(expr: ast.expr, placement: Placement) -> Tuple[str, ...]:
    """The placement chain, as `explain` prints it: the verdict and its evidence, then each step followed."""
    named = f" [heuristic: {placement.heuristic}]" if placement.heuristic else ""
    head = f"placement: `{describe(expr)}` is on the {placement.place.value}: {placement.evidence}{named}"
    return (head, *(f"  from {step}" for step in placement.chain))


def agreed(placements: Sequence[Placement]) -> Placement:
    """`agree_all`, except that a single placement is kept as it is, with the question it leaves pending."""
    return placements[0] if len(placements) == 1 else agree_all(placements)

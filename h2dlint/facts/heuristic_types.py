"""The kinds of heuristic (`Effect`, `Group`), the record each one is (`Heuristic`), and how name heuristics
become the glob tables of `Settings`. The registry itself, every heuristic with its rationale and evidence, is
`h2dlint.facts.heuristics`."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable, Tuple

from h2dlint.facts.presets import Preset


class Effect(str, enum.Enum):
    HOT = "hot"  # code runs per step or per request
    COLD = "cold"  # a whole function runs once (setup, loading, capture, tests)
    ONE_TIME = "one-time"  # a block or loop inside a function runs once, or not once per item
    PLACEMENT = "placement"  # a tensor lives on the host or on a device (`facts.placement`)


class Group(str, enum.Enum):
    MARKER = "marker"  # `# h2dlint: hot|cold` comments
    NAME = "name"  # function-name globs (`Settings.hot_functions`, `Settings.cold_functions`)
    MODULE = "module"  # globs over the parts of a module's dotted name (`facts.heuristic_modules`)
    DECORATOR = "decorator"  # decorators that change when a body runs
    REGISTRATION = "registration"  # registrations that make a function reachable from forward passes
    CALL = "call"  # what the calls around a function say about it
    NESTING = "nesting"  # a nested function and its parent
    GUARD = "guard"  # blocks that run once under a condition (cached builds, once flags, lazy returns)
    LOOP = "loop"  # what counts as a per-iteration loop
    CONVENTION = "convention"  # what a tensor's name says of where it lives


@dataclass(frozen=True)
class Heuristic:
    id: str
    effect: Effect
    group: Group
    rationale: str  # one line: why code this heuristic matches is hot or cold
    patterns: Tuple[str, ...] = ()  # the fnmatch globs of a name heuristic, in matching order
    evidence: Tuple[str, ...] = ()  # `engine path:line` rows of the blind censuses (benchmarks/*labels.tsv)
    exceptions: Tuple[str, ...] = ()  # globs of names that `patterns` match but the heuristic does not


def name_patterns(table: Tuple[Heuristic, ...], disabled: Iterable[str]) -> Tuple[Tuple[str, str], ...]:
    """(glob, heuristic id) for the enabled heuristics of a name table, in matching order."""
    off = frozenset(disabled)
    return tuple((pattern, h.id) for h in table if h.id not in off for pattern in h.patterns)


def preset_heuristic(preset: Preset, effect: Effect, patterns: Tuple[str, ...], part: str = "") -> Heuristic:
    """A preset's own name list (`h2dlint.facts.presets`) as one heuristic: `hot-name-preset-training`."""
    suffix = f"-{part}" if part else ""
    heuristic = f"{effect.value}-name-preset-{preset.name}{suffix}"
    return Heuristic(heuristic, effect, Group.NAME, preset.rationale, patterns)

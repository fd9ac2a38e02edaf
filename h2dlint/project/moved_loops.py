"""What an edit of one file changes in the project's heat (`hotness.propagate`), so that a warm run can reuse
it: nothing at all when the edit leaves what propagation reads as it was, but for the lines of loop calls,
whose roots' messages name them (`moved_loops`, `with_moved_loops`)."""

from __future__ import annotations

import functools
from dataclasses import fields, is_dataclass, replace
from typing import AbstractSet, Dict, List, Optional, Tuple

from h2dlint.facts.heat import Heat
from h2dlint.facts.summary import CallRef, FunctionInfo, ModuleSummary
from h2dlint.project.hotness_roots import loop_root

# What propagation never reads: where functions and calls are (it names the line only of a loop call), the
# sites, which decide only their own module's findings, and the attributes classes hold, which only other files'
# pending sites read (`placement_relink.relink` resolves those again). Any other field, present or added later,
# counts.
_NOT_READ = frozenset(
    {(ModuleSummary, "sites"), (FunctionInfo, "line"), (FunctionInfo, "end_line"), (CallRef, "line"),
     (CallRef, "capture_line"), (ModuleSummary, "attribute_names"),
     (ModuleSummary, "filled_records")}
)
MovedLoops = Dict[str, Heat]  # the tag of a loop root before an edit -> that root after it


def moved_loops(old: ModuleSummary, new: ModuleSummary, module: str, names: AbstractSet[str]) -> Optional[MovedLoops]:
    """What an edit of `module` (its summary `old` -> `new`) changes in the heat of a project whose functions
    have `names`: None when propagation may change; otherwise the loop roots whose line moved (their heat is
    the same but for the line its messages name), often none. A call reaches only functions of its own name,
    so calls of other names (`torch.cat`, `len`) are never read."""
    if _hotness_view(old, names) != _hotness_view(new, names):
        return None
    moved: MovedLoops = {}
    for before, after in zip(_loop_calls(old, names), _loop_calls(new, names)):
        was, now = loop_root(module, before), loop_root(module, after)
        if moved.setdefault(was.tag, now) != now:
            return None  # two loops that shared a line no longer do: which one a message names may change
    return {tag: root for tag, root in moved.items() if root.tag != tag}


def with_moved_loops(heat: Heat, moved: Dict[str, MovedLoops]) -> Heat:
    """`heat` after edits that moved loop roots, by module (see `moved_loops`); a root's tag may go on to
    say how often its loop repeats (`_loop_root`'s `how_often`), which the edit keeps."""
    root = moved_root(heat, moved)
    if root is None:
        return heat
    how_often = heat.tag[len(_loop_tag(heat.tag)):]
    return replace(heat, origin=root.origin + how_often, tag=root.tag + how_often)


def moved_root(heat: Heat, moved: Dict[str, MovedLoops]) -> Optional[Heat]:
    """The loop root that `heat` names after the edits of `moved`, or None when its loop did not move."""
    return moved.get(heat.module, {}).get(_loop_tag(heat.tag))


def _loop_tag(tag: str) -> str:
    """A loop root's tag without what it may say of how often the loop repeats."""
    return tag.partition(" (")[0]


def _loop_calls(summary: ModuleSummary, names: AbstractSet[str]) -> List[CallRef]:
    return [c for c in summary.calls if c.name in names and c.loop_line is not None]


def _hotness_view(summary: ModuleSummary, names: AbstractSet[str]) -> object:
    """What propagation reads of `summary`, with the lines of loop calls left to `moved_loops`."""
    calls = [c._replace(loop_line=None if c.loop_line is None else 0) for c in summary.calls if c.name in names]
    return _comparable(replace(summary, calls=calls))


def _comparable(value: object) -> object:
    """`value` as nested tuples, minus what propagation never reads; dicts keep their order, which decides
    the order of propagation (and so which of two equally short call chains a message names)."""
    if isinstance(value, _ATOMS):
        return value
    if isinstance(value, dict):
        return tuple((key, _comparable(item)) for key, item in value.items())
    kind = type(value)
    if (is_dataclass(value) and not isinstance(value, type)) or hasattr(kind, "_fields"):  # a record
        return (kind.__name__,) + tuple(_comparable(getattr(value, name)) for name in _read_fields(kind))
    if isinstance(value, (list, tuple)):
        return tuple(_comparable(item) for item in value)
    return value


_ATOMS = (str, int, float, type(None))


@functools.lru_cache(maxsize=None)
def _read_fields(kind: type) -> Tuple[str, ...]:
    names = kind._fields if hasattr(kind, "_fields") else tuple(f.name for f in fields(kind))  # a named tuple
    return tuple(name for name in names if (kind, name) not in _NOT_READ)

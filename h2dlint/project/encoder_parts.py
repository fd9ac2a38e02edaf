"""Classes that are multimodal encoders though no class glob names them (`hot-per-request-encoder`): one whose
`forward` takes images or audio first (`RadioModel.forward(self, pixel_values)`), and one that only an encoder
builds: a vision tower's MoE feed-forward (dots3's `MoESwiGLUFFN`), a time-series encoder's subsampling. Their
`forward` runs when the encoder runs, once per request in a serving engine.

A class is such a part when every call of its name in the project (`C(...)`, `mod.C(...)`, `self.C(...)`) is
made in a method of an encoder class (`Settings.per_request_class_heuristic`) or of another part. One built
anywhere else (at module level, in a function, in a language model's method) is none, and so is a name two
classes share: their constructors cannot be told apart, and the calls of both count.

The parts of a Hugging Face processor (`hot-per-request-processor`: a feature extractor's filterbank module,
whose `forward` runs on the host as a request arrives) are found the same way, from the same pass over the
constructor calls (`class_parts`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, FrozenSet, Set, Tuple

from h2dlint.checker.call_graph import CallGraph
from h2dlint.facts.heuristic_levels import VAE
from h2dlint.facts.settings import PROCESSOR, Settings
from h2dlint.facts.summary import CallKind

ENCODER = "hot-per-request-encoder"
_OUTSIDE_A_CLASS = ""  # the builder of a constructor call made at module level or in a plain function


def class_parts(graph: CallGraph, settings: Settings) -> Tuple[Dict[str, str], FrozenSet[str]]:
    """(the project's classes that run as multimodal encoders though no class glob names them, each with why:
    its `forward` takes images or audio first, or only encoders, or other such classes, build it; the classes
    that only Hugging Face processors, or other such parts, build), from one pass over the constructor calls."""
    processors = _processors(graph, settings)
    if not settings.enabled(ENCODER) and not processors:
        return {}, frozenset()
    built_by = {name: owners for name, owners in _builders(graph).items() if _OUTSIDE_A_CLASS not in owners}
    by_input = _encoders_by_input(graph, settings)
    encoders = {name: f"its `forward` takes `{first}` first: a multimodal encoder" for name, first in by_input.items()}
    for name in sorted(_encoder_parts(built_by, settings, set(by_input)) - set(encoders)):
        encoders[name] = f"only multimodal encoders build `{name}`"
    return encoders, (_parts(built_by, processors) if processors else frozenset())


def _encoders_by_input(graph: CallGraph, settings: Settings) -> Dict[str, str]:
    """The names of the project's classes whose `forward` takes images or audio first (`ENCODER_INPUTS`),
    with that input; not a language model's (`runs_per_step_in_any_case`)."""
    return {
        function.class_qualname.rsplit(".", 1)[-1]: function.first_input
        for _, summary in graph.modules()
        for function in summary.functions.values()
        if function.class_qualname and settings.encoder_by_input(function.first_input)
        and not settings.runs_per_step_in_any_case(function.class_qualname.rsplit(".", 1)[-1])
    }  # type: ignore[misc]


def _encoder_parts(built_by: Dict[str, Set[str]], settings: Settings, by_input: Set[str]) -> FrozenSet[str]:
    if not settings.enabled(ENCODER):
        return frozenset()
    candidates = {  # an encoder may build a language model: that runs per step
        name: owners for name, owners in built_by.items() if not settings.runs_per_step_in_any_case(name)
    }
    encoders = {owner for owners in candidates.values() for owner in owners
                if owner in by_input or settings.per_request_class_heuristic(owner) not in (None, VAE)}
    return _parts(candidates, encoders)


def _processors(graph: CallGraph, settings: Settings) -> Set[str]:
    """The names of the project's Hugging Face processor classes (`hot-per-request-processor`)."""
    if not settings.enabled(PROCESSOR):
        return set()
    return {
        qualname.rsplit(".", 1)[-1]
        for _, summary in graph.modules()
        for qualname, cls in summary.classes.items()
        if settings.processor_heuristic(cls.bases) is not None
    }


def _parts(candidates: Dict[str, Set[str]], builders: Set[str]) -> FrozenSet[str]:
    """The classes of `candidates` (name -> the classes that build it) that only `builders`, or other such
    classes, build."""
    parts: Set[str] = set()
    changed = True
    while changed:  # a part of a part (a block's feed-forward) is found once its builder is
        changed = False
        for name, owners in candidates.items():
            if name not in parts and all(owner in builders or owner in parts for owner in owners):
                parts.add(name)
                changed = True
    return frozenset(parts)


def _builders(graph: CallGraph) -> Dict[str, Set[str]]:
    """Class name -> the names of the classes whose methods call its constructor (`_OUTSIDE_A_CLASS` for
    other callers), over the classes the project defines."""
    classes = {qualname.rsplit(".", 1)[-1] for _, summary in graph.modules() for qualname in summary.classes}
    builders: Dict[str, Set[str]] = defaultdict(set)
    for _, summary in graph.modules():
        for call in summary.calls:
            if call.kind is CallKind.TABLE or call.name not in classes:
                continue  # any call of the name may build it: `C()`, `mod.C()`, `pkg.mod.C()`, `self.C()`
            caller = summary.functions.get(call.caller)
            owner = caller.class_qualname if caller is not None else None
            builders[call.name].add(owner.rsplit(".", 1)[-1] if owner else _OUTSIDE_A_CLASS)
    return builders

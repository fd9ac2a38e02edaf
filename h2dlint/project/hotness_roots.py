"""The roots that heat spreads from (`hotness.propagate`): the functions hot of themselves (marked `# h2dlint: hot`,
named as per-step or per-request code, in a multimodal encoder's class or one only encoders build, custom ops that
something calls), and the heat that a call in a loop gives what it calls (`loop_root`). `marked_heat` and
`class_name_of` serve the cold functions of `hotness` too.
"""

from __future__ import annotations

from typing import AbstractSet, Iterator, Mapping, Optional, Tuple

from h2dlint.checker.call_graph import CallGraph, ModuleGraph
from h2dlint.facts.heat import HERE, PER_REQUEST, PER_STEP, Heat, Key
from h2dlint.facts.heuristic_levels import VAE
from h2dlint.facts.settings import PROCESSOR, Settings
from h2dlint.facts.summary import MODULE, CallRef, FunctionInfo, LoopKind, Marker, ModuleSummary
from h2dlint.project.encoder_parts import ENCODER, class_parts

# Where a serving engine takes a request in (`hot-name-new-request`), and the heuristic that keeps the D2H rules
# quiet in what only that reaches.
ARRIVAL, QUIET_ON_ARRIVAL = "hot-name-new-request", "cold-sync-on-request-arrival"


def named_roots(graph: CallGraph, settings: Settings) -> Iterator[Tuple[Key, Heat]]:
    parts, processing = class_parts(graph, settings)
    called = _called_names(graph)
    for module, summary in graph.modules():
        for qualname, function in summary.functions.items():
            root = _hot_root(function, summary, module, settings, parts, called, processing)
            if root is not None:
                yield (module, qualname), root


def _called_names(graph: CallGraph) -> Optional[AbstractSet[str]]:
    """The last names of every call of the project (`torch.ops.vllm.lora_shrink(...)`: "lora_shrink"); None for
    one file reasoned about alone, which cannot see the calls of other files."""
    if isinstance(graph, ModuleGraph):
        return None
    return frozenset(name for _, summary in graph.modules() for name in summary.called_names)


def _hot_root(
    function: FunctionInfo,
    summary: ModuleSummary,
    module: str,
    settings: Settings,
    parts: Mapping[str, str],
    called: Optional[AbstractSet[str]] = None,
    processing: AbstractSet[str] = frozenset(),
) -> Optional[Heat]:
    """The heat a function has of itself: a marker, a per-step name, a custom-op registration."""
    qualname = function.qualname
    marked = marked_heat(function, summary, module, Marker.HOT, settings)
    if marked is not None:
        return marked
    by_name = settings.hot_name_heuristic(function.name, class_name_of(function))
    if by_name is not None:
        processor = _processor_heuristic(function, summary, settings, processing)
        if processor is not None:
            return _arrival_root(function, module, settings, processor)
        return _named_root(function, module, settings, by_name, parts)
    if function.custom_op is not None and settings.enabled("hot-custom-op") and _op_called(function, called):
        origin = f"`{HERE}{qualname}` is a torch custom op ({function.custom_op}), which forward passes call"
        return _hot(origin, "a custom op", module, "hot-custom-op")
    return None


def _op_called(function: FunctionInfo, called: Optional[AbstractSet[str]]) -> bool:
    """Whether something in the project calls the custom op `function` by its name without leading underscores,
    the name such ops are registered under (`fused_add(...)`; vLLM registers `_lora_shrink` as `lora_shrink`
    and calls `torch.ops.vllm.lora_shrink(...)`): an op nothing calls so is not known to run, and a direct
    call of `_lora_shrink` gives its heat through the call graph. One file alone (`called` None) keeps them."""
    return called is None or function.name.lstrip("_") in called


def _named_root(
    function: FunctionInfo, module: str, settings: Settings, heuristic: str, parts: Mapping[str, str]
) -> Heat:
    qualname = function.qualname
    class_name = class_name_of(function)
    by_name = settings.is_per_request_name(function.name, class_name)
    by_class = None if by_name else settings.per_request_class_heuristic(class_name)
    part = not by_name and by_class is None and class_name in parts
    if by_name or by_class is not None or part:
        origin = f"`{HERE}{qualname}` runs once per request"
        if by_class is not None:
            origin, heuristic = f"{origin} ({_CLASS_KINDS.get(by_class, _ENCODER_KIND)})", by_class
        elif part:
            origin, heuristic = f"{origin} ({parts[class_name]})", ENCODER  # type: ignore[index]
        loops = PER_REQUEST if settings.loops_repeat_per_request(function.name, class_name) else PER_STEP
        callees = PER_REQUEST if settings.loops_taken_for_steps(function.name, class_name) else None
        on_arrival = heuristic == ARRIVAL and settings.enabled(QUIET_ON_ARRIVAL)
        return Heat(
            True, origin, "per request", module=module, level=PER_REQUEST, heuristic=heuristic, loop_level=loops,
            callee_loop_level=callees, on_arrival=on_arrival,
        )
    return _hot(f"`{HERE}{qualname}` runs per step", "per step", module, heuristic)


# What a class that a per-request class heuristic names is, as a message says it.
_ENCODER_KIND = "a multimodal encoder or projector"
_CLASS_KINDS = {VAE: "a diffusion pipeline's VAE or safety checker"}


def _processor_heuristic(
    function: FunctionInfo, summary: ModuleSummary, settings: Settings, processing: AbstractSet[str]
) -> Optional[str]:
    """`hot-per-request-processor` for a method of a Hugging Face processor, or of a class only they build."""
    cls = summary.classes.get(function.class_qualname or "")
    if cls is None:
        return None
    if class_name_of(function) in processing:
        return PROCESSOR
    return settings.processor_heuristic(cls.bases)


def _arrival_root(function: FunctionInfo, module: str, settings: Settings, heuristic: str) -> Heat:
    """A per-step name of a Hugging Face processor: it runs once per request, as the request arrives."""
    origin = f"`{HERE}{function.qualname}` runs once per request, as it arrives (a Hugging Face processor)"
    return Heat(
        True, origin, "per request", module=module, level=PER_REQUEST, heuristic=heuristic, loop_level=PER_REQUEST,
        on_arrival=settings.enabled(QUIET_ON_ARRIVAL),
    )


def _hot(origin: str, tag: str, module: str, heuristic: str) -> Heat:
    return Heat(True, origin, tag, module=module, heuristic=heuristic)


def loop_root(module: str, call: CallRef, level: str = PER_STEP, how_often: str = "") -> Heat:
    """The heat a call in a loop gives the functions it reaches; `level` is how often the caller's loops
    repeat, and `how_often` says so where the caller's name does not ("(per request)")."""
    where = "module level" if call.caller == MODULE else f"`{HERE}{call.caller}`"
    kind, heuristic = _loop_kind(call)
    loop = f"in a {kind.value} at line {call.loop_line} of {where}{how_often}"
    return Heat(True, f"called {loop}", loop, module=module, level=level, heuristic=heuristic, loop_level=level)


def _loop_kind(call: CallRef) -> Tuple[LoopKind, str]:
    """The kind of loop a call is made in, as a message names it (a comprehension is a loop there), and the
    heuristic that makes what it calls hot."""
    kind = call.loop_kind if call.loop_kind in _CALLED_IN else LoopKind.LOOP
    return kind, _CALLED_IN.get(kind, "hot-called-in-loop")


# The loops a message names by their kind, and the heuristic that makes what they call hot where it is not
# `hot-called-in-loop`.
_CALLED_IN = {
    LoopKind.STEPS: "hot-denoising-loop", LoopKind.PER_REQUEST: "hot-called-in-loop",
    LoopKind.REQUESTS: "hot-per-request-loop-over-requests", LoopKind.SERVICE: "hot-service-loop",
}


def marked_heat(
    function: FunctionInfo, summary: ModuleSummary, module: str, marker: Marker, settings: Settings
) -> Optional[Heat]:
    """The heat that `# h2dlint: hot|cold` (`marker`) on the function, or else on its class, gives it, unless
    that marker's heuristic is switched off."""
    heuristic = f"{marker.value}-marker"
    if not settings.enabled(heuristic):
        return None
    cls = summary.classes.get(function.class_qualname or "")
    if function.marker is marker:
        origin = f"`{HERE}{function.qualname}` is marked `# h2dlint: {marker.value}`"
    elif cls is not None and cls.marker is marker:
        origin = f"class `{HERE}{cls.qualname}` is marked `# h2dlint: {marker.value}`"
    else:
        return None
    return Heat(marker is Marker.HOT, origin, f"marked {marker.value}", module=module, heuristic=heuristic)


def class_name_of(function: FunctionInfo) -> Optional[str]:
    """The name of the class a method is defined in (`Outer.Inner.m` -> `Inner`), None for other functions."""
    return function.class_qualname.rsplit(".", 1)[-1] if function.class_qualname else None

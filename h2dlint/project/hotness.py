"""The hot/cold model: which code runs per step or per request, and why.

A function is **cold** (one-time) when it is marked `# h2dlint: cold`, sits in a class so marked, has a
one-time name (`__init__`, weight loading, buffer creation, capture, warmup; see `Settings`), caches its
results (`@functools.lru_cache`, `@cache`, `@cached_property`: the body runs once per key), is compiled by
`@torch.compile` (its tensors are built inside the compiled graph, not copied per call), is nested in a
cold function, or is only called from one-time code (module level, cold functions, one-time guards; public
per-step names excepted, see `_spread_cold_to_callees`). Cold wins: nothing in a cold function is reported,
and hotness does not flow into it.

A function is **hot** when it is marked `# h2dlint: hot` (or its class is), has a per-step entry-point
name, is registered as a torch custom op (`@torch.library.custom_op`, `direct_register_custom_op(op_func=f)`:
models call those from their forward passes), is called from a hot function (`self.m()`, `cls.m()`,
`super().m()`, `Cls.m()`, or a plain `f()` resolving to a known function), is called in a loop, or is nested
in a hot function. Hotness propagates along calls transitively; the shortest chain is kept, so messages can
name it.

How often hot code runs (`Heat.level`): per step, unless a root says per request (a per-request name, a
serving engine's multimodal encoder, a memo's miss, a branch taken only with images; `facts.heuristic_levels`).
Per-step roots spread first, so code that both a step and a request reach runs per step; but a per-step spread
stops at a per-request entry point (`get_image_feature`, `embed_multimodal`), which per-step code calls only
for the requests that bring images, and which spreads its own level.

A site is hot when it is in a loop or comprehension body, or in a hot function, and not cold. A site that
runs under CUDA-graph capture (inside a `with torch.cuda.graph(...)` block, or in a function of the module
such a block calls, transitively: `with_capture_marks`) is capture, and HTD106 reports it instead. One under
`if self._x is None:` or `if not hasattr(self, ...)` is a cached one-time build: both are cold, and calls
made there spread no heat.

Each rule above is a heuristic with an id, a rationale and its census evidence in `h2dlint.facts.heuristics`
(guards, loops and site markers are applied by the walk, `h2dlint.checker.walk`): `Heat.heuristic` names the
root's, findings and `explain` carry it, and `disable-heuristics` switches any of them off.

The propagation works on any `CallGraph`: `ModuleGraph` reasons about one module alone (what a single file
shows); `h2dlint.project.index.ProjectGraph` reasons across the files of a project.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import AbstractSet, Callable, Deque, Dict, Iterator, List, Optional, Tuple

from h2dlint.checker.call_graph import CallGraph, ModuleGraph
from h2dlint.facts.heat import HERE, PER_REQUEST, PER_STEP, Heat, Key, module_prefix
from h2dlint.facts.heuristic_modules import UNREPORTED_BECAUSE
from h2dlint.facts.settings import Settings
from h2dlint.facts.summary import MODULE, CallRef, FunctionInfo, LoopKind, Marker, ModuleSummary
from h2dlint.project.encoder_parts import ENCODER, encoder_parts


def propagate(graph: CallGraph, settings: Settings) -> Dict[Key, Heat]:
    """The heat of every function that is hot or cold; neutral functions are absent."""
    heat: Dict[Key, Heat] = {}
    for module, summary in graph.modules():
        by_module = _cold_module(graph.name_parts(module), module, settings)
        for qualname, function in summary.functions.items():
            cold = by_module(qualname) if by_module is not None else _cold_heat(function, summary, module, settings)
            if cold is not None:
                heat[(module, qualname)] = cold
    _spread_cold_to_callees(graph, heat, settings)
    named, loops = _hot_roots(graph, settings, heat)
    _spread_roots(graph, heat, named, named + loops)
    _known_without_lone_loops(graph, heat, loops)
    return heat


def _spread_roots(graph: CallGraph, heat: Dict[Key, Heat], named: _Roots, roots: _Roots) -> None:
    """Give out the heat of `roots`, of which `named` are hot for a reason of their own. Per-step roots spread
    first: code that both a step and a request reach runs per step. A per-request entry point
    (`get_image_feature`) stops them: per-step code calls it only for the request that needs it."""
    entry_points = {key for key, root in named if root.level == PER_REQUEST}
    for level in (PER_STEP, PER_REQUEST):
        _spread_hot(graph, heat, [(key, root) for key, root in roots if root.level == level], entry_points)
    _spread_hot(graph, heat, _per_request_call_roots(graph, heat))


def _per_request_call_roots(graph: CallGraph, heat: Dict[Key, Heat]) -> List[Tuple[Key, Heat]]:
    """What hot code calls on the miss of a memo keyed on a runtime value (once per new key), or only with
    images, audio or video (in the prefill of the requests that bring them): per request."""
    roots = []
    for caller, found in list(heat.items()):
        if not found.hot:
            continue
        misses, branches = graph.miss_callees(caller), graph.branch_callees(caller)
        if misses:
            origin = f"called on each cache miss in `{HERE}{caller[1]}`"
            root = Heat(True, origin, "on each cache miss", module=caller[0], level=PER_REQUEST,
                        loop_alone=found.loop_alone)
            roots.extend((callee, root) for callee in misses)
        if branches:
            origin = f"called only with images, audio or video in `{HERE}{caller[1]}`"
            root = Heat(True, origin, "with images, audio or video", module=caller[0], level=PER_REQUEST,
                        heuristic="hot-per-request-multimodal-branch", loop_level=PER_REQUEST,
                        loop_alone=found.loop_alone)
            roots.extend((callee, root) for callee in branches)
    return roots


def _spread_hot(
    graph: CallGraph, heat: Dict[Key, Heat], roots: List[Tuple[Key, Heat]], stops: AbstractSet[Key] = frozenset()
) -> None:
    """Give each root's heat to what it calls, but to no function of `stops` (which are roots of their own)."""
    queue: Deque[Key] = deque()
    for key, root in roots:
        if key not in heat:
            heat[key] = root
            queue.append(key)
    while queue:
        caller = queue.popleft()
        for callee in graph.callees(caller):
            if callee not in heat and callee not in stops:
                heat[callee] = heat[caller].called_from(caller)
                queue.append(callee)


_Roots = List[Tuple[Key, Heat]]

# Where a serving engine takes a request in (`hot-name-new-request`), and the heuristic that keeps the D2H rules
# quiet in what only that reaches.
ARRIVAL, QUIET_ON_ARRIVAL = "hot-name-new-request", "cold-sync-on-request-arrival"


def function_heat(summary: ModuleSummary, settings: Settings) -> Dict[str, Heat]:
    """The heat of every function of one module, reasoning about that module alone, by qualname."""
    return {qualname: h for (_, qualname), h in propagate(ModuleGraph(summary), settings).items()}


def _cold_module(
    parts: Tuple[str, ...], module: str, settings: Settings
) -> Optional[Callable[[str], Optional[Heat]]]:
    """The heat of each function (by qualname) of a module that a module heuristic makes cold by the `parts` of
    its name (`facts.heuristic_modules`), marks aside; None for any other module. Asked once per module."""
    heuristic = settings.cold_module_heuristic(parts)
    if heuristic is None:
        return None
    why, tag = UNREPORTED_BECAUSE[heuristic], heuristic.replace("cold-module-", "")
    return lambda qualname: _cold(f"`{HERE}{qualname}` {why}", tag, module, heuristic)


def _cold_heat(function: FunctionInfo, summary: ModuleSummary, module: str, settings: Settings) -> Optional[Heat]:
    qualname = function.qualname
    marked = _marked(function, summary, module, Marker.COLD) if settings.enabled("cold-marker") else None
    if marked is not None:
        return marked
    by_name = settings.cold_name_heuristic(function.name, _class_name(function))
    if by_name is not None:
        return _cold(f"`{HERE}{qualname}` runs once (one-time setup)", "one-time", module, by_name)
    if function.cache_decorator is not None and settings.enabled("cold-decorator-cache"):
        origin = f"`{HERE}{qualname}` is cached by `@{function.cache_decorator}`"
        return _cold(origin, "cached", module, "cold-decorator-cache")
    if function.compiled_by is not None and settings.enabled("cold-decorator-compile"):
        origin = f"`{HERE}{qualname}` is compiled by `@{function.compiled_by}`, which builds its tensors in the graph"
        return _cold(origin, "compiled", module, "cold-decorator-compile")
    if function.error_path and settings.enabled("cold-always-raises"):
        return _cold(f"`{HERE}{qualname}` always ends by raising (an error path)", "error path", module,
                     "cold-always-raises")
    parent = summary.functions.get(function.parent or "")
    if parent is not None and settings.enabled("cold-nested-in-cold"):
        return _cold_heat(parent, summary, module, settings)
    return None


def _marked(function: FunctionInfo, summary: ModuleSummary, module: str, marker: Marker) -> Optional[Heat]:
    """The heat that `# h2dlint: hot|cold` (`marker`) on the function, or else on its class, gives it."""
    cls = summary.classes.get(function.class_qualname or "")
    if function.marker is marker:
        origin = f"`{HERE}{function.qualname}` is marked `# h2dlint: {marker.value}`"
    elif cls is not None and cls.marker is marker:
        origin = f"class `{HERE}{cls.qualname}` is marked `# h2dlint: {marker.value}`"
    else:
        return None
    heuristic = f"{marker.value}-marker"
    return Heat(marker is Marker.HOT, origin, f"marked {marker.value}", module=module, heuristic=heuristic)


def _cold(origin: str, tag: str, module: str, heuristic: str) -> Heat:
    return Heat(False, origin, tag, module=module, heuristic=heuristic)


def _spread_cold_to_callees(graph: CallGraph, heat: Dict[Key, Heat], settings: Settings) -> None:
    """Make cold the functions that only one-time code calls: every call that reaches them is made at module
    level, in a cold function, or under a one-time guard. Not those marked `# h2dlint: hot`, nor public entry
    points with a per-step name (`forward`, `replay`): the engine's loop or `nn.Module.__call__` calls them
    where no call is in sight, and warmup or capture calling them too says nothing. A private one
    (`_build_plan`) is called only where its callers can be seen."""
    if not settings.enabled("cold-only-called-once"):
        return
    callers = graph.callers()
    callees_of: Dict[Key, List[Key]] = {}
    for callee, calls in callers.items():
        for caller, _ in calls:
            callees_of.setdefault(caller, []).append(callee)
    queue: Deque[Key] = deque(key for key in callers if _only_called_once(callers[key], heat))
    while queue:
        key = queue.popleft()
        if key in heat or _keeps_its_heat(graph, key, settings):
            continue
        heat[key] = _cold_by_callers(key, callers[key], heat)
        queue.extend(c for c in callees_of.get(key, []) if c not in heat and _only_called_once(callers[c], heat))


def _only_called_once(calls: List[Tuple[Key, bool]], heat: Dict[Key, Heat]) -> bool:
    return bool(calls) and all(one_time or _runs_once(caller, heat) for caller, one_time in calls)


def _runs_once(caller: Key, heat: Dict[Key, Heat]) -> bool:
    return caller[1] == MODULE or (caller in heat and not heat[caller].hot)


def _cold_by_callers(key: Key, calls: List[Tuple[Key, bool]], heat: Dict[Key, Heat]) -> Heat:
    (module, qualname), (caller, one_time) = key, calls[0]
    name = f"{module_prefix(caller[0], module)}{caller[1]}"
    if one_time:
        why = f"under a one-time guard in `{name}`"
    elif caller[1] == MODULE:
        why = f"at module level of `{caller[0]}`" if caller[0] != module else "at module level"
    else:
        why = f"from `{name}`, which is cold"
    more = f" (and {len(calls) - 1} more such calls)" if len(calls) > 1 else ""
    origin = f"`{HERE}{qualname}` is only called from one-time code: {why}{more}"
    return _cold(origin, "only called from one-time code", module, "cold-only-called-once")


def _keeps_its_heat(graph: CallGraph, key: Key, settings: Settings) -> bool:
    """Marked hot, or a public entry point with a per-step name."""
    summary = graph.summary(key[0])
    function = summary.functions.get(key[1]) if summary is not None else None
    if summary is None or function is None:
        return False
    cls = summary.classes.get(function.class_qualname or "")
    marked = function.marker is Marker.HOT or (cls is not None and cls.marker is Marker.HOT)
    if marked and settings.enabled("hot-marker"):
        return True
    is_public = not function.name.startswith("_") or function.name.startswith("__")
    keeps = is_public and settings.enabled("hot-public-entry-point")
    return keeps and settings.is_hot_name(function.name, _class_name(function))


def _class_name(function: FunctionInfo) -> Optional[str]:
    """The name of the class a method is defined in (`Outer.Inner.m` -> `Inner`), None for other functions."""
    return function.class_qualname.rsplit(".", 1)[-1] if function.class_qualname else None


def _hot_roots(graph: CallGraph, settings: Settings, cold: Dict[Key, Heat]) -> Tuple[_Roots, _Roots]:
    """Functions hot for a reason of their own, and the functions called in loops. A loop in a per-step root
    adds nothing (what it calls is called from that root); a loop in a per-request root repeats as often as
    the root says its loops do (`Heat.loop_level`). A loop in code that no named root reaches is `loop_alone`."""
    on_miss = _only_called_on_a_miss(graph)
    named = [(key, root) for key, root in _named_roots(graph, settings) if key not in cold and key not in on_miss]
    # As heat is given out in this order: a loop in a function already hot per step adds nothing.
    taken = {key for key, root in named if root.level == PER_STEP}
    # A per-request entry point (`embed_multimodal`) called in a loop keeps its own level, as it does when
    # per-step code calls it (`_spread_roots`): the loop calls it only for the items that need it.
    entry_points = {key for key, root in named if root.level == PER_REQUEST}
    loop_levels = {key: root.loop_level for key, root in named}
    on_arrival = {key for key, root in named if root.on_arrival}
    loops: List[Tuple[Key, Heat]] = []
    if not settings.enabled("hot-called-in-loop"):
        return named, loops
    reached = _reached_by(graph, cold, named)
    for module, call, targets in graph.loop_calls():
        if (module, call.caller) in cold or (module, call.caller) in taken:
            continue
        caller = (module, call.caller)
        if call.loop_over_requests:
            root = loop_root(module, call, PER_REQUEST)
        elif caller in loop_levels:
            root = loop_root(module, call, loop_levels[caller])
        elif caller in reached and reached[caller].loop_level == PER_REQUEST:
            root = loop_root(module, call, PER_REQUEST, f" ({reached[caller].tag})")
        else:
            alone = caller not in reached and not call.in_service_loop
            root = replace(loop_root(module, call), loop_alone=alone)
        targets = [callee for callee in targets if callee not in entry_points]
        root = replace(root, on_arrival=True) if caller in on_arrival else root
        loops.extend((callee, root) for callee in targets)
        taken.update(targets)
    return named, loops


def _reached_by(graph: CallGraph, cold: Dict[Key, Heat], roots: _Roots) -> Dict[Key, Heat]:
    """The functions that `roots` alone make hot, with the heat they give. Those that only per-request code
    reaches, such as a processor's `tokenize_with_images` (`hot-per-request-loop`), loop over one request's
    items: without this, a call in such a loop would claim per step."""
    trial = dict(cold)
    _spread_roots(graph, trial, roots, roots)
    return {key: found for key, found in trial.items() if found.hot}


def _known_without_lone_loops(graph: CallGraph, heat: Dict[Key, Heat], loops: _Roots) -> None:
    """Clear `loop_alone` from the heat of what a loop of known code calls, and of whatever heat not so marked
    reaches (through calls, and calls made on a memo's miss or only with images): that heat is known, whichever
    chain `heat` shows (per-step chains are given out first). The marked heat is spread already, so this walks
    from what is known instead of spreading the roots again."""
    if not any(root.loop_alone for _, root in loops):
        return
    queue: Deque[Key] = deque(key for key, found in heat.items() if found.hot and not found.loop_alone)
    queue.extend(key for key, root in loops if not root.loop_alone and _clear_mark(heat, key))
    while queue:
        caller = queue.popleft()
        for callee in (*graph.callees(caller), *graph.miss_callees(caller), *graph.branch_callees(caller)):
            if _clear_mark(heat, callee):
                queue.append(callee)


def _clear_mark(heat: Dict[Key, Heat], key: Key) -> bool:
    """Clear the `loop_alone` mark of `key`'s heat; whether it had one."""
    found = heat.get(key)
    if found is None or not found.loop_alone:
        return False
    heat[key] = replace(found, loop_alone=False)
    return True


def _only_called_on_a_miss(graph: CallGraph) -> AbstractSet[Key]:
    """Private functions called only on misses of memos keyed on runtime values: their per-step names say
    less than their callers do (the private `_build_plan` is called where its callers can be seen)."""
    found = set()
    for key, calls in graph.callers().items():
        function = graph.function(key)
        private = function is not None and function.name.startswith("_") and not function.name.startswith("__")
        if private and all(key in graph.miss_callees(caller) for caller, _ in calls):
            found.add(key)
    return found


def _named_roots(graph: CallGraph, settings: Settings) -> Iterator[Tuple[Key, Heat]]:
    parts = encoder_parts(graph, settings)
    called = _called_names(graph)
    for module, summary in graph.modules():
        for qualname, function in summary.functions.items():
            root = _hot_root(function, summary, module, settings, parts, called)
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
    parts: AbstractSet[str],
    called: Optional[AbstractSet[str]] = None,
) -> Optional[Heat]:
    """The heat a function has of itself: a marker, a per-step name, a custom-op registration."""
    qualname = function.qualname
    marked = _marked(function, summary, module, Marker.HOT) if settings.enabled("hot-marker") else None
    if marked is not None:
        return marked
    by_name = settings.hot_name_heuristic(function.name, _class_name(function))
    if by_name is not None:
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
    function: FunctionInfo, module: str, settings: Settings, heuristic: str, parts: AbstractSet[str]
) -> Heat:
    qualname = function.qualname
    class_name = _class_name(function)
    by_name = settings.is_per_request_name(function.name, class_name)
    by_class = None if by_name else settings.per_request_class_heuristic(class_name)
    part = not by_name and by_class is None and class_name in parts
    if by_name or by_class is not None or part:
        origin = f"`{HERE}{qualname}` runs once per request"
        if by_class is not None:
            origin, heuristic = f"{origin} (a multimodal encoder or projector)", by_class
        elif part:
            origin, heuristic = f"{origin} (only multimodal encoders build `{class_name}`)", ENCODER
        loops = PER_REQUEST if settings.loops_repeat_per_request(function.name, class_name) else PER_STEP
        on_arrival = heuristic == ARRIVAL and settings.enabled(QUIET_ON_ARRIVAL)
        return Heat(
            True, origin, "per request", module=module, level=PER_REQUEST, heuristic=heuristic, loop_level=loops,
            on_arrival=on_arrival,
        )
    return _hot(f"`{HERE}{qualname}` runs per step", "per step", module, heuristic)


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
    """The kind of loop a call is made in, and the heuristic that makes what it calls hot."""
    if call.loop_over_requests:
        return LoopKind.REQUESTS, "hot-per-request-loop-over-requests"
    if call.in_service_loop:
        return LoopKind.SERVICE, "hot-service-loop"
    return LoopKind.LOOP, "hot-called-in-loop"

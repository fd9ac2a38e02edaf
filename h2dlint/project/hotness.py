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
shows); `h2dlint.project.index.ProjectGraph` reasons across the files of a project. The roots it spreads from
(functions hot of themselves, calls in loops) are found in `hotness_roots`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import AbstractSet, Callable, Deque, Dict, List, Optional, Set, Tuple

from h2dlint.checker.call_graph import CallGraph, ModuleGraph
from h2dlint.facts.heat import HERE, PER_REQUEST, PER_STEP, Heat, Key, module_prefix
from h2dlint.facts.heuristic_modules import UNREPORTED_BECAUSE
from h2dlint.facts.settings import Settings
from h2dlint.facts.summary import MODULE, FunctionInfo, LoopKind, Marker, ModuleSummary
from h2dlint.project.hotness_roots import class_name_of, loop_root, marked_heat, named_roots


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
    _spread_per_request_calls(graph, heat)


def _spread_per_request_calls(graph: CallGraph, heat: Dict[Key, Heat]) -> None:
    """Give out the heat of what hot code calls once per request (`_per_request_call_roots`), again for the
    functions that this reaches, which may make such calls of their own (sglang's `general_mm_embed_routine` calls
    `embed_mm_inputs` only for a batch with images, and that calls `get_embedding_and_mask` only after its early
    return without them), until it reaches none."""
    asked: Set[Key] = set()
    while True:
        callers = [key for key in heat if key not in asked]
        if not callers:
            return
        asked.update(callers)
        _spread_hot(graph, heat, _per_request_call_roots(graph, heat, callers))


def _per_request_call_roots(graph: CallGraph, heat: Dict[Key, Heat], callers: List[Key]) -> List[Tuple[Key, Heat]]:
    """What the hot ones of `callers` call on the miss of a memo keyed on a runtime value (once per new key), or
    only with images, audio or video (in the prefill of the requests that bring them): per request."""
    roots = []
    for caller in callers:
        found = heat[caller]
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
    marked = marked_heat(function, summary, module, Marker.COLD, settings)
    if marked is not None:
        return marked
    by_name = settings.cold_name_heuristic(function.name, class_name_of(function))
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
    return keeps and settings.is_hot_name(function.name, class_name_of(function))


def _hot_roots(graph: CallGraph, settings: Settings, cold: Dict[Key, Heat]) -> Tuple[_Roots, _Roots]:
    """Functions hot for a reason of their own, and the functions called in loops. A loop in a per-step root
    adds nothing (what it calls is called from that root); a loop in a per-request root repeats as often as
    the root says its loops do (`Heat.loop_level`). A loop in code that no named root reaches is `loop_alone`."""
    on_miss = _only_called_on_a_miss(graph)
    named = [(key, root) for key, root in named_roots(graph, settings) if key not in cold and key not in on_miss]
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
        if call.loop_kind in _LOOP_LEVELS:
            root = loop_root(module, call, _LOOP_LEVELS[call.loop_kind])
        elif caller in loop_levels:
            root = loop_root(module, call, loop_levels[caller])
        elif caller in reached and reached[caller].loop_level == PER_REQUEST:
            root = loop_root(module, call, PER_REQUEST, f" ({reached[caller].tag})")
        else:
            alone = caller not in reached and call.loop_kind is not LoopKind.SERVICE
            root = replace(loop_root(module, call), loop_alone=alone)
        # A loop that calls the function it is in walks a tree (checkers, modules): it runs as often as the
        # outermost call, which the function's own callers decide.
        targets = [callee for callee in targets if callee not in entry_points and callee != caller]
        root = replace(root, on_arrival=True) if caller in on_arrival else root
        loops.extend((callee, root) for callee in targets)
        taken.update(targets)
    return named, loops


# How often a loop of this kind runs what it calls, whatever code holds it: a denoising loop per step; a loop over
# requests, and a pipeline's loop beside its denoising loop (only a `__call__` run per request has one), per request.
_LOOP_LEVELS = {LoopKind.STEPS: PER_STEP, LoopKind.REQUESTS: PER_REQUEST, LoopKind.PER_REQUEST: PER_REQUEST}


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

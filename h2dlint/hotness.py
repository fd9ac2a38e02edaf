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

A site is hot when it is in a loop or comprehension body, or in a hot function, and not cold. A site that
runs under CUDA-graph capture (inside a `with torch.cuda.graph(...)` block, or in a function of the module
such a block calls, transitively: `mark_captured`) is capture, and HTD106 reports it instead. One under
`if self._x is None:` or `if not hasattr(self, ...)` is a cached one-time build: both are cold, and calls
made there spread no heat.

The propagation works on any `CallGraph`: `ModuleGraph` reasons about one module alone (what a single file
shows); `h2dlint.index.ProjectGraph` reasons across the files of a project.
"""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import AbstractSet, Deque, Dict, Iterable, Iterator, List, Optional, Tuple

from h2dlint.settings import Settings
from h2dlint.summary import MODULE, CallRef, FunctionInfo, ModuleSummary, Site

Key = Tuple[str, str]  # (module, qualname); the module is "" when reasoning about one module alone

_HERE = "{module}"  # stands for the root's module in `Heat.origin`, written out only for other modules
_LONGEST_CHAIN_SHOWN = 8


@dataclass(frozen=True)
class Heat:
    """Why a function is hot or cold."""

    hot: bool
    origin: str  # the root reason: "`Batch.forward` runs per step", "called in a loop at line 9 of `run`"
    tag: str  # the root reason in brief, shown after a call chain: "per step"
    chain: Tuple[Key, ...] = ()  # callers, nearest first, leading from the root to this function
    module: str = ""  # the module of the root

    @property
    def reason(self) -> str:
        return self.reason_in(self.module)

    def reason_in(self, module: str) -> str:
        """The reason, naming functions of modules other than `module` with their module."""
        if not self.chain:
            return self.origin.replace(_HERE, _prefix(self.module, module))
        path = chain_text(f"{_prefix(caller[0], module)}{caller[1]}" for caller in self.chain)
        return f"called from {path} ({self.tag.replace(_HERE, _prefix(self.module, module))})"

    def called_from(self, caller: Key) -> "Heat":
        return Heat(True, self.origin, self.tag, (caller,) + self.chain, self.module)


def chain_text(names: Iterable[str]) -> str:
    """Callers joined nearest first; a chain too long to read keeps its ends (generated code nests deeply)."""
    shown = [f"`{name}`" for name in names]
    if len(shown) > _LONGEST_CHAIN_SHOWN:
        shown = shown[:3] + [f"… {len(shown) - 4} more …"] + shown[-1:]
    return " ← ".join(shown)


def _prefix(of: str, seen_from: str) -> str:
    return "" if of == seen_from else f"{of}."


class CallGraph:
    """What propagation needs to know about functions and the calls between them."""

    def modules(self) -> Iterable[Tuple[str, ModuleSummary]]:
        """Every module, by name, with its summary."""
        raise NotImplementedError

    def loop_calls(self) -> Iterable[Tuple[str, CallRef, List[Key]]]:
        """Calls made in a loop (and not in a one-time guard), with their module and the functions they reach."""
        raise NotImplementedError

    def callees(self, caller: Key) -> List[Key]:
        raise NotImplementedError

    def summary(self, module: str) -> Optional[ModuleSummary]:
        raise NotImplementedError

    def callers(self) -> Dict[Key, List[Tuple[Key, bool]]]:
        """Every function some call reaches -> (the calling function, whether the call is made under a one-time
        guard) for each such call; a call at module level has the caller `(module, MODULE)`."""
        raise NotImplementedError


def propagate(graph: CallGraph, settings: Settings) -> Dict[Key, Heat]:
    """The heat of every function that is hot or cold; neutral functions are absent."""
    heat: Dict[Key, Heat] = {}
    for module, summary in graph.modules():
        for qualname, function in summary.functions.items():
            cold = _cold_heat(function, summary, module, settings)
            if cold is not None:
                heat[(module, qualname)] = cold
    _spread_cold_to_callees(graph, heat, settings)
    queue: Deque[Key] = deque()
    for key, root in _hot_roots(graph, settings, heat):
        if key not in heat:
            heat[key] = root
            queue.append(key)
    while queue:
        caller = queue.popleft()
        for callee in graph.callees(caller):
            if callee not in heat:
                heat[callee] = heat[caller].called_from(caller)
                queue.append(callee)
    return heat


# What propagation never reads: where functions and calls are (it names the line only of a loop call), and
# the sites, which decide only their own module's findings. Any other field, present or added later, counts.
_NOT_READ = frozenset(
    {(ModuleSummary, "sites"), (FunctionInfo, "line"), (FunctionInfo, "end_line"), (CallRef, "line"),
     (CallRef, "capture_line")}
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
        was, now = _loop_root(module, before), _loop_root(module, after)
        if moved.setdefault(was.tag, now) != now:
            return None  # two loops that shared a line no longer do: which one a message names may change
    return {tag: root for tag, root in moved.items() if root.tag != tag}


def with_moved_loops(heat: Heat, moved: Dict[str, MovedLoops]) -> Heat:
    """`heat` after edits that moved loop roots, by module (see `moved_loops`)."""
    root = moved.get(heat.module, {}).get(heat.tag)
    return heat if root is None else Heat(heat.hot, root.origin, root.tag, heat.chain, heat.module)


def _loop_calls(summary: ModuleSummary, names: AbstractSet[str]) -> List[CallRef]:
    return [c for c in summary.calls if c.name in names and c.loop_line is not None]


def _hotness_view(summary: ModuleSummary, names: AbstractSet[str]) -> object:
    """What propagation reads of `summary`, with the lines of loop calls left to `moved_loops`."""
    calls = [replace(c, loop_line=None if c.loop_line is None else 0) for c in summary.calls if c.name in names]
    return _comparable(replace(summary, calls=calls))


def _comparable(value: object) -> object:
    """`value` as nested tuples, minus what propagation never reads; dicts keep their order, which decides
    the order of propagation (and so which of two equally short call chains a message names)."""
    if isinstance(value, _ATOMS):
        return value
    if isinstance(value, dict):
        return tuple((key, _comparable(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_comparable(item) for item in value)
    if is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        return (kind.__name__,) + tuple(_comparable(getattr(value, name)) for name in _read_fields(kind))
    return value


_ATOMS = (str, int, float, type(None))


@functools.lru_cache(maxsize=None)
def _read_fields(kind: type) -> Tuple[str, ...]:
    return tuple(f.name for f in fields(kind) if (kind, f.name) not in _NOT_READ)


def function_heat(summary: ModuleSummary, settings: Settings) -> Dict[str, Heat]:
    """The heat of every function of one module, reasoning about that module alone, by qualname."""
    return {qualname: h for (_, qualname), h in propagate(ModuleGraph(summary), settings).items()}


def site_reason(site: Site, heat: Dict[str, Heat], module: str = "") -> Optional[str]:
    """Why `site` is hot, or None when it is cold or not known to be hot."""
    return site_reason_for(site, heat.get(site.function), module)


def site_reason_for(site: Site, owner: Optional[Heat], module: str = "") -> Optional[str]:
    """Why `site` (in `module`) is hot, given the heat of its function; None when cold or not known hot."""
    if site_cold_reason(site) is not None or (owner is not None and not owner.hot):
        return None
    if site.loop is not None:
        kind, line = site.loop
        where = f"in a {kind} at line {line}"
        return f"{where}; {owner.reason_in(module)}" if owner is not None else where
    return owner.reason_in(module) if owner is not None else None


def site_cold_reason(site: Site) -> Optional[str]:
    """Why the site itself is one-time, whatever its function's heat; None when nothing at the site says so."""
    if site.marked_cold:
        return "the site is marked `# h2dlint: cold`"
    if site.in_graph_capture:
        return f"it runs under CUDA-graph capture ({site.capture}), which HTD106 reports"
    if site.one_time:
        return "it is inside a one-time cached build (`if self._x is None:` / `if not hasattr(self, ...)`)"
    return None


def mark_captured(summary: ModuleSummary) -> None:
    """Mark the sites in functions that a `with torch.cuda.graph(...)` block calls, directly or through other
    calls of this module, as running under capture, with the chain that makes them so."""
    roots = [call for call in summary.calls if call.capture_line is not None]
    if not roots:
        return
    graph = ModuleGraph(summary)
    # function -> (callers from the one called in the block down to its caller, where that block is)
    captured: Dict[str, Tuple[Tuple[str, ...], str]] = {}
    queue: Deque[str] = deque()
    for call in roots:
        where = "module level" if call.caller == MODULE else f"`{call.caller}`"
        for _, callee in graph.resolve(call):
            if callee not in captured:
                captured[callee] = ((), f"inside `with torch.cuda.graph(...)` at line {call.capture_line} of {where}")
                queue.append(callee)
    while queue:
        caller = queue.popleft()
        chain, block = captured[caller]
        for _, callee in graph.callees(("", caller)):
            if callee not in captured:
                captured[callee] = ((caller,) + chain, block)
                queue.append(callee)
    for site in summary.sites:
        if site.capture is None and site.function in captured:
            chain, block = captured[site.function]
            callers = chain_text(chain)
            via = f" from {callers}, which is called" if chain else ""
            site.in_graph_capture, site.capture = True, f"`{site.function}` is called{via} {block}"


def _cold_heat(function: FunctionInfo, summary: ModuleSummary, module: str, settings: Settings) -> Optional[Heat]:
    qualname = function.qualname
    cls = summary.classes.get(function.class_qualname or "")
    if function.marker == "cold":
        return Heat(False, f"`{_HERE}{qualname}` is marked `# h2dlint: cold`", "marked cold", module=module)
    if cls is not None and cls.marker == "cold":
        return Heat(False, f"class `{_HERE}{cls.qualname}` is marked `# h2dlint: cold`", "marked cold", module=module)
    if settings.is_cold_name(function.name, _class_name(function)):
        return Heat(False, f"`{_HERE}{qualname}` runs once (one-time setup)", "one-time", module=module)
    if function.cache_decorator is not None:
        return Heat(False, f"`{_HERE}{qualname}` is cached by `@{function.cache_decorator}`", "cached", module=module)
    if function.compiled_by is not None:
        origin = f"`{_HERE}{qualname}` is compiled by `@{function.compiled_by}`, which builds its tensors in the graph"
        return Heat(False, origin, "compiled", module=module)
    parent = summary.functions.get(function.parent or "")
    if parent is not None:
        return _cold_heat(parent, summary, module, settings)
    return None


def _spread_cold_to_callees(graph: CallGraph, heat: Dict[Key, Heat], settings: Settings) -> None:
    """Make cold the functions that only one-time code calls: every call that reaches them is made at module
    level, in a cold function, or under a one-time guard. Not those marked `# h2dlint: hot`, nor public entry
    points with a per-step name (`forward`, `replay`): the engine's loop or `nn.Module.__call__` calls them
    where no call is in sight, and warmup or capture calling them too says nothing. A private one
    (`_build_plan`) is called only where its callers can be seen."""
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
    name = f"{_prefix(caller[0], module)}{caller[1]}"
    if one_time:
        why = f"under a one-time guard in `{name}`"
    elif caller[1] == MODULE:
        why = f"at module level of `{caller[0]}`" if caller[0] != module else "at module level"
    else:
        why = f"from `{name}`, which is cold"
    more = f" (and {len(calls) - 1} more such calls)" if len(calls) > 1 else ""
    origin = f"`{_HERE}{qualname}` is only called from one-time code: {why}{more}"
    return Heat(False, origin, "only called from one-time code", module=module)


def _keeps_its_heat(graph: CallGraph, key: Key, settings: Settings) -> bool:
    """Marked hot, or a public entry point with a per-step name."""
    summary = graph.summary(key[0])
    function = summary.functions.get(key[1]) if summary is not None else None
    if summary is None or function is None:
        return False
    cls = summary.classes.get(function.class_qualname or "")
    if function.marker == "hot" or (cls is not None and cls.marker == "hot"):
        return True
    is_public = not function.name.startswith("_") or function.name.startswith("__")
    return is_public and settings.is_hot_name(function.name, _class_name(function))


def _class_name(function: FunctionInfo) -> Optional[str]:
    """The name of the class a method is defined in (`Outer.Inner.m` -> `Inner`), None for other functions."""
    return function.class_qualname.rsplit(".", 1)[-1] if function.class_qualname else None


def _hot_roots(graph: CallGraph, settings: Settings, cold: Dict[Key, Heat]) -> Iterator[Tuple[Key, Heat]]:
    for module, summary in graph.modules():
        for qualname, function in summary.functions.items():
            key = (module, qualname)
            cls = summary.classes.get(function.class_qualname or "")
            if function.marker == "hot":
                yield key, Heat(True, f"`{_HERE}{qualname}` is marked `# h2dlint: hot`", "marked hot", module=module)
            elif cls is not None and cls.marker == "hot":
                origin = f"class `{_HERE}{cls.qualname}` is marked `# h2dlint: hot`"
                yield key, Heat(True, origin, "marked hot", module=module)
            elif settings.is_hot_name(function.name, _class_name(function)):
                yield key, Heat(True, f"`{_HERE}{qualname}` runs per step", "per step", module=module)
            elif function.custom_op is not None:
                origin = f"`{_HERE}{qualname}` is a torch custom op ({function.custom_op}), which forward passes call"
                yield key, Heat(True, origin, "a custom op", module=module)
    for module, call, targets in graph.loop_calls():
        if (module, call.caller) in cold:
            continue
        root = _loop_root(module, call)
        for callee in targets:
            yield callee, root


def _loop_root(module: str, call: CallRef) -> Heat:
    """The heat a call in a loop gives the functions it reaches."""
    where = "module level" if call.caller == MODULE else f"`{_HERE}{call.caller}`"
    loop = f"in a loop at line {call.loop_line} of {where}"
    return Heat(True, f"called {loop}", loop, module=module)


class ModuleGraph(CallGraph):
    """Calls resolved to functions of the same module, by name: what one file shows on its own."""

    def __init__(self, summary: ModuleSummary, module: str = "") -> None:
        self._module = module
        self._summary = summary
        self._functions = summary.functions
        self._classes = summary.classes
        self._calls = summary.calls
        self._top_classes = {c.qualname for c in summary.classes.values() if "." not in c.qualname}
        # Built on first use: a project graph only asks this one to resolve the calls it cannot rule out.
        self._targets: Optional[Dict[CallRef, List[Key]]] = None
        self._edges: Dict[Key, List[Key]] = {}
        self._callers: Dict[Key, List[Tuple[Key, bool]]] = {}

    def _build_edges(self) -> Dict[CallRef, List[Key]]:
        if self._targets is None:
            self._targets = {call: self.resolve(call) for call in self._calls}
            for call, targets in self._targets.items():
                if not call.one_time:
                    self._edges.setdefault((self._module, call.caller), []).extend(targets)
                for target in targets:
                    self._callers.setdefault(target, []).append(((self._module, call.caller), call.one_time))
            for function in self._functions.values():
                if function.parent is not None:
                    key = (self._module, function.parent)
                    self._edges.setdefault(key, []).append((self._module, function.qualname))
        return self._targets

    def modules(self) -> Iterable[Tuple[str, ModuleSummary]]:
        return [(self._module, self._summary)]

    def summary(self, module: str) -> Optional[ModuleSummary]:
        return self._summary if module == self._module else None

    def loop_calls(self) -> Iterable[Tuple[str, CallRef, List[Key]]]:
        targets = self._build_edges()
        return [(self._module, c, targets[c]) for c in self._calls if c.loop_line is not None and not c.one_time]

    def callees(self, caller: Key) -> List[Key]:
        self._build_edges()
        return self._edges.get(caller, [])

    def callers(self) -> Dict[Key, List[Tuple[Key, bool]]]:
        self._build_edges()
        return self._callers

    def resolve(self, call: CallRef) -> List[Key]:
        """The functions of this module that `call` may reach."""
        return [(self._module, q) for q in self._resolve(call)]

    def _resolve(self, call: CallRef) -> List[str]:
        if call.kind == "name":
            return self._resolve_plain(call.caller, call.name)
        if call.kind == "attr":
            return self.method(call.owner, call.name) if call.owner in self._top_classes else []
        if call.kind not in ("self", "super"):
            return []
        cls = self.enclosing_class(call.caller)
        if cls is None:
            return []
        if call.kind == "super":
            return [m for base in self._bases(cls) for m in self.method(base, call.name)][:1]
        return self.method(cls, call.name)

    def _resolve_plain(self, caller: str, name: str) -> List[str]:
        scope: Optional[str] = caller
        while scope is not None and scope != MODULE:
            nested = f"{scope}.<locals>.{name}"
            if nested in self._functions:
                return [nested]
            scope = self._functions[scope].parent if scope in self._functions else None
        top = self._functions.get(name)
        return [name] if top is not None and top.class_qualname is None and top.parent is None else []

    def enclosing_class(self, qualname: str) -> Optional[str]:
        function = self._functions.get(qualname)
        while function is not None:
            if function.class_qualname is not None:
                return function.class_qualname
            function = self._functions.get(function.parent or "")
        return None

    def method(self, cls: Optional[str], name: str, depth: int = 0) -> List[str]:
        """`cls.name`, or the method it inherits from a base class of this module."""
        own = f"{cls}.{name}"
        if own in self._functions:
            return [own]
        if depth > 20:  # guards against cyclic bases written by mistake
            return []
        for base in self._bases(cls or ""):
            found = self.method(base, name, depth + 1)
            if found:
                return found
        return []

    def _bases(self, cls: str) -> List[str]:
        info = self._classes.get(cls)
        if info is None:
            return []
        return [b for b in info.bases if b in self._top_classes]

"""The hot/cold model: which code runs per step or per request, and why.

A function is **cold** (one-time) when it is marked `# h2dlint: cold`, sits in a class so marked, has a
one-time name (`__init__`, weight loading, buffer creation, capture, warmup; see `Settings`), caches its
results (`@functools.lru_cache`, `@cache`, `@cached_property`: the body runs once per key), or is nested
in a cold function. Cold wins: nothing in a cold function is reported, and hotness does not flow into it.

A function is **hot** when it is marked `# h2dlint: hot` (or its class is), has a per-step entry-point
name, is called from a hot function (`self.m()`, `cls.m()`, `super().m()`, `Cls.m()`, or a plain `f()`
resolving to this module), is called in a loop, or is nested in a hot function. Hotness propagates along
calls transitively; the shortest chain is kept, so messages can name it.

A site is hot when it is in a loop or comprehension body, or in a hot function, and not cold. A site
that runs under CUDA-graph capture (inside a `with torch.cuda.graph(...)` block, or in a function such a
block calls, transitively) is cold: capture runs once, and HTD106 reports it instead (`mark_captured`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Deque, Dict, Iterator, List, Optional, Tuple

from h2dlint.settings import Settings
from h2dlint.summary import MODULE, CallRef, FunctionInfo, ModuleSummary, Site


@dataclass(frozen=True)
class Heat:
    """Why a function is hot or cold."""

    hot: bool
    origin: str  # the root reason: "`Batch.forward` runs per step", "called in a loop at line 9 of `run`"
    tag: str  # the root reason in brief, shown after a call chain: "per step"
    chain: Tuple[str, ...] = ()  # callers, nearest first, leading from the root to this function

    @property
    def reason(self) -> str:
        if not self.chain:
            return self.origin
        path = " ← ".join(f"`{caller}`" for caller in self.chain)
        return f"called from {path} ({self.tag})"

    def called_from(self, caller: str) -> "Heat":
        return Heat(True, self.origin, self.tag, (caller,) + self.chain)


def function_heat(summary: ModuleSummary, settings: Settings) -> Dict[str, Heat]:
    """The heat of every function in the module that is hot or cold; neutral functions are absent."""
    heat = {q: h for q, f in summary.functions.items() if (h := _cold_heat(f, summary, settings)) is not None}
    graph = _CallGraph(summary)
    queue: Deque[str] = deque()
    for qualname, root in _hot_roots(summary, settings, graph, heat):
        if qualname not in heat:
            heat[qualname] = root
            queue.append(qualname)
    while queue:
        caller = queue.popleft()
        for callee in graph.callees(caller):
            if callee not in heat:
                heat[callee] = heat[caller].called_from(caller)
                queue.append(callee)
    return heat


def site_reason(site: Site, heat: Dict[str, Heat]) -> Optional[str]:
    """Why `site` is hot, or None when it is cold or not known to be hot."""
    owner = heat.get(site.function)
    if site.marked_cold or site.in_graph_capture or (owner is not None and not owner.hot):
        return None
    if site.loop is not None:
        kind, line = site.loop
        where = f"in a {kind} at line {line}"
        return f"{where}; {owner.reason}" if owner is not None else where
    return owner.reason if owner is not None else None


def mark_captured(summary: ModuleSummary) -> None:
    """Mark the sites in functions that a `with torch.cuda.graph(...)` block calls, directly or through other
    calls of this module, as running under capture, with the chain that makes them so."""
    roots = [call for call in summary.calls if call.capture_line is not None]
    if not roots:
        return
    graph = _CallGraph(summary)
    # function -> (callers from the one called in the block down to its caller, where that block is)
    captured: Dict[str, Tuple[Tuple[str, ...], str]] = {}
    queue: Deque[str] = deque()
    for call in roots:
        where = "module level" if call.caller == MODULE else f"`{call.caller}`"
        for callee in graph.targets(call):
            if callee not in captured:
                captured[callee] = ((), f"inside `with torch.cuda.graph(...)` at line {call.capture_line} of {where}")
                queue.append(callee)
    while queue:
        caller = queue.popleft()
        chain, block = captured[caller]
        for callee in graph.callees(caller):
            if callee not in captured:
                captured[callee] = ((caller,) + chain, block)
                queue.append(callee)
    for site in summary.sites:
        if site.capture is None and site.function in captured:
            chain, block = captured[site.function]
            callers = " ← ".join(f"`{c}`" for c in chain)
            via = f" from {callers}, which is called" if chain else ""
            site.in_graph_capture, site.capture = True, f"`{site.function}` is called{via} {block}"


def _cold_heat(function: FunctionInfo, summary: ModuleSummary, settings: Settings) -> Optional[Heat]:
    cls = summary.classes.get(function.class_qualname or "")
    if function.marker == "cold":
        return Heat(False, f"`{function.qualname}` is marked `# h2dlint: cold`", "marked cold")
    if cls is not None and cls.marker == "cold":
        return Heat(False, f"class `{cls.qualname}` is marked `# h2dlint: cold`", "marked cold")
    if settings.is_cold_name(function.name):
        return Heat(False, f"`{function.qualname}` runs once (one-time setup)", "one-time")
    if function.cache_decorator is not None:
        return Heat(False, f"`{function.qualname}` is cached by `@{function.cache_decorator}`", "cached")
    parent = summary.functions.get(function.parent or "")
    if parent is not None:
        return _cold_heat(parent, summary, settings)
    return None


def _hot_roots(
    summary: ModuleSummary, settings: Settings, graph: "_CallGraph", cold: Dict[str, Heat]
) -> Iterator[Tuple[str, Heat]]:
    for qualname, function in summary.functions.items():
        cls = summary.classes.get(function.class_qualname or "")
        if function.marker == "hot":
            yield qualname, Heat(True, f"`{qualname}` is marked `# h2dlint: hot`", "marked hot")
        elif cls is not None and cls.marker == "hot":
            yield qualname, Heat(True, f"class `{cls.qualname}` is marked `# h2dlint: hot`", "marked hot")
        elif settings.is_hot_name(function.name):
            yield qualname, Heat(True, f"`{qualname}` runs per step", "per step")
    for call in summary.calls:
        if call.loop_line is None or call.caller in cold:
            continue
        where = "module level" if call.caller == MODULE else f"`{call.caller}`"
        loop = f"in a loop at line {call.loop_line} of {where}"
        for callee in graph.targets(call):
            yield callee, Heat(True, f"called {loop}", loop)


class _CallGraph:
    """Resolves calls to functions of the same module, by name."""

    def __init__(self, summary: ModuleSummary) -> None:
        self._functions = summary.functions
        self._classes = summary.classes
        self._top_classes = {c.qualname: c.qualname for c in summary.classes.values() if "." not in c.qualname}
        self._targets = {call: self._resolve(call) for call in summary.calls}
        self._edges: Dict[str, List[str]] = {}
        for call, targets in self._targets.items():
            self._edges.setdefault(call.caller, []).extend(targets)
        for function in summary.functions.values():
            if function.parent is not None:
                self._edges.setdefault(function.parent, []).append(function.qualname)

    def callees(self, caller: str) -> List[str]:
        return self._edges.get(caller, [])

    def targets(self, call: CallRef) -> List[str]:
        """The functions of this module that `call` may reach."""
        return self._targets[call]

    def _resolve(self, call: CallRef) -> List[str]:
        if call.kind == "name":
            return self._resolve_plain(call.caller, call.name)
        if call.kind == "attr":
            owner = self._top_classes.get(call.owner or "")
            return self._method(owner, call.name) if owner else []
        cls = self._enclosing_class(call.caller)
        if cls is None:
            return []
        if call.kind == "super":
            return [m for base in self._bases(cls) for m in self._method(base, call.name)][:1]
        return self._method(cls, call.name)

    def _resolve_plain(self, caller: str, name: str) -> List[str]:
        scope: Optional[str] = caller
        while scope is not None and scope != MODULE:
            nested = f"{scope}.<locals>.{name}"
            if nested in self._functions:
                return [nested]
            scope = self._functions[scope].parent if scope in self._functions else None
        top = self._functions.get(name)
        return [name] if top is not None and top.class_qualname is None and top.parent is None else []

    def _enclosing_class(self, qualname: str) -> Optional[str]:
        function = self._functions.get(qualname)
        while function is not None:
            if function.class_qualname is not None:
                return function.class_qualname
            function = self._functions.get(function.parent or "")
        return None

    def _method(self, cls: str, name: str, depth: int = 0) -> List[str]:
        own = f"{cls}.{name}"
        if own in self._functions:
            return [own]
        if depth > 20:  # guards against cyclic bases written by mistake
            return []
        for base in self._bases(cls):
            found = self._method(base, name, depth + 1)
            if found:
                return found
        return []

    def _bases(self, cls: str) -> List[str]:
        info = self._classes.get(cls)
        if info is None:
            return []
        return [self._top_classes[b] for b in info.bases if b in self._top_classes]

"""Calls between functions, as a graph that heat propagates along.

`CallGraph` is what propagation needs; `ModuleGraph` resolves the calls of one module to its own functions
(what a single file shows). `h2dlint.project.index.ProjectGraph` resolves them across a project.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Tuple

from h2dlint.facts.heat import Key
from h2dlint.facts.summary import MODULE, CallKind, CallRef, FunctionInfo, ModuleSummary


class CallGraph:
    """What propagation needs to know about functions and the calls between them."""

    def modules(self) -> Iterable[Tuple[str, ModuleSummary]]:
        """Every module, by name, with its summary."""
        raise NotImplementedError

    def name_parts(self, module: str) -> Tuple[str, ...]:
        """The parts of `module`'s dotted name that say what it is (`facts.heuristic_modules` reads them); none
        where the module's place in a project is not known."""
        return ()

    def loop_calls(self) -> Iterable[Tuple[str, CallRef, List[Key]]]:
        """Calls made in a loop (and not in a one-time guard), with their module and the functions they reach."""
        raise NotImplementedError

    def callees(self, caller: Key) -> List[Key]:
        raise NotImplementedError

    def miss_callees(self, caller: Key) -> List[Key]:
        """What `caller` calls only on a miss of a memo keyed on a runtime value (see `facts.memo`)."""
        raise NotImplementedError

    def branch_callees(self, caller: Key) -> List[Key]:
        """What `caller` calls only with images, audio or video (see `facts.multimodal_branches`)."""
        raise NotImplementedError

    def summary(self, module: str) -> Optional[ModuleSummary]:
        raise NotImplementedError

    def function(self, key: Key) -> Optional[FunctionInfo]:
        summary = self.summary(key[0])
        return summary.functions.get(key[1]) if summary is not None else None

    def callers(self) -> Dict[Key, List[Tuple[Key, bool]]]:
        """Every function some call reaches -> (the calling function, whether the call is made under a one-time
        guard) for each such call; a call at module level has the caller `(module, MODULE)`."""
        raise NotImplementedError


Edges = Dict[Key, List[Key]]


def edges_for(call: CallRef, edges: Edges, misses: Edges, branches: Edges) -> Edges:
    """The table of a graph that `call` is an edge of: a call that reaches its callees once per request, not
    per step, is an edge of its own (`miss_callees` on a memo's miss first, then `branch_callees` in a branch
    taken only with multimodal input); any other, of `edges`."""
    if call.per_miss:
        return misses
    return branches if call.multimodal_branch is not None else edges


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
        self._miss_edges: Dict[Key, List[Key]] = {}
        self._branch_edges: Dict[Key, List[Key]] = {}
        self._callers: Dict[Key, List[Tuple[Key, bool]]] = {}

    def _build_edges(self) -> Dict[CallRef, List[Key]]:
        if self._targets is None:
            self._targets = {call: self.resolve(call) for call in self._calls}
            for call, targets in self._targets.items():
                if not call.one_time:
                    edges = edges_for(call, self._edges, self._miss_edges, self._branch_edges)
                    edges.setdefault((self._module, call.caller), []).extend(targets)
                for target in targets:
                    self._callers.setdefault(target, []).append(((self._module, call.caller), bool(call.one_time)))
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
        return [
            (self._module, c, targets[c])
            for c in self._calls
            if c.loop_line is not None and not c.one_time
            and edges_for(c, self._edges, self._miss_edges, self._branch_edges) is self._edges
        ]

    def callees(self, caller: Key) -> List[Key]:
        self._build_edges()
        return self._edges.get(caller, [])

    def miss_callees(self, caller: Key) -> List[Key]:
        self._build_edges()
        return self._miss_edges.get(caller, [])

    def branch_callees(self, caller: Key) -> List[Key]:
        self._build_edges()
        return self._branch_edges.get(caller, [])

    def callers(self) -> Dict[Key, List[Tuple[Key, bool]]]:
        self._build_edges()
        return self._callers

    def resolve(self, call: CallRef) -> List[Key]:
        """The functions of this module that `call` may reach."""
        if call.reads_attribute:
            found = self._resolve(call) if call.kind is CallKind.SELF else []
            return [(self._module, q) for q in found if self._functions[q].is_property]
        return [(self._module, q) for q in self._resolve(call)]

    def _resolve(self, call: CallRef) -> List[str]:
        if call.kind is CallKind.NAME:
            return self._resolve_plain(call.caller, call.name)
        if call.kind is CallKind.ATTR:
            return self.method(call.owner, call.name) if call.owner in self._top_classes else []
        if call.kind is CallKind.TABLE:
            return self._resolve_table(call)
        if call.kind is not CallKind.SELF and call.kind is not CallKind.SUPER:
            return []
        cls = self.enclosing_class(call.caller)
        if cls is None:
            return []
        if call.kind is CallKind.SUPER:
            return [m for base in self._bases(cls) for m in self.method(base, call.name)][:1]
        return self.method(cls, call.name)

    def _resolve_table(self, call: CallRef) -> List[str]:
        """Every function the dispatch table `call.name` maps to (see `facts.dispatch`)."""
        cls = self.enclosing_class(call.caller)
        found: List[str] = []
        for kind, name in self._summary.tables.get(call.name, ()):
            if kind == "name":
                found += self._resolve_plain(call.caller, name)
            elif cls is not None:
                found += self.method(cls, name)
        return list(dict.fromkeys(found))

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
        aliased = [f"{cls}.{m}" for m in self._summary.method_aliases.get(cls or "", {}).get(name, ())]
        found = [m for m in (own, *aliased) if m in self._functions]  # an instance attribute shadows the method
        if found:
            return found
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

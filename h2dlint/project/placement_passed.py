"""Where a public function's parameter lives, from every call of it in the project
(`placement-parameter-from-project-callers`).

`def read(lens): ... lens.max().item()` in `ops.py` says nothing of `lens`; `read(batch.seq_lens_gpu)` in
`runner.py`, its one call, does. A file asks the project ("callers", `facts.placement_callers`) for a public
function or method that its own module calls nowhere, or calls with agreeing arguments (`PlacementQuery.local`).
The project answers with what every call in the other files passes, where it sees them all:
- every other file that calls a function or method of that name, or imports the name, has each of those calls
  resolved by the index (`ProjectGraph`) to this function alone, or to functions that are not it (another
  class's method of the same name); one that may reach it among others, or that nothing resolves, or an
  import with no call (a callback), leaves the parameter unknown;
- a method called on its class (`Runner.update(runner, x)`) binds no receiver, so its arguments are not
  counted as a method call's are: unknown too;
- each call's file says what it passes there (`ModulePlacements.argument_at`, worked out when asked:
  `placement_demand.DemandedExports.argument`), as for one of its own calls; an argument that is a question
  of its own (the caller's parameter, a field of an object of known class) is asked in turn, up to
  `placement_links._MAX_LINKS` files deep;
- the answers agree, one place for every call: else unknown.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from h2dlint.facts.heat import Key
from h2dlint.facts.summary import CallKind, CallRef, ExportedPlacement, ModuleSummary, PlacementQuery
from h2dlint.project.index import ProjectGraph

Answer = Callable[[str, PlacementQuery], Optional[ExportedPlacement]]  # a nested question, asked in a module
# What a call made in a module passes for the parameter a question names (`NOT_PASSED`; None: not known)
Arguments = Callable[[str, CallRef, PlacementQuery], Optional[ExportedPlacement]]
NOT_PASSED = ExportedPlacement("not passed")  # the call passes no tensor for the parameter


class ProjectCallers:
    """The calls of a public function in the project's other files, and what they pass."""

    def __init__(
        self, graph: ProjectGraph, modules: Dict[str, ModuleSummary], argument: Arguments,
        naming: Callable[[str], List[str]],
    ) -> None:
        """`argument(module, call, query)`: what `call`, made in `module`, passes for `query.parameter`;
        `naming(name)`: the modules that call something named `name` or import that name."""
        self._graph = graph
        self._modules = modules
        self._argument = argument
        self._naming = naming

    def passed(
        self, module: str, query: PlacementQuery, answer: Answer, path_of: Callable[[str], str]
    ) -> Optional[ExportedPlacement]:
        """Where parameter `query.parameter` of the function `query` names, defined in `module`, lives by every
        call of it (those of its own module as `query.local` says); None when not every call is in sight or the
        calls disagree. `path_of` gives a module's file as the evidence names it."""
        sites = self._other_calls(module, query)
        if sites is None:
            return None
        if not sites:  # the other files that name it call other functions so named: its own module's calls are all
            local = query.local
            if local is None or local.pending is not None:
                return None
            elsewhere = f"and every call of `{query.name}` in the other files reaches another function of that name"
            return replace(local, evidence=f"{local.evidence}, {elsewhere}")
        others = passed_by(sites, query, self._argument, answer, path_of)
        if others is None:
            return None
        found = ([query.local] if query.local is not None else []) + others
        if not found or len({placed.place for placed in found}) != 1:
            return None
        files = sorted({path_of(where) for where, _ in sites})
        calls = f"at every call of `{query.name}(...)` in the project (from {files_shown(files)})"
        return ExportedPlacement(found[0].place, f"is, {calls}, a tensor that {found[0].evidence}", found[0].chain)

    def _other_calls(self, module: str, query: PlacementQuery) -> Optional[List[Tuple[str, CallRef]]]:
        """The calls in other modules that reach the function, where they are all its references there."""
        key: Key = (module, f"{query.owner}.{query.name}" if query.owner else query.name)
        if self._graph.function(key) is None:
            return None
        for other in self._naming(query.name):
            if other != module and not self._only_reach_it_seen(other, query.name, key):
                return None
        sites = [(where, call) for where, call in self._graph.call_sites(key) if where != module]
        if query.owner and any(self._on_class(where, call) for where, call in sites):
            return None  # `Runner.update(runner, x)`: no receiver is bound
        return sites

    def _on_class(self, module: str, call: CallRef) -> bool:
        """Whether `call` (`X.m(...)`) calls a method on a class, as `X` names one in `module`, not on an object."""
        if call.kind is not CallKind.ATTR or call.receiver is not None:
            return False
        summary = self._modules[module]
        return call.owner in summary.classes or call.owner in summary.imports

    def _only_reach_it_seen(self, module: str, name: str, key: Key) -> bool:
        """Whether every call in `module` of something named `name` reaches `key` alone or does not reach it; a
        module that names it with no call resolved (an import alone, say) may reach it unseen."""
        resolved = self._graph.calls_named(module, name)
        return bool(resolved) and all(targets and (key not in targets or len(targets) == 1) for targets in resolved)


def passed_by(
    sites: List[Tuple[str, CallRef]], query: PlacementQuery, argument: Arguments, answer: Answer,
    path_of: Callable[[str], str],
) -> Optional[List[ExportedPlacement]]:
    """What each call of `sites` (its module, the call) passes for the parameter `query` asks about (the call's
    own name standing for `query.name`), with the questions that leaves answered: `answer(module, question)`;
    None where one is not known. Calls that pass no tensor there are left out."""
    found: List[ExportedPlacement] = []
    for caller_module, call in sites:
        passed = argument(caller_module, call, replace(query, name=call.name))
        if passed is None:
            return None
        if passed is NOT_PASSED:
            continue
        placed = answered(caller_module, passed, answer, path_of)
        if placed is None:
            return None
        found.append(placed)
    return found


def answered(
    module: str, passed: ExportedPlacement, answer: Answer, path_of: Callable[[str], str]
) -> Optional[ExportedPlacement]:
    """`passed`, found in `module`, with its chain naming that file and its own question, if any, answered in
    turn: `answer(module, question)`; None where that question is not answered."""
    chain = tuple(f"{path_of(module)}: {step}" for step in passed.chain)
    if passed.pending is None:
        return replace(passed, chain=chain)
    deeper = answer(module, passed.pending)
    return None if deeper is None else replace(deeper, chain=chain + deeper.chain)


def naming_the_class(
    graph: ProjectGraph, modules: Dict[str, ModuleSummary], cls: Key, candidates: Iterable[str]
) -> Optional[List[str]]:
    """Those of the modules `candidates`, the class's own aside, where its name `cls[1]` is class `cls` (an
    import of it); None where one names it without the project knowing what it names there (`mod.Name(...)`,
    `self.Name(...)`), which may be this class. A module whose name is another class's is left out."""
    found = []
    for module in candidates:
        if module == cls[0]:
            continue
        target = graph.target_of(module, cls[1])
        if target == cls:
            found.append(module)
        elif target is None and cls[1] not in modules[module].imports:
            return None
    return found


def files_shown(files: List[str]) -> str:
    """The first two of `files`, quoted, and how many more there are."""
    return ", ".join(f"`{f}`" for f in files[:2]) + (f" and {len(files) - 2} more files" if len(files) > 2 else "")

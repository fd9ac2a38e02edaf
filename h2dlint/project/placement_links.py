"""Placements across files: the pending sites of each file, resolved through the project index.

A file's placement analysis knows what its own functions return and what its own classes assign. When a copy's
tensor comes from a function it imports (`ids = make_ids()`, `ids_mod.make_ids()`), or from a method or an
attribute one of its classes inherits from a class in another file, or from a field or method of an object
whose class another file defines (`meta.seq_lens` with `meta: Metadata`), the site is recorded *pending*: with the
question (`PlacementQuery`) and what the rule reports for each answer (`PlacedVariant`). Once every file is
summarised, the question is asked of the file that defines the function or class (its exports, worked out
then: `placement_demand`; for a field, also a `<name>_cpu` mirror the class declares), through imports,
re-exports and base classes as the index resolves calls. The
site then becomes the variant for the answer, with the evidence naming the other file ("`ids` is returned by
`make_ids()` (pkg/ids.py), where it is built on the host by `torch.zeros(...)` at line 3"), or stays pending:
never reported. A file checked alone (flake8 without a project, `--isolated-files` on one file) has no one to
ask, so its pending sites are never reported there either.

A public function's parameter ("callers") is answered by its own module's calls where no other file names the
function, else by what every call of it in the other files passes (`project.placement_passed`); a parameter of a
module's `forward` ("module-callers") by the calls of the module in its file, where no other file names its class.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple

from h2dlint.checker.file_summary import FileSummary
from h2dlint.facts.heat import Key
from h2dlint.facts.multimodal_inputs import multimodal_evidence
from h2dlint.facts.placement_conventions import FROM_SUBMODULE_CALLS, MULTIMODAL_INPUT, mirror_of
from h2dlint.facts.placement_typed import mirror_evidence
from h2dlint.facts.placement_values import Place
from h2dlint.facts.summary import (
    CallKind, CallRef, ExportedPlacement, ModuleSummary, PlacementExports, PlacementQuery, Site,
)
from h2dlint.project.index import ProjectGraph
from h2dlint.project.module_builders import Call, ModuleBuilders, Submodules
from h2dlint.project.placement_passed import Arguments, ProjectCallers, files_shown, passed_by
from h2dlint.project.record_fills import Fills, RecordFillsElsewhere
from h2dlint.rules.device_to_host import mirror_remedy

SYNC_RULES = "HTD2"  # the device-to-host rules: their remedy names a host mirror
_MAX_LINKS = 8  # files followed from one question: `a.f` returns `b.g()`, which returns `c.h()`, ...
_Asked = FrozenSet[Tuple[str, PlacementQuery]]


def has_pending(file: FileSummary) -> bool:
    """Whether a site of `file` waits on another file's placement."""
    return any(site.query is not None for site in file.summary.sites)


def first_asked(
    graph: ProjectGraph, modules: Dict[str, ModuleSummary], paths: Dict[str, str],
    files: Iterable[Tuple[FileSummary, str]],
) -> List[str]:
    """The modules whose exports answering the pending sites of `files` (each with its module) asks first,
    found with every module's exports taken as empty: what their own exports then ask is not among them."""
    asked: Dict[str, None] = {}

    def record(module: str) -> PlacementExports:
        asked[module] = None
        return PlacementExports()

    links = PlacementLinks(graph, modules, paths, record)
    for file, module in files:
        links.resolved(file, module)
    return list(asked)


class PlacementLinks:
    """Answers to the placement questions of a project's files, from the summaries of the files asked."""

    def __init__(
        self, graph: ProjectGraph, modules: Dict[str, ModuleSummary], paths: Dict[str, str],
        exports: Callable[[str], PlacementExports], arguments: Optional[Arguments] = None,
        fills: Optional[Fills] = None, submodules: Optional[Submodules] = None,
    ) -> None:
        """`modules` and `paths` (the file of each module, as the run names it) by module name, as in `graph`;
        `exports` gives a module's exports, `arguments` what a call of a module passes, `fills` what its calls
        of another file's record class put in a field and `submodules` its calls of another file's module class
        (`placement_demand.DemandedExports` and its `argument`, `record_fills` and `submodule_calls`; without
        them, no call in another file is seen)."""
        self._graph = graph
        self._modules = modules
        self._paths = paths
        self._exports = exports
        self._arguments = arguments
        self._stored_anywhere: Optional[FrozenSet[str]] = None
        self._namers: Optional[Dict[str, List[str]]] = None  # name -> the modules that call or import it
        self._callers: Optional[ProjectCallers] = None  # for a public function's callers in other files
        self._records_elsewhere = RecordFillsElsewhere(graph, modules, fills)
        self._builders = ModuleBuilders(graph, modules, submodules, self._naming)

    def resolved(self, file: FileSummary, module: str) -> FileSummary:
        """`file` with each pending site whose question the project answers with a placement its rule
        reports replaced by that finding."""
        if not has_pending(file):
            return file
        sites = [self._resolved_site(site, module) for site in file.summary.sites]
        return replace(file, summary=replace(file.summary, sites=sites))

    def _resolved_site(self, site: Site, module: str) -> Site:
        """`site` as the project's answer to its question decides it; one no file knows is left to the report,
        which takes the rule's verdict for an unknown placement (`Site.decided`)."""
        if site.query is None:
            return site
        answer = self.answer(module, site.query, os.path.dirname(os.path.abspath(self._paths.get(module, ""))))
        if answer is None:
            return site
        decided = site.decided(answer.place, answer.evidence, tuple(f"  from {step}" for step in answer.chain))
        if decided.query is not None:  # a placement the rule does not report (a host tensor for a D2H read): no
            return replace(site, variants=())  # finding, not the verdict for an unknown one (a name's guess)
        if answer.mirror and site.code.startswith(SYNC_RULES) and site.query.written:
            mirror = f"{site.query.written.rpartition('.')[0]}.{answer.mirror}"
            return replace(decided, remedy=mirror_remedy(mirror, decided.remedy))
        return decided

    def answer(
        self, module: str, query: PlacementQuery, origin: str, asked: _Asked = frozenset()
    ) -> Optional[ExportedPlacement]:
        """Where the tensor `query`, asked in `module`, lives, with evidence naming the file that knows, by its
        path from the folder `origin` (the same from every face); None when no file of the project knows, or
        the question comes back to itself (a cycle)."""
        if (module, query) in asked or len(asked) >= _MAX_LINKS:
            return None
        if query.kind == "module-callers" and query.calls:
            local = self._calls_answered(module, query, origin, asked)
            if local is None:
                return None
            query = replace(query, local=local, calls=())
        if query.kind == "callers" and query.local is not None and query.local.pending is not None:
            local = self.answer(module, query.local.pending, origin, asked | {(module, query)})
            if local is None:
                return None
            calls = f"is, at every call of `{query.name}(...)` in this file, a tensor that {local.evidence}"
            query = replace(query, local=replace(local, evidence=calls))
        if query.kind == "callers":
            return self._only_called_in(module, query) or self._called_in_project(module, query, origin, asked)
        if query.kind == "module-callers" and query.local is None:
            return self._built_in_other_files(module, query, origin, asked)
        if query.kind == "module-callers":
            return self._only_called_in(module, query)
        if query.kind == "multimodal":
            return self._multimodal_input(query.name, origin)
        found = self._definition(module, query)
        if found is None:
            return None
        where, exported, how = found
        if exported is None:
            return None
        path, record = self._path(where, origin), exported.record
        chain = tuple(f"{path}: {step}" for step in exported.chain)
        if exported.pending is not None:
            deeper = self.answer(where, exported.pending, origin, asked | {(module, query)})
            if deeper is None:
                return None
            exported = replace(deeper, chain=chain + deeper.chain)
            chain = exported.chain
        placed = ExportedPlacement(exported.place, f"{how} ({path}), where it {exported.evidence}", chain,
                                   mirror=exported.mirror)
        if not record:
            return placed
        deeper_asked = asked | {(module, query)}
        return self._records_elsewhere.agreed(
            (where, record), query.name, placed,
            lambda other, pending: self.answer(other, pending, origin, deeper_asked),
            lambda other: self._path(other, origin),
        )

    def _path(self, module: str, origin: str) -> str:
        """The file of `module` as evidence names it: from the folder `origin`."""
        return os.path.relpath(os.path.abspath(self._paths.get(module, module)), origin)

    def _only_called_in(self, module: str, query: PlacementQuery) -> Optional[ExportedPlacement]:
        """The placement of a public function's parameter by the calls of its own module (`query.local`), where
        no other file calls the function's name (`obj.name(...)` counts, whatever `obj` is) or imports it."""
        if query.local is None or self._named_elsewhere(module, query.name):
            return None
        local = query.local
        calls = "builds or imports" if query.kind == "module-callers" else "calls"
        evidence = f"{local.evidence}, and no other file of the project {calls} `{query.name}`"
        return ExportedPlacement(local.place, evidence, local.chain, mirror=local.mirror)

    def _called_in_project(
        self, module: str, query: PlacementQuery, origin: str, asked: _Asked
    ) -> Optional[ExportedPlacement]:
        """A public function's parameter by every call of it in the project (`project.placement_passed`)."""
        if self._arguments is None or not query.parameter[0]:
            return None
        if self._callers is None:
            self._callers = ProjectCallers(self._graph, self._modules, self._arguments, self._naming)
        deeper = asked | {(module, query)}
        return self._callers.passed(
            module, query, lambda where, pending: self.answer(where, pending, origin, deeper),
            lambda where: self._path(where, origin),
        )

    def _calls_answered(
        self, module: str, query: PlacementQuery, origin: str, asked: _Asked
    ) -> Optional[ExportedPlacement]:
        """Where the parameter lives by what the calls `query.calls` of its own module pass
        (`facts.placement_submodule_calls.SubmoduleCalls._calls_asked`); None where one is not known, or they
        disagree."""
        found = self._one_place(module, query, [(module, call) for call in query.calls], origin, asked)
        if found is None:
            return None
        (_, line, written), more = query.calls[0], len(query.calls) - 1
        lines = f"line {line}" + (f" (and {more} more)" if more else "")
        path = self._path(module, origin)
        evidence = f"is, at every call of `{written}(...)` in {path} ({lines}), a tensor that {found.evidence}"
        return ExportedPlacement(found.place, evidence, found.chain)

    def _built_in_other_files(
        self, module: str, query: PlacementQuery, origin: str, asked: _Asked
    ) -> Optional[ExportedPlacement]:
        """A parameter of the `forward` of a module class that its own file never builds, by the calls of its
        instances in the files that import and build it (`project.module_builders`); None where they are not
        all in sight, or disagree."""
        built = self._builders.calls((module, query.name))
        if built is None:
            return None
        builders, sites = built
        found = self._one_place(module, query, sites, origin, asked)
        if found is None:
            return None
        files = files_shown([self._path(other, origin) for other in builders])
        calls = f"at every call of a `{query.name}` module in {files} [heuristic: {FROM_SUBMODULE_CALLS}]"
        return ExportedPlacement(found.place, f"is, {calls}, a tensor that {found.evidence}", found.chain)

    def _one_place(
        self, module: str, query: PlacementQuery, calls: List[Tuple[str, Call]], origin: str,
        asked: _Asked,
    ) -> Optional[ExportedPlacement]:
        """What each of `calls` (its module, and the caller's qualname, the line and the callee as written)
        passes for the parameter `query` asks about, each asked of its module and answered in turn, where all
        agree on one known place; else None."""
        if self._arguments is None:
            return None
        sites = [
            (where, CallRef(caller, CallKind.METHOD, written.rpartition(".")[2], None, line, None))
            for where, (caller, line, written) in calls
        ]
        deeper = asked | {(module, query)}
        found = passed_by(
            sites, query, self._arguments, lambda where, pending: self.answer(where, pending, origin, deeper),
            lambda where: self._path(where, origin),
        )
        if not found or len({placed.place for placed in found}) != 1 or found[0].place == Place.UNKNOWN.value:
            return None
        return found[0]

    def _multimodal_input(self, name: str, origin: str) -> Optional[ExportedPlacement]:
        """The multimodal input `name` on the device, where a file of the project declares its field and none
        keeps it on the host (`facts.multimodal_inputs`)."""
        declaring = sorted(m for m, summary in self._modules.items() if name in summary.multimodal_fields)
        if not declaring or any(self._modules[m].multimodal_fields[name] for m in declaring):
            return None
        path = self._path(declaring[0], origin)
        evidence = f"{multimodal_evidence(name, f'in {path}')} [heuristic: {MULTIMODAL_INPUT}]"
        return ExportedPlacement(Place.DEVICE.value, evidence)

    def _named_elsewhere(self, module: str, name: str) -> bool:
        """Whether another module calls or imports `name`, or `module` imports it (a rare case, read as unknown)."""
        own_imports = (target.rpartition(".")[2] for target in self._modules[module].imports.values())
        return any(other != module for other in self._naming(name)) or name in own_imports

    def _naming(self, name: str) -> List[str]:
        """The modules that call something named `name` or import that name (indexed on first use)."""
        if self._namers is None:
            self._namers = {}
            for module, summary in self._modules.items():
                imported = {target.rpartition(".")[2] for target in summary.imports.values()}
                for named in imported | set(summary.called_names):
                    self._namers.setdefault(named, []).append(module)
        return self._namers.get(name, [])

    def _definition(self, module: str, query: PlacementQuery) -> Optional[Tuple[str, Optional[ExportedPlacement], str]]:
        """(the module that defines what `query` asks about, what it exports of it, how the evidence names it)."""
        if query.kind == "call":
            key = self._graph.function_named(module, query.name)
            if key is None:
                return None
            if query.local is not None and key[1] in self._exports(key[0]).follows_first:
                how = f"is returned by `{query.name}()` of `{key[0]}`, which gives back its first argument"
                return module, query.local, how  # the argument, and the chain to it, are the asking file's
            return key[0], self._returned(key), f"is returned by `{query.name}()`"
        if query.kind == "typed":
            return self._typed(module, query)
        if query.kind == "record":
            exported = self._attribute(module, query.owner, query.name)
            trusted = self._trusted((module, query.owner), query.name, exported)
            return module, trusted, f"is `{query.owner}.{query.name}`"
        if query.kind in ("method", "typed-method"):
            classes = [(module, query.owner)] if query.kind == "method" else self._receiver_classes(module, query)
            if len(classes) != 1:
                return None
            methods = self._graph.first_in_hierarchy(classes[0], lambda c: self._defined(c, query.name))
            if not methods:
                return None
            owner = methods[0][1].rpartition(".")[0]
            written = f"self.{query.name}" if query.kind == "method" else f"{query.name}"
            return methods[0][0], self._returned(methods[0]), f"is returned by `{written}()` of `{owner}`"
        assigned = self._assigned((module, query.owner), query.name)
        if assigned is None:
            return None
        (where, owner), exported = assigned
        return where, exported, f"is assigned by `{owner}`"

    def _typed(self, module: str, query: PlacementQuery) -> Optional[Tuple[str, Optional[ExportedPlacement], str]]:
        """Attribute `query.name` of an object of known class (`facts.placement_typed`): what the class assigns
        it, else, with `query.mirror`, the device copy when the class has its host mirror."""
        classes = self._receiver_classes(module, query)
        if len(classes) != 1:
            return None
        cls = classes[0]
        how = f"is `{cls[1]}.{query.name}`"
        assigned = self._assigned(cls, query.name)
        mirrored = query.mirror and self._graph.first_in_hierarchy(
            cls, lambda c: [c] if self._mirror(c, query.name) else None
        )
        if assigned is not None and mirrored and self._built_elsewhere(assigned):
            assigned = (assigned[0], None)  # the host mirror says more than constructor calls in several files
        if assigned is not None and (assigned[1] is not None or not query.mirror):
            return assigned[0][0], assigned[1], how
        if not query.mirror:
            return cls[0], None, how
        if not mirrored:
            return None
        owner, mirror = mirrored[0], self._mirror(mirrored[0], query.name) or ""
        return owner[0], ExportedPlacement(Place.DEVICE.value, mirror_evidence(owner[1], mirror), mirror=mirror), how

    def _assigned(self, cls: Key, name: str) -> Optional[Tuple[Key, Optional[ExportedPlacement]]]:
        """The class of `cls`'s hierarchy that assigns (or declares) its attribute `name`, and what it exports
        of it (None: placement unknown); None when none does."""
        found = self._graph.first_in_hierarchy(cls, lambda c: [c] if self._assigns(c, name) else None)
        if not found:
            return None
        owner = found[0]
        return owner, self._trusted(owner, name, self._attribute(owner[0], owner[1], name))

    def _trusted(self, cls: Key, name: str, exported: Optional[ExportedPlacement]) -> Optional[ExportedPlacement]:
        """`exported`, unless it is what the constructor calls of record class `cls` put in its field `name`
        (`facts.placement_fields`) and some file stores the field on an object. What other files' calls of the
        class put there is checked once the answer is known (`record_fills`)."""
        if exported is None or not exported.record:
            return exported
        if self._stored_anywhere is None:
            self._stored_anywhere = frozenset(a for s in self._modules.values() for a in s.stored_attributes)
        return None if name in self._stored_anywhere else exported

    def _built_elsewhere(self, assigned: Tuple[Key, Optional[ExportedPlacement]]) -> bool:
        """Whether `assigned` is a record's field whose class files other than its own construct."""
        (module, _), exported = assigned
        return exported is not None and bool(exported.record) and self._records_elsewhere.built_elsewhere(
            (module, exported.record)
        )

    def _receiver_classes(self, module: str, query: PlacementQuery) -> List[Key]:
        """The project classes of the object a "typed" or "typed-method" question is about."""
        return self._graph.classes_of(module, (module, query.owner) if query.owner else None, query.receiver)

    def _mirror(self, cls: Key, name: str) -> Optional[str]:
        """The host mirror (`seq_lens_cpu`) that class `cls` declares or assigns for its attribute `name`."""
        return mirror_of(name, frozenset(self._attribute_names(cls)))

    def _returned(self, function: Key) -> Optional[ExportedPlacement]:
        return self._exports(function[0]).returns.get(function[1])

    def _attribute(self, module: str, owner: str, name: str) -> Optional[ExportedPlacement]:
        return self._exports(module).attributes.get(owner, {}).get(name)

    def _defined(self, cls: Key, name: str) -> Optional[List[Key]]:
        method = (cls[0], f"{cls[1]}.{name}")
        return [method] if self._graph.function(method) is not None else None

    def _assigns(self, cls: Key, name: str) -> bool:
        return name in self._attribute_names(cls)

    def _attribute_names(self, cls: Key) -> Tuple[str, ...]:
        """The attributes class `cls` assigns or declares; for a record its file constructs, with the fields
        those calls fill, which only its exports name."""
        summary = self._modules[cls[0]]
        names = summary.attribute_names.get(cls[1], ())
        if cls[1] not in summary.filled_records:
            return names
        return (*names, *self._exports(cls[0]).attributes.get(cls[1], {}))


"""Where a parameter of a module's `forward` lives, from the calls of that module in its own file
(`placement-parameter-from-submodule-calls`).

`VisionTransformer.forward(self, x, grid_thw)` says nothing of `grid_thw`; `self.visual(pixel_values,
grid_thw=grid_thw)`, where `self.visual = VisionTransformer(...)`, does: `nn.Module.__call__` runs `forward` with
the arguments of the call. No call names `forward`, so `placement_callers` cannot see these calls; this module
finds them. The parameter lives where every such call passes it, when those calls are all the module's calls:
- every place the file writes the class's name (its `class` statement, comments and prose aside) builds it into
  an attribute of a class of the file (`self.visual = VisionTransformer(...)`), and every place the file writes
  that attribute's name is such an assignment or a call of it on `self` in a method of that class: the module
  is neither passed on, nor stored elsewhere, nor subclassed in the file;
- no other file of the project calls or imports the class: a question for the project ("module-callers"),
  answered as a public function's callers are (`project.placement_links`); one file checked alone never knows.
A class this file never builds (its name written only in its `class` statement) is asked of the project with no
calls of its own: the files that import and build it (one or two) read theirs the same way
(`imported_submodule_calls`), where every place such a file writes the name imports or builds it.
The arguments must agree, as a function's callers' do (`placement_callers.CallerArguments.agreed_arguments`).
Where an argument is itself a question for the project (a field of a record class another file builds), the
question lists the calls (`PlacementQuery.calls`), and the project asks the file what each passes, as it does
for a public function's calls in other files (`project.placement_passed`).
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from h2dlint.facts.placement_callers import CallerArguments, parameter_position
from h2dlint.facts.placement_exports import FunctionNode, exported
from h2dlint.facts.placement_values import UNKNOWN, Place, Placement
from h2dlint.facts.submodule_uses import attribute_uses, built_instances, calls_itself, imported_rows, looked_up_by_name
from h2dlint.facts.summary import PlacementQuery
from h2dlint.facts.syntax import methods_of

_Site = Tuple[FunctionNode, Optional[str], ast.Call]  # the calling method, its class, the call


class SubmoduleCalls(CallerArguments):
    """The part of `placement_summary.ModulePlacements` that places a parameter of a module's `forward` by the
    calls of the module in this file, as `CallerArguments` places a function's by its calls. It uses the host's
    `_classes`, `_assignments_of`, `_class_and_bases`, `_summary` and `_ask`."""

    _classes: Dict[str, ast.ClassDef]
    _module_sites: Optional[Dict[str, List[_Site]]] = None  # by class: `_submodule_calls`, found on first use

    def forward_passed(self, function: FunctionNode, class_name: str, name: str, depth: int) -> Placement:
        """Where parameter `name` of `class_name.forward` lives, by every call of the module in this file, as a
        question for the project (no other file may build the class, and what a call passes may be a question
        of its own); unknown where the calls are not all in sight or disagree."""
        if not self._conventions.submodule_callers:
            return UNKNOWN
        sites = self._submodule_calls(class_name)
        parameter = (name, parameter_position(function, name, bound=True))
        if not sites:
            if not self._built_elsewhere_only(class_name):
                return UNKNOWN
            query = PlacementQuery("module-callers", class_name, class_name, parameter=parameter)
            return self._ask(query)  # type: ignore
        key = (class_name, f"(module){name}")
        found = self._summary(key, lambda: self.agreed_arguments(sites, function, name, True, depth))  # type: ignore
        if found.place is not Place.UNKNOWN:
            query = PlacementQuery("module-callers", class_name, class_name, local=exported(found), parameter=parameter)
            return self._ask(query)  # type: ignore
        key = (class_name, f"(module-calls){name}")

        def asked() -> Placement:
            return self._calls_asked(class_name, parameter, sites, function, depth)

        return self._summary(key, asked)  # type: ignore

    def _calls_asked(
        self, class_name: str, parameter: Tuple[str, int], sites: List[_Site], function: FunctionNode, depth: int
    ) -> Placement:
        """The question that lists the calls `sites` of the module, for the project to ask this file what each
        passes for `parameter`, where some pass a question of its own and the others agree here; else unknown.
        (A function's callers are not asked so: a question no file answers would hide what a call's own argument
        tells, `placement_through`.)"""
        placed = [self.agreed_arguments([site], function, parameter[0], True, depth) for site in sites]
        if any(p.place is Place.UNKNOWN and p.pending is None for p in placed):
            return UNKNOWN
        if len({p.place for p in placed if p.pending is None}) > 1 or all(p.pending is None for p in placed):
            return UNKNOWN
        query = PlacementQuery("module-callers", class_name, class_name, parameter=parameter, calls=_described(sites))
        return self._ask(query)  # type: ignore

    def imported_submodule_calls(self, name: str) -> Optional[Tuple[Tuple[str, int, str], ...]]:
        """The calls in this file of the instances of `name`, a module class that another file defines and this
        one imports and builds (`project.module_builders` asks, for a parameter of its `forward`): (the calling
        method's qualname, the line, the callee as written) for each, when they are all its uses, as for a class
        of this file; else None."""
        sites = self._submodule_calls(name)
        return _described(sites) if sites else None

    def _built_elsewhere_only(self, class_name: str) -> bool:
        """Whether this file writes the module class's name only in its `class` statement (prose aside), and
        none of its methods calls the module itself: another file may build it, and call it there."""
        node = self._classes[class_name]
        written = [row for row, at in self._places_naming(class_name) if not self._in_prose(row, at)]
        return written == [node.lineno] and not calls_itself(node)

    def _submodule_calls(self, class_name: str) -> List[_Site]:
        """The calls of the instances of `class_name` in this file, when they are all its uses (see the module
        docstring); else empty. Found once per class: each parameter of its `forward` asks again."""
        if self._module_sites is None:
            self._module_sites = {}
        if class_name not in self._module_sites:
            self._module_sites[class_name] = self._find_submodule_calls(class_name)
        return self._module_sites[class_name]

    def _find_submodule_calls(self, class_name: str) -> List[_Site]:
        holders = self._holders(class_name)
        node = self._classes.get(class_name)
        if not holders or (node is not None and calls_itself(node)):
            return []
        sites: List[_Site] = []
        for owner, attribute in sorted(holders):
            found = self._calls_of_attribute(owner, attribute, class_name)
            if found is None:
                return []
            sites.extend(found)
        return sites

    def _holders(self, class_name: str) -> List[Tuple[str, str]]:
        """The (class, attribute) pairs whose assignments store instances of `class_name`, when every place the
        file writes that name (its `class` statement aside) builds one of them; else empty."""
        written = sorted(row for row, at in self._places_naming(class_name) if not self._in_prose(row, at))
        node = self._classes.get(class_name)
        built: List[int] = [node.lineno] if node is not None else imported_rows(self._module, written, class_name)
        if not built:
            return []
        holders = set()
        for owner in self._classes:
            for attribute, assignments in self._assignments_of(owner).items():  # type: ignore
                for _, value, _ in assignments:
                    calls = built_instances(value, class_name)
                    if calls:
                        holders.add((owner, attribute))
                        built.extend(call.lineno for call in calls)
        return sorted(holders) if holders and sorted(built) == written else []

    def _calls_of_attribute(self, owner: str, attribute: str, class_name: str) -> Optional[List[_Site]]:
        """The calls of what `self.<attribute>` holds in the methods of `owner` and its subclasses here, when
        they and its harmless uses (`facts.submodule_uses`) are every place the file writes the attribute's name
        outside strings, comments and prose; else None: the module may be passed on or called another way."""
        if looked_up_by_name(self._module, attribute):
            return None
        places = [(row, at) for row, at in self._places_naming(attribute) if not self._in_prose(row, at, True)]
        sites: List[_Site] = []
        accounted = 0
        family = [c for c in self._classes if owner in self._class_and_bases(c)]  # type: ignore
        for cls, method in ((c, m) for c in family for m in methods_of(self._classes[c])):
            found = attribute_uses(method, attribute, class_name)
            if found is None:
                return None
            sites.extend((method, cls, call) for call in found[0])
            accounted += found[1]
        return sites if sites and accounted == len(places) else None


def _described(sites: List[_Site]) -> Tuple[Tuple[str, int, str], ...]:
    """Each call of `sites` as the project names it: (the calling method's qualname, the line, the callee as
    written)."""
    return tuple((f"{cls}.{method.name}", call.lineno, ast.unparse(call.func)) for method, cls, call in sites)

"""Per module: where each class's attributes live and where each function's return value lives, worked out
on first use from the assignments and returns this file shows; and the `PlacementScope` of any point.

`self.x` is placed where every assignment of `self.x` in the class's methods (constructor included) and in
its bases defined in this file puts it, `None` aside; one that disagrees, or a tuple target, gives unknown.
A call of a module function (`make_ids()`) or of a method (`self.make_ids()`) is placed where every `return`
of that function puts its value. Only top-level classes and functions are summarised.

What this file cannot answer, another file of the project may: a function it imports (`make_ids()`,
`ids_mod.make_ids()`), a method or an attribute its classes inherit from a base class defined elsewhere. Such a
placement is unknown here, with the question to ask the project index (`Placement.pending`); a rule's match
that hangs on it is recorded for each possible answer (`assume`), and the project picks one. `exports` gives
other files what this one knows.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Set, Tuple, Union

from h2dlint.facts.placement import PlacementScope, placement_of
from h2dlint.facts.placement_conventions import MIRROR_SUFFIXES, Conventions, mirror_of, mirrors_of_their_own_tensor
from h2dlint.facts.placement_fields import RecordFields
from h2dlint.facts.placement_exports import (
    MAY_BE_TENSOR,
    exported,
    imported_names,
    list_fill,
    self_assignments,
)
from h2dlint.facts.placement_returns import FunctionReturns
from h2dlint.facts.placement_through import ParameterFollowing, first_parameter
from h2dlint.facts.registrations import is_accessor
from h2dlint.facts.placement_regions import Regions, default_device, own_nodes
from h2dlint.facts.placement_submodule_calls import SubmoduleCalls
from h2dlint.facts.placement_typed import TypedReceivers, class_fields
from h2dlint.facts.placement_values import CYCLE, UNKNOWN, Place, Placement, agreed
from h2dlint.facts.bindings import Bindings, class_bindings, function_bindings
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.summary import ExportedPlacement, PlacementExports, PlacementQuery
from h2dlint.facts.syntax import last_name
from h2dlint.facts.tensor_ops import SAME_PLACE_METHODS, VIEW_METHODS

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_MIRROR_STEPS = 6  # views, methods and names followed back to the tensor whose mirror is sought
Assignment = Tuple[FunctionNode, Optional[ast.expr], int]  # the method, the value (None: not its own), the line


class ModulePlacements(
    FunctionReturns, ParameterFollowing, TypedReceivers, SubmoduleCalls, RecordFields
):
    """The placement knowledge of one module, shared by every point of it; summaries are cached."""

    def __init__(
        self,
        module: ast.Module,
        module_scope: Bindings,
        conventions: Conventions,
        walrus: bool,
        mirrors: Optional[FrozenSet[str]] = None,
        regions: Tuple[bool, bool] = (True, True),
        source: str = "",
    ) -> None:
        """`mirrors`: the names like a host mirror (`MIRROR_SUFFIXES`) that the source uses, None for any: a
        tensor's mirror is looked for only when its name with a suffix is one of them;
        `regions`: which regions it may hold (`placement_regions.regions_possible`)."""
        self._mirrors = mirrors
        self._source = source
        self._module = module
        self._starts: Optional[List[int]] = None
        self._references_of: Dict[int, List[int]] = {}
        self._exporting = False
        self._top_level = None
        self._module_scope = module_scope
        self._conventions = conventions
        self._walrus = walrus
        self._functions = {n.name: n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self._classes = {n.name: n for n in module.body if isinstance(n, ast.ClassDef)}
        self._class_scopes: Dict[str, Bindings] = {}
        self._models: Dict[str, bool] = {}  # class name -> whether it is a model (`_is_model`)
        self._function_scopes: Dict[int, Bindings] = {}  # by id of the function node
        self._assignments: Dict[str, Dict[str, List[Assignment]]] = {}
        self._summaries: Dict[Tuple[str, str], Placement] = {}  # (class or "", attribute or "()function")
        self._in_progress: Set[Tuple[str, str]] = set()
        self._cycle_reads: Set[Tuple[str, str]] = set()  # summaries read while they were being worked out
        self._known_names: Dict[int, FrozenSet[str]] = {}
        self._lists: Dict[int, Dict[str, Tuple[ast.expr, ...]]] = {}
        self._returns: Dict[int, Tuple[Optional[ast.expr], ...]] = {}  # by id of the function node
        self._types: Dict[int, Dict[str, str]] = {}  # locals of known class, by id of the function node
        self._regions = Regions(default_device(module, NameResolver.of(module_scope)), regions, source or None)
        self._imported, self._star_import = imported_names(module.body)
        self._assumed: Dict[PlacementQuery, Placement] = {}  # while a rule's match is tried for each answer
        self._hypothetical: Dict[Tuple[str, str], Placement] = {}  # summaries under `_assumed`

    def share_bindings(self, function: FunctionNode, bindings: Bindings) -> None:
        """The names `function` binds, as the walk worked them out: not worked out a second time here."""
        self._function_scopes.setdefault(id(function), bindings)

    def assume(self, query: Optional[PlacementQuery], answer: Placement = UNKNOWN) -> None:
        """Answer `query` with `answer` from now on (None: answer nothing, as before)."""
        self._assumed = {query: answer} if query is not None else {}
        self._hypothetical = {}

    def _ask(self, query: PlacementQuery) -> Placement:
        return self._assumed.get(query) or Placement(Place.UNKNOWN, pending=query)

    def scope(self, names: NameResolver, class_name: Optional[str], function: Optional[FunctionNode]) -> PlacementScope:
        """The scope of a point in `function` (None: module level) of top-level class `class_name`."""
        return PlacementScope(
            names=names,
            device_context=lambda node: self._regions.device_context(function, node, names),
            attribute=lambda name, depth: self.attribute(class_name, name, depth),
            typed_attribute=lambda expr, depth: self.typed_attribute(expr, class_name, function, depth),
            returned=lambda call, depth: self.returned(call, class_name, depth, names, function),
            convention=lambda expr: self._conventions.placement(
                expr,
                lambda name: self._names_in(class_name, function) if self._may_have_mirror(name) else frozenset(),
                self._is_model(class_name),
            ),
            appended=lambda name: self._appended(function).get(name, ()),
            tested=lambda expr: self._regions.tested(function, expr, names),
            passed=lambda name, depth: self.passed(function, class_name, name, depth),
            passed_through=lambda call, depth: self.passed_through(call, class_name, depth),
            returned_host_device=lambda expr: self.returned_host_device(expr, names, class_name),
            keyword_read=lambda expr: self.keyword_read(expr, class_name, function),
        )

    def names_a_mask(self, expr: ast.expr) -> bool:
        """Whether the index `expr` is named as a boolean mask (`Conventions.names_a_mask`)."""
        return self._conventions.names_a_mask(expr)

    def host_mirror(
        self, expr: ast.expr, names: NameResolver, class_name: Optional[str], function: Optional[FunctionNode]
    ) -> Optional[str]:
        """The host mirror of the tensor `expr` reads, as written (`batch.seq_lens_cpu` for `batch.seq_lens[:n]`
        or `batch.seq_lens.max()`), when its `<name>_cpu` sibling is in sight (`_names_in`), or the host half
        `.np`/`.cpu` of a buffer pair's `.gpu`; else None. Follows views, placement-preserving methods and the
        local names they are bound to."""
        for _ in range(_MIRROR_STEPS):
            if isinstance(expr, ast.Subscript):
                expr = expr.value
            elif isinstance(expr, (ast.Compare, ast.BinOp)):  # `lens > 0`, `lens + 1`: the tensor on the left
                expr = expr.left
            elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
                if expr.func.attr not in VIEW_METHODS and expr.func.attr not in SAME_PLACE_METHODS:
                    return None
                expr = expr.func.value
            elif isinstance(expr, ast.Name) and names.value_at(expr) is not None:
                expr = names.value_at(expr)  # type: ignore[assignment]
            else:
                break
        if not isinstance(expr, (ast.Name, ast.Attribute)):
            return None
        known = self._names_in(class_name, function)
        if isinstance(expr, ast.Attribute) and expr.attr == "gpu":
            return f"{ast.unparse(expr.value)}.{'np' if 'np' in known else 'cpu'}"
        mirror = mirror_of(last_name(expr), known) or self._typed_mirror(expr, function)
        return ast.unparse(expr) + mirror[len(last_name(expr)) :] if mirror is not None else None

    # --- attributes -------------------------------------------------------------------------------------------

    def attribute(self, class_name: Optional[str], name: str, depth: int) -> Placement:
        if class_name not in self._classes:
            return UNKNOWN
        if name in self.fills_of(class_name):  # a record's field: the project checks no other file fills it
            if not self._exporting:
                return self._ask(PlacementQuery("record", name, class_name))
            return self.record_field(class_name, name, depth)
        return self._summary((class_name, name), lambda: self._attribute(class_name, name, depth))  # type: ignore

    def record_field(self, class_name: str, name: str, depth: int) -> Placement:
        """Where the constructor calls of record class `class_name` in this file put its field `name`."""
        return self._summary((class_name, "=" + name), lambda: self._attribute(class_name, name, depth))

    def _attribute(self, class_name: str, name: str, depth: int) -> Placement:
        assignments = self._assignments_of(class_name).get(name, [])
        filled = self.filled(class_name, name, depth)
        if not assignments and not filled:
            accessor, owner = self._method_of(class_name, name)
            if accessor is not None and is_accessor(accessor.decorator_list):
                return self._body_returns(accessor, owner, depth)  # reading a property runs its body
            return self._inherited(class_name, name, depth)
        found = []
        for method, value, line in assignments:
            if value is None:
                return UNKNOWN
            scope = self.scope(self._names_for(method, class_name), class_name, method)
            found.append(placement_of(value, scope, depth + 1).via(_assigned(name, value, line, method)))
        if None in filled:
            return UNKNOWN
        return agreed(found + filled)  # type: ignore[operator]

    def _inherited(self, class_name: str, name: str, depth: int) -> Placement:
        bases = [b.id for b in self._classes[class_name].bases if isinstance(b, ast.Name) and b.id in self._classes]
        found = agreed([self.attribute(base, name, depth + 1) for base in bases]) if bases else UNKNOWN
        if found.place is Place.UNKNOWN and found.pending is None and self._inherits_elsewhere(class_name):
            if not any(name in self._assignments_of(owner) for owner in self._class_and_bases(class_name)):
                return self._ask(PlacementQuery("attribute", name, class_name))
        return found

    def _inherits_elsewhere(self, class_name: str) -> bool:
        """Whether `class_name` or one of its bases here has a base class that this file does not define."""
        return any(
            not (isinstance(base, ast.Name) and base.id in self._classes)
            for owner in self._class_and_bases(class_name)
            for base in self._classes[owner].bases
        )

    def _assignments_of(self, class_name: str) -> Dict[str, List[Assignment]]:
        if class_name not in self._assignments:
            table: Dict[str, List[Assignment]] = {}
            for method in self._classes[class_name].body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for name, value, line in self_assignments(method):
                        table.setdefault(name, []).append((method, value, line))
            self._assignments[class_name] = table
        return self._assignments[class_name]

    def _class_and_bases(self, class_name: str) -> Iterator[str]:
        seen: Set[str] = set()
        pending = [class_name]
        while pending:
            name = pending.pop(0)
            if name in seen or name not in self._classes:
                continue
            seen.add(name)
            yield name
            pending.extend(b.id for b in self._classes[name].bases if isinstance(b, ast.Name))

    def _is_model(self, class_name: Optional[str]) -> bool:
        """Whether `class_name` is a model: a class of this file that defines `forward` or inherits it from one
        here, as an `nn.Module` does (`placement-name-activation`, `-model-input` and `-model-mask`)."""
        if class_name is None or class_name not in self._classes:
            return False
        found = self._models.get(class_name)
        if found is None:
            found = self._models[class_name] = self._method_of(class_name, "forward")[0] is not None
        return found

    # --- lists filled item by item -------------------------------------------------------------------------

    def _appended(self, function: Optional[FunctionNode]) -> Dict[str, Tuple[ast.expr, ...]]:
        """Local name -> the items `name.append(item)` and `name[i] = item` put in it in `function`. A list also
        filled otherwise (`extend`, `insert`, `+=`, a slice assigned) is left out: its items are not all known."""
        key = id(function)
        if key not in self._lists:
            items: Dict[str, List[ast.expr]] = {}
            other: Set[str] = set()
            for node in own_nodes(function) if function is not None else ():
                filled = list_fill(node)
                if filled is not None:
                    name, item = filled
                    if item is None:
                        other.add(name)
                    else:
                        items.setdefault(name, []).append(item)
            self._lists[key] = {name: tuple(found) for name, found in items.items() if name not in other}
        return self._lists[key]

    # --- shared -----------------------------------------------------------------------------------------------

    def _summary(self, key: Tuple[str, str], compute) -> Placement:  # type: ignore[no-untyped-def]
        summaries = self._hypothetical if self._assumed else self._summaries
        if key in summaries:
            return summaries[key]
        if key in self._in_progress:  # a cycle: `self.a = self.a[keep]`, `self.a = self.b`, `self.b = self.a`
            self._cycle_reads.add(key)
            return CYCLE
        self._in_progress.add(key)
        try:
            result = compute()
        finally:
            self._in_progress.discard(key)
        self._cycle_reads.discard(key)
        if self._cycle_reads & self._in_progress:
            return result  # it read a summary still being worked out: right for that one's cycle, not for keeps
        summaries[key] = UNKNOWN if result is CYCLE else result
        return summaries[key]

    # --- for other files ----------------------------------------------------------------------------------------

    def exports(self) -> PlacementExports:
        """What other files may ask of this one: the placement of what each top-level function and method
        returns (by qualname), where known or passed on; of each attribute its top-level classes assign (None
        where unknown). Only returns and assignments whose value could be a tensor (`MAY_BE_TENSOR`) are
        worked out. Asked of a fresh instance, so the answers never rest on what a walk asked first."""
        self._exporting = True  # see `CallerArguments.passed`
        returns: Dict[str, ExportedPlacement] = {}
        for function, owner in self._top_level_functions():
            qualname = f"{owner}.{function.name}" if owner is not None else function.name
            values = self._returned_values(function)
            if values and all(isinstance(v, MAY_BE_TENSOR) for v in values):
                key = (owner or "", "()" + function.name)
                found = exported(self._summary(key, lambda: self._returned(function, owner, 0)))  # noqa: B023
                if found is not None:
                    returns[qualname] = found
        attributes = {
            cls: {
                **dict.fromkeys(self._fields(cls)),
                **{name: exported(self.attribute(cls, name, 0)) for name in self._accessors(cls)},
                **{
                    name: exported(self.attribute(cls, name, 0))
                    if all(isinstance(v, MAY_BE_TENSOR) for _, v, _ in assigned) else None
                    for name, assigned in self._assignments_of(cls).items()
                },
                **{name: exported(self.attribute(cls, name, 0), record=cls) for name in self.fills_of(cls)},
            }
            for cls in self._classes
        }
        follows_first = frozenset(
            function.name for function, owner in self._top_level_functions()
            if owner is None and self._followed_parameter(function, None, 0) == first_parameter(function)
        )
        return PlacementExports(returns, {cls: table for cls, table in attributes.items() if table}, follows_first)

    def attribute_names(self) -> Tuple[Dict[str, Tuple[str, ...]], Tuple[str, ...]]:
        """The names of `exports`' attribute tables, class by class, found without placing anything, but for
        the fields that constructor calls fill; and the record classes such calls construct, whose tables may
        name more (`RecordFields.fills_of`, which walks those calls). Every file's summary keeps both, for the
        project to know which class holds an attribute (or its mirror)."""
        names = {
            cls: tuple(dict.fromkeys([*self._fields(cls), *self._accessors(cls), *self._assignments_of(cls)]))
            for cls in self._classes
        }
        return {cls: found for cls, found in names.items() if found}, tuple(self.constructed_records())

    def _names_for(self, function: FunctionNode, class_name: Optional[str]) -> NameResolver:
        scopes = [self._module_scope]
        if class_name is not None:
            if class_name not in self._class_scopes:
                self._class_scopes[class_name] = class_bindings(self._classes[class_name], self._walrus)
            scopes.append(self._class_scopes[class_name])
        if id(function) not in self._function_scopes:
            self._function_scopes[id(function)] = function_bindings(function, self._walrus)
        return NameResolver.of(*scopes, self._function_scopes[id(function)])

    def _may_have_mirror(self, name: str) -> bool:
        """Whether the source uses `name` with a mirror's suffix (`seq_lens_cpu` for `seq_lens`)."""
        return self._mirrors is None or any(name + suffix in self._mirrors for suffix in MIRROR_SUFFIXES)

    def _names_in(self, class_name: Optional[str], function: Optional[FunctionNode]) -> FrozenSet[str]:
        """The names and attribute names used in `function`, and the attributes its class assigns or declares, less the
        mirrors it makes of their own tensor (`self.lens_cpu = lens` leaves `lens` no device copy to be)."""
        key = id(function)
        if self._mirrors is not None and not self._mirrors:
            return frozenset()
        if key not in self._known_names:
            used: Set[str] = set()
            assignments: List[Union[ast.Assign, ast.AnnAssign]] = []
            for node in ast.walk(function) if function is not None else ():
                if isinstance(node, ast.Name):
                    used.add(node.id)
                elif isinstance(node, ast.Attribute):
                    used.add(node.attr)
                elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                    assignments.append(node)
            if class_name in self._classes:
                used.update(self._assignments_of(class_name))  # type: ignore[arg-type]
                used.update(class_fields(self._classes[class_name]))  # a dataclass's `seq_lens_cpu: torch.Tensor`
                used.update(self._accessors(class_name))  # a lazily computed `@property seq_lens_cpu`
            self._known_names[key] = frozenset(used) - mirrors_of_their_own_tensor(assignments)
        return self._known_names[key]


def _assigned(name: str, value: ast.expr, line: int, method: FunctionNode) -> Callable[[], str]:
    """The step of `explain`'s chain from `self.<name>` to a value assigned to it, worded only where shown."""
    return lambda: f"line {line}: `self.{name} = {ast.unparse(value)[:40]}` in `{method.name}`"

"""Where what a call returns lives: a function or method of this module (`make_ids()`, `self.make_ids()`) is
placed where every `return` of it puts its value; an imported one, or a method a class inherits from another
file, is the question for the project (`PlacementQuery` "call", "method"). A property (`is_accessor`) answers a
read of the attribute, never a call: `self.filterbank(x)` calls the module the property returns. A submodule
the class builds (`self.proj = Linear(...)`, then `self.proj(x)`) returns activations, on the device
(`placement-submodule-output`)."""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Dict, List, Optional, Tuple

from h2dlint.facts.constructs import may_be_host_device
from h2dlint.facts.multimodal_inputs import (
    Fields, declared_fields, input_placement, is_model_with_inputs, parses_inputs, read_field, read_key,
)
from h2dlint.facts.placement import placement_of
from h2dlint.facts.placement_exports import FunctionNode, exported, method_named, returned_values
from h2dlint.facts.placement_conventions import SUBMODULE, Conventions
from h2dlint.facts.placement_values import UNKNOWN, Place, Placement, agreed, short
from h2dlint.facts.registrations import is_accessor
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.settings import PROCESSOR_BASES
from h2dlint.facts.summary import PlacementQuery
from h2dlint.facts.syntax import glob_matcher, is_self, last_name


def _built_class(value: Optional[ast.expr]) -> Optional[str]:
    """`Linear` for `Linear(...)` or `nn.Linear(...)`: the class that a call of a capitalised name builds; else
    None."""
    if not isinstance(value, ast.Call) or not isinstance(value.func, (ast.Name, ast.Attribute)):
        return None
    name = last_name(value.func)
    return name if name[:1].isupper() else None


class FunctionReturns:
    """The part of `placement_summary.ModulePlacements` that places what calls return (`returned`) and what
    properties hold (`_body_returns`). It uses the host's `_functions`, `_classes`, `_imported`, `_star_import`,
    `_module_scope`, `_returns`, `_conventions`, `_ask`, `_summary`, `scope`, `_names_for`, `_class_and_bases`,
    `_inherits_elsewhere`, `_assignments_of`, `_typed_method` and `_module`."""

    _functions: Dict[str, FunctionNode]
    _classes: Dict[str, ast.ClassDef]
    _returns: Dict[int, Tuple[Optional[ast.expr], ...]]
    _conventions: Conventions
    _accessor_names: Optional[Dict[str, List[str]]] = None  # by class, worked out on first use
    _multimodal_fields: Optional[Fields] = None  # the multimodal fields the module declares, on first use
    _module: ast.Module

    def returned(
        self, call: ast.Call, class_name: Optional[str], depth: int, names: Optional[NameResolver] = None,
        caller: Optional[FunctionNode] = None,
    ) -> Placement:
        """Where what `call` (made in `caller`) returns lives, when it calls a function or a method of this
        module, or a method of an object of known class (`facts.placement_typed`); the question for the
        project when it calls one that another file may define."""
        function, owner = self._callee(call, class_name)
        if function is None and caller is not None:
            given = self._multimodal_input(call, class_name, caller)
            if given is not None:
                return given
            typed = self._typed_method(call, class_name, caller, depth)
            if typed is not None:
                return typed
        if function is None:
            built = self._submodule_output(call, class_name)
            if built is not None:
                return built
            query = self._query_for(call, class_name, names)
            if query is not None and query.kind == "call" and names is not None and caller is not None:
                query = self._with_first_argument(query, call, class_name, names, caller, depth)
            return self._ask(query) if query is not None else UNKNOWN
        return self._return_summary(function, owner, depth)

    def _multimodal_input(self, call: ast.Call, class_name: Optional[str], caller: FunctionNode) -> Optional[Placement]:
        return self.multimodal_input(read_field(call, caller), class_name, caller)

    def keyword_read(
        self, subscript: ast.Subscript, class_name: Optional[str], caller: Optional[FunctionNode]
    ) -> Optional[Placement]:
        """`kwargs["image_grid_thw"]`, read as `kwargs.get("image_grid_thw")` is (`multimodal_input`)."""
        return self.multimodal_input(read_key(subscript, caller), class_name, caller) if caller is not None else None

    def multimodal_input(
        self, name: Optional[str], class_name: Optional[str], caller: FunctionNode
    ) -> Optional[Placement]:
        """Where the input `name` read from `caller`'s `**kwargs` (`kwargs.pop("image_grid_thw")`) in a method of a
        multimodal model lives, by the field this file declares for it (`facts.multimodal_inputs`); None when
        that says nothing."""
        if name is None or not self._conventions.multimodal_inputs or class_name not in self._classes:
            return None
        owners = self._class_and_bases(class_name)  # type: ignore[arg-type]
        if not (parses_inputs(caller) or any(is_model_with_inputs(self._classes[owner]) for owner in owners)):
            return None
        fields = self.multimodal_fields()
        if name not in fields:  # declared by a processor of another file, if at all: the project knows
            return self._ask(PlacementQuery("multimodal", name, class_name or ""))  # type: ignore[attr-defined]
        return input_placement(name, fields)

    def multimodal_fields(self) -> Fields:
        """The multimodal input fields this module declares, worked out on first use."""
        if self._multimodal_fields is None:
            self._multimodal_fields = declared_fields(self._module, self._source)  # type: ignore[attr-defined]
        return self._multimodal_fields

    def _submodule_output(self, call: ast.Call, class_name: Optional[str]) -> Optional[Placement]:
        """Where `self.proj(x)` puts its result when `proj` is no method and every assignment of it in the class,
        or a base class of this file, builds an instance of a class named there (`placement-submodule-output`);
        None otherwise, and in a Hugging Face processor, which runs on the host."""
        func, exceptions = call.func, self._conventions.submodule_exceptions
        if exceptions is None or not isinstance(func, ast.Attribute) or not is_self(func.value):
            return None
        if class_name not in self._classes or self._is_processor(class_name):  # type: ignore[operator]
            return None
        owners = self._class_and_bases(class_name)  # type: ignore[arg-type]
        assigned = (value for owner in owners for _, value, _ in self._assignments_of(owner).get(func.attr, ()))
        built = {_built_class(value) for value in assigned}
        excepted = glob_matcher(exceptions)
        if not built or None in built or any(excepted(c) for c in built):  # type: ignore[arg-type]
            return None
        modules = ", ".join(f"`{c}`" for c in sorted(built))  # type: ignore[arg-type]
        return Placement(
            Place.DEVICE, f"is what the submodule `self.{func.attr}` ({modules}) returns, where the model runs",
            heuristic=SUBMODULE,
        )

    def _is_processor(self, class_name: str) -> bool:
        """Whether the class, or a base class of this file, derives from a Hugging Face processor base."""
        bases = (b for owner in self._class_and_bases(class_name) for b in self._classes[owner].bases)
        return any(last_name(b) in PROCESSOR_BASES for b in bases if isinstance(b, (ast.Name, ast.Attribute)))

    def _callee(self, call: ast.Call, class_name: Optional[str]) -> Tuple[Optional[FunctionNode], Optional[str]]:
        if isinstance(call.func, ast.Name):
            return self._functions.get(call.func.id), None
        if isinstance(call.func, ast.Attribute) and is_self(call.func.value) and class_name in self._classes:
            return self._method_of(class_name, call.func.attr)  # type: ignore[arg-type]
        return None, None

    def _method_of(self, class_name: str, name: str) -> Tuple[Optional[FunctionNode], Optional[str]]:
        """Method `name` of a class of this file, defined in it or in a base class here, with the class that
        defines it; (None, None) when none of them does."""
        for owner in self._class_and_bases(class_name):
            method = method_named(self._classes[owner], name)
            if method is not None:
                return method, owner
        return None, None

    def _return_summary(self, function: FunctionNode, owner: Optional[str], depth: int) -> Placement:
        """Where what `function` (a method of `owner`, or a module function) returns lives, worked out once."""
        return self._summary((owner or "", "()" + function.name), lambda: self._returned(function, owner, depth))

    def _query_for(
        self, call: ast.Call, class_name: Optional[str], names: Optional[NameResolver]
    ) -> Optional[PlacementQuery]:
        """What to ask the project about a call this file does not define: `f()` or `mod.f()` with `f` or `mod`
        imported (not bound in the function), `self.m()` with `m` from a base class defined elsewhere."""
        func = call.func
        if isinstance(func, ast.Attribute) and is_self(func.value):
            if class_name in self._classes and self._inherits_elsewhere(class_name):  # type: ignore[operator]
                return PlacementQuery("method", func.attr, class_name)  # type: ignore[arg-type]
            return None
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name) or (names is not None and names.binds_locally(root.id)):
            return None
        known = root.id in self._imported or (self._star_import and self._module_scope.lookup(root.id) is None)
        return PlacementQuery("call", ast.unparse(func)) if known and root.id not in self._classes else None

    def _with_first_argument(
        self, query: PlacementQuery, call: ast.Call, class_name: Optional[str], names: NameResolver,
        caller: FunctionNode, depth: int,
    ) -> PlacementQuery:
        """`query` ("call") with where the call's first argument lives (`local`), when that is known: the answer
        if the function returns its first argument where it is (`flatten_bn(x)`, `facts.placement_through`)."""
        first = call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None
        if first is None:
            return query
        placed = placement_of(first, self.scope(names, class_name, caller), depth + 1)  # type: ignore[attr-defined]
        if placed.place is Place.UNKNOWN:
            return query
        return replace(query, local=exported(placed.via(f"line {call.lineno}: `{short(call)}`")))

    def _returned(self, function: FunctionNode, owner: Optional[str], depth: int) -> Placement:
        """What a call of `function` returns: unknown for a property, whose call (`self.filterbank(x)`) calls
        the value the property returns."""
        return UNKNOWN if is_accessor(function.decorator_list) else self._body_returns(function, owner, depth)

    def _accessors(self, class_name: str) -> List[str]:
        """The properties `class_name` itself defines, and assigns no attribute of that name."""
        if self._accessor_names is None:
            self._accessor_names = {}
        if class_name not in self._accessor_names:
            assigned = self._assignments_of(class_name)
            self._accessor_names[class_name] = [
                node.name for node in self._classes[class_name].body
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_accessor(node.decorator_list)
                and node.name not in assigned
            ]
        return self._accessor_names[class_name]

    def _body_returns(self, function: FunctionNode, owner: Optional[str], depth: int) -> Placement:
        values = self._returned_values(function)
        if not values or any(value is None for value in values):
            return UNKNOWN  # a generator, or a bare `return`
        scope = self.scope(self._names_for(function, owner), owner, function)
        step = f"returned by `{function.name}()`"
        return agreed([placement_of(v, scope, depth + 1) for v in values if v is not None]).via(step)

    def _returned_values(self, function: FunctionNode) -> Tuple[Optional[ast.expr], ...]:
        """`returned_values` of `function`, walked for once."""
        key = id(function)
        if key not in self._returns:
            self._returns[key] = tuple(returned_values(function))
        return self._returns[key]

    def returned_host_device(self, expr: ast.expr, names: NameResolver, class_name: Optional[str]) -> bool:
        """Whether the device `expr` is what a function or method of this module returns (`dev = pick()`), or
        an item of it (`dev, group = pick()`), and some `return` of it gives one that may be the CPU."""
        if not isinstance(expr, ast.Name):
            return False
        unpacked = names.unpacked_position(expr)
        call, index = unpacked if unpacked is not None else (names.value_at(expr), None)
        function, owner = self._callee(call, class_name) if isinstance(call, ast.Call) else (None, None)
        if function is None:
            return False
        inner = self._names_for(function, owner)
        for returned in self._returned_values(function):
            if index is not None and isinstance(returned, ast.Tuple) and index < len(returned.elts):
                returned = returned.elts[index]
            elif index is not None:
                continue
            if returned is not None and may_be_host_device(returned, inner):
                return True
        return False

"""Attributes of objects whose class is known: `meta.seq_lens` with `meta: CommonAttentionMetadata`.

An object's class is known from a parameter's annotation, a local bound once to `Cls(...)`
(`facts.receivers.local_types`) or, for `self.batch.seq_lens`, from what its own class gives `self.batch`
(`ModuleSummary.attribute_types`). Its attribute then lives where that class puts it: what the class's methods
assign (`placement_summary`), or, when the class also declares a `<name>_cpu` (or `_host`) attribute and
`placement-sibling-host-mirror` is on, on the device, as the copy that mirror shadows. A class of this file
answers here; one of another file is asked of the project index (`PlacementQuery` "typed",
`project.placement_links`).
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterable, Optional, Tuple

from h2dlint.facts.placement_conventions import SIBLING, mirror_of
from h2dlint.facts.placement_exports import FunctionNode
from h2dlint.facts.placement_values import UNKNOWN, Place, Placement, agree_all
from h2dlint.facts.receivers import local_types, receiver
from h2dlint.facts.summary import PlacementQuery
from h2dlint.facts.syntax import last_name


def class_fields(cls: ast.ClassDef) -> Tuple[str, ...]:
    """The names the class body itself declares or assigns: dataclass fields (`seq_lens: torch.Tensor`),
    class attributes."""
    names = []
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif isinstance(node, ast.Assign):
            names.extend(target.id for target in node.targets if isinstance(target, ast.Name))
    return tuple(names)


NAMED_LIKE = "~"  # leads a receiver's root that names a parameter spelt like a class: `~forward_batch`


def named_like_classes(function: ast.FunctionDef | ast.AsyncFunctionDef, stable: Iterable[str]) -> Dict[str, str]:
    """Parameter -> `~parameter` for each parameter of `function` without an annotation, bound nowhere else
    (`stable`), whose name has two or more words (`forward_batch`): the project resolves `~forward_batch` to
    the one class spelt so, `ForwardBatch` (`placement-parameter-named-like-class`)."""
    args = function.args
    stable = frozenset(stable)
    return {
        arg.arg: NAMED_LIKE + arg.arg
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs)
        if arg.annotation is None and arg.arg in stable and "_" in arg.arg.strip("_")
    }


def local_class(known: Tuple[str, ...], classes: Iterable[str]) -> Optional[str]:
    """The top-level class of this file that an object described by `known` is an instance of, if it is one:
    `("Meta",)` or `("Meta()",)` with `class Meta` here, `("~forward_batch",)` with `class ForwardBatch`."""
    if len(known) != 1:
        return None
    if known[0].startswith(NAMED_LIKE):  # `~forward_batch`: a class of this file spelt `ForwardBatch`
        spelt = known[0][len(NAMED_LIKE):].replace("_", "").lower()
        return next((c for c in classes if c.lower() == spelt), None)
    name = known[0][:-2] if known[0].endswith("()") else known[0]
    return name if name in classes else None


def mirrored(owner: str, name: str, attributes: Iterable[str]) -> Optional[Placement]:
    """The device placement of attribute `name` of class `owner` whose `attributes` hold its host mirror."""
    mirror = mirror_of(name, frozenset(attributes))
    if mirror is None:
        return None
    return Placement(Place.DEVICE, mirror_evidence(owner, mirror), heuristic=SIBLING)


def mirror_evidence(owner: str, mirror: str) -> str:
    return f"has a host mirror `{owner}.{mirror}`, so it is the device copy"


def union_aliases(module: ast.Module) -> Dict[str, Tuple[str, ...]]:
    """Each module-level alias of a union of names: `Inputs = Union[A, B]`, `Inputs: TypeAlias = A | B`."""
    aliases = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        members = _union_of_names(value) if isinstance(target, ast.Name) else ()
        if members:
            aliases[target.id] = members  # type: ignore[attr-defined]
    return aliases


def _union_of_names(value: ast.expr) -> Tuple[str, ...]:
    if isinstance(value, ast.Subscript) and isinstance(value.value, (ast.Name, ast.Attribute)):
        if last_name(value.value) != "Union":
            return ()
        parts = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
    elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr):
        parts = [value.left, value.right]
    else:
        return ()
    names: Tuple[str, ...] = ()
    for part in parts:
        inner = _union_of_names(part) if isinstance(part, (ast.BinOp, ast.Subscript)) else ()
        if inner:
            names += inner
        elif isinstance(part, ast.Name):
            names += (part.id,)
        else:
            return ()
    return names


class TypedReceivers:
    """The part of `placement_summary.ModulePlacements` that reads objects of known class: their attributes
    (`typed_attribute`), their methods' returns (`_typed_method`) and their classes' host mirrors. It uses the
    host's `_classes`, `_conventions`, `_types`, `_function_scopes`, `attribute`, `_ask`, `_method_of`,
    `_return_summary`, `_class_and_bases`, `_assignments_of`, `_names_for`, `fills_of`, `record_field`,
    `_exporting` and `_module`."""

    _aliases: Optional[Dict[str, Tuple[str, ...]]] = None  # the module's aliases of unions, on first use
    _module: ast.Module

    def typed_attribute(
        self, expr: ast.Attribute, class_name: Optional[str], function: Optional[FunctionNode], depth: int
    ) -> Placement:
        """Where attribute `expr.attr` of an object of known class lives (`facts.placement_typed`)."""
        known, local = self._object_of(expr, function)
        if known is None:
            return UNKNOWN
        members = self._union_members(known)
        if local is None and members:  # `inputs: ImageInputs` with `ImageInputs = Union[PixelInputs, ...]` here
            return self._union_attribute(members, expr.attr, depth)
        if local is None:
            mirror = self._conventions.sibling
            return self._ask(PlacementQuery("typed", expr.attr, class_name or "", known, mirror, ast.unparse(expr)))
        found = self.attribute(local, expr.attr, depth)
        if found.place is not Place.UNKNOWN or found.pending is not None or not self._conventions.sibling:
            return found
        return mirrored(local, expr.attr, self._attribute_names(local)) or found

    def _typed_method(
        self, call: ast.Call, class_name: Optional[str], caller: FunctionNode, depth: int
    ) -> Optional[Placement]:
        """What `obj.m()` returns, for an object of known class: the summary of `m` in a class of this file,
        else the question for the project; None when the object's class is not known."""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return None
        known, local = self._object_of(func, caller)
        if known is None:
            return None
        if local is None:
            return self._ask(PlacementQuery("typed-method", func.attr, class_name or "", known))
        method, owner = self._method_of(local, func.attr)
        return self._return_summary(method, owner, depth) if method is not None else UNKNOWN

    def _typed_mirror(self, expr: ast.expr, function: Optional[FunctionNode]) -> Optional[str]:
        """The mirror's name (`seq_lens_cpu`) that the class of this file that `expr`'s object is of has."""
        if not isinstance(expr, ast.Attribute):
            return None
        local = self._object_of(expr, function)[1]
        return mirror_of(expr.attr, self._attribute_names(local)) if local is not None else None

    def _object_of(
        self, expr: ast.Attribute, function: Optional[FunctionNode]
    ) -> Tuple[Optional[Tuple[str, ...]], Optional[str]]:
        """What is known of the object whose attribute `expr` reads, as `CallRef.receiver` writes it (None for
        `self.x`, the class's own attribute, and for an object of unknown class), and the class of this file
        it is an instance of, if it is one."""
        known = receiver(expr, self._types_of(function)) if function is not None else None
        return known, local_class(known, self._classes) if known is not None else None

    def _union_attribute(self, members: Tuple[str, ...], name: str, depth: int) -> Placement:
        """Field `name` of an object of one of the union's `members` (those that declare it): where they all put
        it. Records' fields rest on what other files do too: the question is then asked of the first member
        only (a site waits on one question), with its placement agreed by them all here."""
        having = [m for m in members if name in self._fields(m)]
        records = [m for m in having if name in self.fills_of(m)]
        if not having or (records and len(records) != len(having)):
            return UNKNOWN
        if not records:
            return agree_all(self.attribute(m, name, depth) for m in having)
        found = agree_all(self.record_field(m, name, depth) for m in records)
        if self._exporting or (found.place is Place.UNKNOWN and found.pending is None):
            return found
        return self._ask(PlacementQuery("record", name, records[0]))  # its answer asks on, as `found` does

    def _union_members(self, known: Tuple[str, ...]) -> Tuple[str, ...]:
        """The classes of this file that a module-level alias of their union names (`ImageInputs =
        Union[PixelInputs, EmbeddingInputs]`, or `PixelInputs | EmbeddingInputs`), when `known` is that alias;
        else none. A member that is not a class of this file makes the alias say nothing."""
        if len(known) != 1:
            return ()
        if self._aliases is None:
            self._aliases = union_aliases(self._module)
        members = self._aliases.get(known[0], ())
        return members if members and all(m in self._classes for m in members) else ()

    def _attribute_names(self, class_name: str) -> FrozenSet[str]:
        """The attributes a class of this file and its bases here declare, assign or compute (properties)."""
        return frozenset(
            n for c in self._class_and_bases(class_name)
            for n in (*self._assignments_of(c), *self._fields(c), *self._accessors(c))
        )

    def _types_of(self, function: FunctionNode) -> Dict[str, str]:
        if id(function) not in self._types:
            self._names_for(function, None)
            bindings = self._function_scopes[id(function)]
            named = self._conventions.named_like_class
            spelt = named_like_classes(function, bindings.stable_parameters) if named else {}
            self._types[id(function)] = {**spelt, **local_types(function, bindings)}
        return self._types[id(function)]

    def _fields(self, class_name: str) -> Tuple[str, ...]:
        return class_fields(self._classes[class_name])

"""Receiver types: what a call names (`CallRef.kind`), what its receiver is known to be, and the classes that
locals, annotations and calls give, as written. The project index resolves these across files."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple, Union

from h2dlint.facts.bindings import Bindings
from h2dlint.facts.placement_exports import statements_within
from h2dlint.facts.summary import CallKind
from h2dlint.facts.syntax import dotted_name, is_none, is_self, last_name

_MAX_RECEIVER_PATH = 3  # attributes followed from the root: `self.runner.backend.plan()` follows 2


def call_target(func: ast.expr) -> Optional[Tuple[CallKind, str, Optional[str]]]:
    """How a call may name a function of this module: (kind, name, owner class)."""
    if isinstance(func, ast.Name):
        return (CallKind.NAME, func.id, None)
    if not isinstance(func, ast.Attribute):
        return None
    receiver, attr = func.value, func.attr
    if isinstance(receiver, ast.Name):
        if receiver.id in ("self", "cls"):
            return (CallKind.SELF, attr, None)
        return (CallKind.ATTR, attr, receiver.id)
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
        return (CallKind.SUPER, attr, None)
    return (CallKind.METHOD, attr, None)


_SELF_ALIAS = "self."


def _attribute_path(expr: Optional[ast.expr]) -> Tuple[Optional[ast.expr], List[str]]:
    """The root of a chain of attributes and their names from the root, at most `_MAX_RECEIVER_PATH` of them:
    (`self`, ["runner", "backend"]) for `self.runner.backend`."""
    path: List[str] = []
    while isinstance(expr, ast.Attribute) and len(path) < _MAX_RECEIVER_PATH:
        path.append(expr.attr)
        expr = expr.value
    return expr, path[::-1]


def receiver(func: ast.expr, types: Dict[str, str]) -> Optional[Tuple[str, ...]]:
    """What is known of the object a method is called on (see `CallRef.receiver`)."""
    node, path = _attribute_path(func.value if isinstance(func, ast.Attribute) else None)
    if isinstance(node, ast.Call):  # `Pool(...).alloc()`: the object a call made, as after `p = Pool(...)`
        root = call_result(node)
        return (root, *path) if root is not None else None
    if not isinstance(node, ast.Name):
        return None
    root = "self" if is_self(node) else types.get(node.id)
    if root is not None and is_self_alias(root):  # `buffers = self.buffers`: `buffers.x` is `self.buffers.x`
        return (*root.split("."), *path)
    if root is None or (root == "self" and not path):
        return None
    return (root, *path)


def is_self_alias(written: str) -> bool:
    """Whether a local's type, as `local_types` writes it, is the attribute of `self` it was bound to."""
    return written.startswith(_SELF_ALIAS)


def local_types(node: Union[ast.FunctionDef, ast.AsyncFunctionDef], bindings: Bindings) -> Dict[str, str]:
    """Names of a function that hold an instance of one class, as written: parameters annotated with it
    (`batch: Batch`), locals bound once, from a call (`pool = Pool(...)`, `pool = make_pool()`), locals
    declared with it (`relay: Relay = batch.spec_info`, however often rebound), the variable of a loop
    over a collection annotated with it (`for entry in entries:` with `entries: List[Row]`), and a local bound
    once to one of these names (`m = batch`)."""
    args = node.args
    annotations = {
        arg.arg: arg.annotation
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs)
        if arg.annotation is not None and arg.arg in bindings.stable_parameters
    }
    annotations.update(bindings.declared)
    types = {name: written for name, annotation in annotations.items() if (written := written_type(annotation))}
    for name, value in bindings.single_values.items():
        written = call_result(value) if isinstance(value, ast.Call) and name not in bindings.declared else None
        if written:
            types[name] = written
    _add_aliases(types, bindings)
    _add_self_aliases(types, bindings)
    for name, iterable in bindings.loop_iterables.items():
        collection = annotations.get(iterable.id) if isinstance(iterable, ast.Name) else None
        written = _element_type(collection) if collection is not None else None
        if written:
            types[name] = written
    return types


def _add_aliases(types: Dict[str, str], bindings: Bindings) -> None:
    """`m = metadata`, bound once, holds what `metadata` holds (an alias: vLLM's builders write
    `m = common_attn_metadata`); followed through chains of such aliases."""
    aliases = {
        name: value.id
        for name, value in bindings.single_values.items()
        if isinstance(value, ast.Name) and name not in bindings.declared and name not in types
    }
    for _ in range(len(aliases)):
        found = {name: types[source] for name, source in aliases.items() if source in types and name not in types}
        if not found:
            return
        types.update(found)


def _add_self_aliases(types: Dict[str, str], bindings: Bindings) -> None:
    """`buffers = self.buffers`, bound once, holds what `self.buffers` holds: written `self.buffers`, which
    `receiver` reads as that attribute."""
    for name, value in bindings.single_values.items():
        root, path = _attribute_path(value)
        if path and root is not None and is_self(root) and name not in types and name not in bindings.declared:
            types[name] = _SELF_ALIAS + ".".join(path)


# Annotations of a collection whose elements are all of the one type they name (`List[Row]`, `tuple[Row, ...]`).
_HOMOGENEOUS_COLLECTIONS = frozenset(
    "List list Sequence MutableSequence Iterable Iterator Collection Set set FrozenSet frozenset Deque deque".split()
)


def _element_type(annotation: ast.expr) -> Optional[str]:
    """The one class the elements of an annotated collection are: `Row` for `List[Row]`, `Sequence["Row"]`,
    `tuple[Row, ...]`, also inside `Optional[...]` or `... | None`; None for anything else."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [side for side in (annotation.left, annotation.right) if not is_none(side)]
        return _element_type(sides[0]) if len(sides) == 1 else None
    if not isinstance(annotation, ast.Subscript):
        return None
    kind, element = last_name(annotation.value), annotation.slice
    if kind == "Optional":
        return _element_type(element)
    if kind in ("Tuple", "tuple") and isinstance(element, ast.Tuple) and len(element.elts) == 2:
        item, ellipsis = element.elts
        is_variadic = isinstance(ellipsis, ast.Constant) and ellipsis.value is Ellipsis
        return written_type(item) if is_variadic else None
    return written_type(element) if kind in _HOMOGENEOUS_COLLECTIONS else None


def written_type(annotation: ast.expr) -> Optional[str]:
    """The one class an annotation names: `Batch`, `mod.Batch`, `"Batch"`, `Optional[Batch]`, `Batch | None`."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Subscript) and last_name(annotation.value) == "Optional":
        return written_type(annotation.slice)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [side for side in (annotation.left, annotation.right) if not is_none(side)]
        return written_type(sides[0]) if len(sides) == 1 else None
    return dotted_name(annotation)


def returned_class(function: Union[ast.FunctionDef, ast.AsyncFunctionDef], owner: Optional[str]) -> Optional[str]:
    """The one class a function without a return annotation returns an instance of, as written, when every
    `return` builds it: `Buffers` for `return Buffers(...)`, `owner` for `return cls(...)` in a classmethod of
    `owner`; None otherwise. The index keeps it only where it names a project class."""
    found = set()
    for node in statements_within(function.body):
        if isinstance(node, ast.Return):
            called = node.value.func if isinstance(node.value, ast.Call) else None
            written = dotted_name(called) if called is not None else None
            if written == "cls" and owner is not None:
                written = owner
            elif written is not None and not last_name(called)[:1].isupper():  # type: ignore[arg-type]
                written = None  # `make_pool(...)`: a function, not a class
            if written is None:
                return None
            found.add(written)
        elif isinstance(node, (ast.Expr, ast.Assign)) and isinstance(node.value, (ast.Yield, ast.YieldFrom)):
            return None
    return found.pop() if len(found) == 1 else None


def call_result(call: ast.Call) -> Optional[str]:
    """What a call returns, as written: "Pool()" for `Pool(...)`, "mod.make()" for `mod.make(...)`,
    "self.make()" for `self.make(...)`; the index keeps those that give a class (see `CallRef.receiver`)."""
    written = dotted_name(call.func)
    if not written:
        return None
    root, _, rest = written.partition(".")
    if root in ("self", "cls"):
        return f"self.{rest}()" if rest and "." not in rest else None
    return f"{written}()"

"""How a method uses a submodule held in an attribute of its object, read off the syntax alone: the calls that
run the submodule's `forward` (`self.visual(x, grid_thw)`; `blk(x, cu_seqlens)` in `for blk in self.blocks:`),
and the uses that cannot call it otherwise. `placement_submodule_calls` asks, for a module class, whether these
are all the uses of every attribute holding one.

A use is harmless when it neither calls the module nor lets it out of sight: `self.visual = VisionTransformer(...)`
or `= None`, `self.visual is None`, a read of one of its attributes other than `forward`
(`self.visual.spatial_merge_size`), `len(self.blocks)`. A loop over a `ModuleList` attribute (`for blk in
self.blocks`, `self.blocks[1:]`, `enumerate(self.blocks)`) is a use whose calls are those of its loop variable, which
the loop body may only call or read an attribute of. Anything else (passing the module on, storing it
elsewhere, `self.visual.forward(...)`, a lookup by name: `getattr(self, "visual")`) may call it out of sight.
"""

from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Tuple

from h2dlint.facts.placement_callers import is_first_parameter
from h2dlint.facts.placement_exports import FunctionNode
from h2dlint.facts.placement_regions import own_nodes
from h2dlint.facts.syntax import is_none, last_name, methods_of

# The containers a module's submodules are listed in (`nn.ModuleList([Block(...) for _ in range(depth)])`).
MODULE_LISTS = frozenset({"ModuleList", "Sequential"})
# What looks an attribute up by a name in a string: such a lookup may take the module elsewhere. A string naming
# it otherwise (a weight prefix: `maybe_prefix(prefix, "visual")`) does not.
_LOOKUPS = frozenset({"getattr", "setattr", "delattr", "hasattr", "get_submodule", "register_module", "add_module"})
_CALLS_ITSELF = frozenset({"forward", "__call__"})


def built_instances(value: Optional[ast.expr], class_name: str) -> List[ast.Call]:
    """The calls `ClassName(...)` that `value` stores: itself, or the items of a `ModuleList` built of them
    (`nn.ModuleList([Block(...) for _ in range(n)])`, `ModuleList([Block(a), Block(b)])`); empty otherwise."""
    if _builds(value, class_name):
        return [value]  # type: ignore[list-item]
    if not isinstance(value, ast.Call) or last_name(value.func) not in MODULE_LISTS or len(value.args) != 1:
        return []
    items = value.args[0]
    if isinstance(items, (ast.ListComp, ast.GeneratorExp)):
        return [items.elt] if _builds(items.elt, class_name) else []  # type: ignore[list-item]
    if isinstance(items, (ast.List, ast.Tuple)) and items.elts and all(_builds(e, class_name) for e in items.elts):
        return list(items.elts)  # type: ignore[arg-type]
    return []


def _builds(value: Optional[ast.AST], class_name: str) -> bool:
    """Whether `value` is `ClassName(...)`, written by its plain name."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == class_name


def imported_rows(module: ast.Module, rows: List[int], name: str) -> List[int]:
    """The rows among `rows` (where the file writes `name`) that import it under that name; empty when no
    import statement binds it."""
    spans = [
        (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(module)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        and any((alias.asname or alias.name.rpartition(".")[2]) == name for alias in node.names)
    ]
    return [row for row in rows if any(first <= row <= last for first, last in spans)]


def looked_up_by_name(module: ast.Module, attribute: str) -> bool:
    """Whether the module looks the attribute up by a name in a string (`getattr(self, "visual")`)."""
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and last_name(node.func) in _LOOKUPS:
            if any(isinstance(a, ast.Constant) and a.value == attribute for a in node.args):
                return True
    return False


def attribute_uses(method: FunctionNode, attribute: str, class_name: str) -> Optional[Tuple[List[ast.Call], int]]:
    """The calls of the module(s) `self.<attribute>` holds in `method` (see the module docstring), and how many
    places in `method` write the attribute's name for them and for its harmless uses; None where a loop over it
    lets its items out of sight."""
    calls: List[ast.Call] = []
    uses = 0
    for node in own_nodes(method):
        if isinstance(node, ast.Call) and _of_self(node.func, attribute, method):
            calls.append(node)
            uses += 1
        elif isinstance(node, (ast.For, ast.AsyncFor)) and _iterated(node.iter, attribute, method):
            found = _loop_calls(node, method)
            if found is None:
                return None
            calls.extend(found)
            uses += 1
        else:
            uses += _harmless_uses(node, attribute, method, class_name)
    return calls, uses


def calls_itself(node: ast.ClassDef) -> bool:
    """Whether a method of the class calls the module it belongs to (`self(x)`, `self.forward(x)`) with
    arguments of its own."""
    for method in methods_of(node):
        for found in own_nodes(method):
            if isinstance(found, ast.Call) and (
                is_first_parameter(found.func, method)
                or (isinstance(found.func, ast.Attribute) and found.func.attr in _CALLS_ITSELF
                    and is_first_parameter(found.func.value, method))
            ):
                return True
    return False


def _harmless_uses(node: ast.AST, attribute: str, method: FunctionNode, class_name: str) -> int:
    """How many harmless uses of `self.<attribute>` `node` holds as its direct parts."""
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        harmless = bool(built_instances(node.value, class_name)) or is_none(node.value)
        return sum(1 for target in targets if _of_self(target, attribute, method)) if harmless else 0
    if isinstance(node, ast.Compare):
        tests_none = all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) and all(map(is_none, node.comparators))
        return 1 if tests_none and _of_self(node.left, attribute, method) else 0
    if isinstance(node, ast.Attribute) and node.attr not in _CALLS_ITSELF:
        return 1 if _of_self(node.value, attribute, method) else 0
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args:
        return 1 if _of_self(node.args[0], attribute, method) else 0
    return 0


def _iterated(iterable: ast.expr, attribute: str, method: FunctionNode) -> bool:
    """Whether a loop goes over the items of `self.<attribute>`: it, a slice of it, or `enumerate` of either."""
    if isinstance(iterable, ast.Call) and last_name(iterable.func) == "enumerate" and len(iterable.args) == 1:
        iterable = iterable.args[0]
    if isinstance(iterable, ast.Subscript) and isinstance(iterable.slice, ast.Slice):
        iterable = iterable.value
    return _of_self(iterable, attribute, method)


def _loop_calls(loop: ast.For | ast.AsyncFor, method: FunctionNode) -> Optional[List[ast.Call]]:
    """The calls of the loop variable in the body of a loop over modules, where the body only calls it or reads
    an attribute of it; else None."""
    target = loop.target
    if isinstance(target, ast.Tuple) and len(target.elts) == 2:
        target = target.elts[1]  # `for i, blk in enumerate(self.blocks)`
    if not isinstance(target, ast.Name):
        return None
    calls: List[ast.Call] = []
    named = 0
    for node in _walk_body(loop):
        if isinstance(node, ast.Name) and node.id == target.id:
            named += 1
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == target.id:
            calls.append(node)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == target.id:
            if node.attr in _CALLS_ITSELF:
                return None
            named -= 1  # a read of one of its attributes
    return calls if calls and named == len(calls) else None


def _walk_body(loop: ast.For | ast.AsyncFor) -> Iterator[ast.AST]:
    for statement in (*loop.body, *loop.orelse):
        yield from ast.walk(statement)


def _of_self(expr: Optional[ast.AST], attribute: str, method: FunctionNode) -> bool:
    """Whether `expr` is `self.<attribute>`, `self` being the method's first parameter."""
    return (
        isinstance(expr, ast.Attribute) and expr.attr == attribute and is_first_parameter(expr.value, method)
    )

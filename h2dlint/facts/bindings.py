"""What one scope binds: the `Bindings` record of a module, class or function body, and the collector that
fills it (torch imports, every other name, and for functions the values and timelines of their locals).

`scopes.NameResolver` reads these records to resolve names; the placement analysis reads the values.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple, Union

from h2dlint.facts.attribute_writes import AttributeWrites
from h2dlint.facts.comprehensions import Comprehensions, loop_items
from h2dlint.facts.reaching import Binding, Position, Span, end_of, outside_blocks, start_of, statements_span
from h2dlint.facts.syntax import child_nodes, isinstance_of, target_names, type_cast

TORCH = "torch"
NUMPY = "numpy"


FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]

_START: Position = (0, 0)  # where parameters are bound: before any statement
_WHOLE: Span = ((0, 0), (1 << 30, 0))  # a function's own body, as far as its bindings are concerned


@dataclass
class Bindings:
    """Names bound in one scope: torch aliases (name -> qualified name) and everything else."""

    torch_aliases: Dict[str, str] = field(default_factory=dict)
    other: Set[str] = field(default_factory=set)
    numpy_aliases: Dict[str, str] = field(default_factory=dict)  # of names in `other`: `np` -> `numpy`
    is_class: bool = False
    # For function scopes: names bound exactly once, by a plain `name = value`, and that value.
    single_values: Dict[str, ast.expr] = field(default_factory=dict)
    # For function scopes: parameters that the body never binds again.
    stable_parameters: Set[str] = field(default_factory=set)
    # For function scopes: the default of each such parameter that has one (`device="cpu"`).
    parameter_defaults: Dict[str, ast.expr] = field(default_factory=dict)
    # For function scopes: names bound more than once -> each binding in source order (see `Binding`).
    rebound: Dict[str, List["Binding"]] = field(default_factory=dict)
    branches: List[Tuple[Span, Span]] = field(default_factory=list)  # each `if`/`else`: (body, orelse)
    # For function scopes: names declared once with an annotation (`relay: Relay = ...`) or a `typing.cast`
    # (`relay = cast(Relay, x)`) -> that annotation, which holds for every binding of the name, as type checkers
    # enforce; and a parameter or a local bound once that the body asserts to be of one class (`asserted_classes`).
    declared: Dict[str, ast.expr] = field(default_factory=dict)
    # For function scopes: names bound only as the target of one loop over a container's items -> the container
    # (`for x in xs:`, and `x` in `for i, x in enumerate(xs):` or `for x, y in zip(xs, ys):`).
    loop_iterables: Dict[str, ast.expr] = field(default_factory=dict)
    # For function scopes: every loop's binding of each such name, by where it takes effect, for names bound more
    # than once (`for x in xs:` then `x = x.view(-1)` in the body).
    loop_iterables_at: Dict[Tuple[Position, str], ast.expr] = field(default_factory=dict)
    # For function scopes: where each augmented assignment of a plain name takes effect -> its target, so that
    # `x += 1` is known to keep `x` where it was.
    augmented: Dict[Position, ast.Name] = field(default_factory=dict)
    # For function scopes: the call each `a, b = f(...)` unpacks, by where it takes effect, and by name for the
    # names bound only there (what is in the tuple is the placement analysis's business, not the value's).
    unpacked_at: Dict[Position, ast.Call] = field(default_factory=dict)
    unpacked_once: Dict[str, ast.Call] = field(default_factory=dict)
    unpacked_names: Dict[int, Tuple[str, ...]] = field(default_factory=dict)  # by id of the call: its targets
    # For function scopes: the comprehensions of the body, which bind names of their own (`[x for x in xs]`).
    comprehensions: Optional[Comprehensions] = None
    # For function scopes: the assignments of attributes of its names (`meta.lens = x`), found on first use.
    attribute_writes: Callable[[], Optional[AttributeWrites]] = lambda: None
    # For class scopes: the instance attributes that every `self.x = ...` in the class's methods puts on an
    # accelerator, worked out on first use (the collector, which knows the constructs, sets this).
    accelerator_attributes: Optional[Callable[[], FrozenSet[str]]] = None
    # For class scopes: the instance attributes the class sets only from a parameter that defaults to the host
    # (`self.device = torch.device(device)` with `device="cpu"`), worked out on first use.
    host_default_attributes: Callable[[], FrozenSet[str]] = lambda: frozenset()

    def lookup(self, name: str) -> Optional[str]:
        """The qualified torch name for `name`, "" when this scope binds it to something else, None if unbound."""
        if name in self.other:
            return ""
        return self.torch_aliases.get(name)


# `walrus=False` promises that the source has no `:=`: then only statements can bind names, and the walk
# skips every expression, which is most of a tree.


def module_bindings(module: ast.Module, walrus: bool = True) -> Bindings:
    collector = _BindingCollector(module_level=True, walrus=walrus)
    collector.visit_all(module.body)
    return collector.bindings


def function_bindings(node: FunctionNode, walrus: bool = True) -> Bindings:
    collector = _BindingCollector(module_level=False, walrus=walrus)
    for name in parameter_names(node.args):
        collector.bind(name)
    collector.visit_all(node.body)
    collector.bindings.other -= collector.declared_global
    collector.bindings.stable_parameters = {
        name for name in parameter_names(node.args) if collector.counts[name] == 1
    }
    collector.bindings.comprehensions = Comprehensions(node)
    collector.bindings.attribute_writes = functools.lru_cache(maxsize=1)(lambda: AttributeWrites(node))
    collector.bindings.parameter_defaults = {
        name: default
        for name, default in parameter_defaults(node.args)
        if name in collector.bindings.stable_parameters
    }
    collector.bindings.single_values = {
        name: value
        for name, value in collector.values.items()
        if collector.counts[name] == 1 and name not in collector.declared_global
    }
    collector.bindings.rebound = {
        name: sorted(timeline, key=lambda binding: binding[0])
        for name, timeline in collector.timeline.items()
        if collector.counts[name] > 1 and name not in collector.declared_global
    }
    collector.bindings.declared = {
        name: annotations[0]
        for name, annotations in collector.annotations.items()
        if len(annotations) == 1 and name not in collector.declared_global
    }
    collector.bindings.declared.update(
        (name, written)
        for name, written in asserted_classes(node.body).items()
        if name in collector.bindings.stable_parameters or name in collector.bindings.single_values
    )
    collector.bindings.augmented = collector.augmented
    collector.bindings.unpacked_at = {where: call for where, (call, _) in collector.unpacked.items()}
    collector.bindings.unpacked_names = {id(call): names for call, names in collector.unpacked.values()}
    collector.bindings.unpacked_once = {
        name: call
        for call, targets in collector.unpacked.values()
        for name in targets
        if collector.counts[name] == 1 and name not in collector.declared_global
    }
    collector.bindings.loop_iterables = {
        name: iterable
        for name, iterable in collector.loop_iterables.items()
        if collector.counts[name] == 1 and name not in collector.declared_global
    }
    return collector.bindings


def asserted_classes(body: Iterable[ast.stmt]) -> Dict[str, ast.expr]:
    """Names that a statement of `body` itself asserts to be an instance of one class -> that class:
    `assert isinstance(metadata, FlashMetadata)` narrows `metadata` for the rest of the body, as type checkers
    read it; a name asserted of two classes is left out."""
    found: Dict[str, List[ast.expr]] = {}
    for statement in body:
        asserted = isinstance_of(statement.test) if isinstance(statement, ast.Assert) else None
        if asserted is not None:
            found.setdefault(asserted[0], []).append(asserted[1])
    return {name: classes[0] for name, classes in found.items() if len({ast.dump(c) for c in classes}) == 1}


def class_bindings(node: ast.ClassDef, walrus: bool = True) -> Bindings:
    collector = _BindingCollector(module_level=False, walrus=walrus)
    collector.visit_all(node.body)
    collector.bindings.is_class = True
    return collector.bindings


def parameter_defaults(args: ast.arguments) -> Iterable[Tuple[str, ast.expr]]:
    """Each parameter that has a default, with it: the last positional ones, and keyword-only ones."""
    positional = (*args.posonlyargs, *args.args)
    yield from zip((arg.arg for arg in positional[len(positional) - len(args.defaults):]), args.defaults)
    yield from ((arg.arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults) if default is not None)


def parameter_names(args: ast.arguments) -> Iterable[str]:
    for arg in (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg):
        if arg is not None:
            yield arg.arg


class _BindingCollector:
    """Collects the names bound directly in one scope, without entering nested scopes."""

    def __init__(self, module_level: bool, walrus: bool) -> None:
        self.bindings = Bindings()
        self._walrus = walrus
        self.declared_global: Set[str] = set()
        self.counts: Dict[str, int] = {}
        self.values: Dict[str, ast.expr] = {}
        self.timeline: Dict[str, List[Binding]] = {}
        self.annotations: Dict[str, List[ast.expr]] = {}
        self.loop_iterables: Dict[str, ast.expr] = {}
        self.augmented: Dict[Position, ast.Name] = {}
        self.unpacked: Dict[Position, Tuple[ast.Call, Tuple[str, ...]]] = {}  # the call and the names it binds
        self._block: Span = _WHOLE  # the statement list being visited
        self._module_level = module_level
        self._except_depth = 0

    def bind(self, name: str, where: Position = _START, value: Optional[ast.expr] = None) -> None:
        """`name` is bound, taking effect at `where`; `value` is what a plain `name = value` assigns."""
        self.counts[name] = self.counts.get(name, 0) + 1
        if not self._module_level:
            self.timeline.setdefault(name, []).append((where, value, self._block))
        # `try: import torch / except ImportError: torch = None` keeps torch meaning torch at module level.
        if self._module_level and self._except_depth:
            return
        self.bindings.other.add(name)

    def visit_all(self, nodes: Iterable[ast.AST]) -> None:
        for node in nodes:
            self.visit(node)

    def visit(self, node: ast.AST) -> None:
        handler = _BINDERS.get(type(node))
        if handler is None or handler(self, node):
            self._visit_children(node)

    def _visit_children(self, node: ast.AST) -> None:
        blocks = _BLOCK_FIELDS.get(node.__class__)
        for child in child_nodes(node) if blocks is None else outside_blocks(node, blocks):
            if self._walrus or not isinstance(child, ast.expr):
                self.visit(child)
        if isinstance(node, ast.If) and node.orelse:
            self.bindings.branches.append((statements_span(node.body), statements_span(node.orelse)))
        for name in blocks or ():
            statements = getattr(node, name, None)
            if statements:
                outer, self._block = self._block, statements_span(statements)
                self.visit_all(statements)
                self._block = outer

    # Each binder records what `node` binds and returns whether to visit its children.

    def _bind_targets(self, target: ast.expr, where: Position) -> None:
        for name in target_names(target):
            self.bind(name, where)

    def _nested_scope(self, node: "ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef") -> bool:
        self.bind(node.name, start_of(node))  # a nested scope binds its own name here, and nothing else
        return False

    def _except_handler(self, node: ast.ExceptHandler) -> bool:
        if node.name is not None:
            self.bind(node.name, start_of(node))
        self._except_depth += 1
        self._visit_children(node)
        self._except_depth -= 1
        return False

    def _assign(self, node: ast.Assign) -> bool:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self._bind_value(node.targets[0].id, end_of(node), node.value)
            cast = type_cast(node.value) if isinstance(node.value, ast.Call) else None
            if cast is not None:  # `x = cast(T, v)` declares `x` a `T`, as `x: T = v` does
                self.annotations.setdefault(node.targets[0].id, []).append(cast[0])
            return True
        if _is_unpacking(node):  # `a, b = x, y`: each name its own value
            for target, value in zip(node.targets[0].elts, node.value.elts):  # type: ignore[attr-defined]
                if isinstance(target, ast.Name):
                    self._bind_value(target.id, end_of(node), value)
                else:
                    self._bind_targets(target, end_of(node))
            return True
        if _unpacks_call(node):
            names = tuple(target.id for target in node.targets[0].elts)  # type: ignore[attr-defined]
            self.unpacked[end_of(node)] = (node.value, names)  # type: ignore[assignment]
        for target in node.targets:
            self._bind_targets(target, end_of(node))
        return True

    def _bind_value(self, name: str, where: Position, value: ast.expr) -> None:
        self.bind(name, where, value)
        self.values[name] = value

    def _assign_target(self, node: "ast.AnnAssign | ast.AugAssign | ast.NamedExpr | ast.For") -> bool:
        # A loop binds its target before each run of its body; the others once their value is computed.
        is_loop = isinstance(node, (ast.For, ast.AsyncFor))
        where = end_of(node.target) if is_loop else end_of(node)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            self._bind_value(node.target.id, where, node.value)  # `ids: List[Tensor] = []`, as `ids = []`
        else:
            self._bind_targets(node.target, where)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            self.augmented[where] = node.target
        if is_loop:
            for name, iterable in loop_items(node.target, node.iter):  # type: ignore[union-attr]
                self.loop_iterables[name] = iterable
                self.bindings.loop_iterables_at[(where, name)] = iterable
        elif isinstance(node.target, ast.Name) and isinstance(node, ast.AnnAssign):
            self.annotations.setdefault(node.target.id, []).append(node.annotation)
        return True

    def _with_item(self, node: ast.withitem) -> bool:
        if node.optional_vars is not None:
            self._bind_targets(node.optional_vars, end_of(node.optional_vars))
        return True

    def _delete(self, node: ast.Delete) -> bool:
        for target in node.targets:
            self._bind_targets(target, end_of(node))
        return True

    def _match_as(self, node: ast.AST) -> bool:
        name = getattr(node, "name", None)
        if name is not None:
            self.bind(name, end_of(node))
        return True

    def _global(self, node: "ast.Global | ast.Nonlocal") -> bool:
        self.declared_global.update(node.names)
        return False

    def _import(self, node: ast.Import) -> bool:
        for alias in node.names:
            if alias.asname is not None:
                self._bind_import(alias.asname, alias.name, end_of(node))
            else:
                top = alias.name.split(".")[0]
                self._bind_import(top, top, end_of(node))
        return False

    def _import_from(self, node: ast.ImportFrom) -> bool:
        if node.level or node.module is None:
            return False
        for alias in node.names:
            if alias.name == "*":
                return False
            self._bind_import(alias.asname or alias.name, f"{node.module}.{alias.name}", end_of(node))
        return False

    def _bind_import(self, bound: str, qualified: str, where: Position) -> None:
        if qualified == TORCH or qualified.startswith(TORCH + "."):
            self.counts[bound] = self.counts.get(bound, 0) + 1
            self.bindings.torch_aliases[bound] = qualified
        else:
            self.bind(bound, where)
            if qualified == NUMPY or qualified.startswith(NUMPY + "."):
                self.bindings.numpy_aliases[bound] = qualified


# The fields of compound statements that hold statement lists: a binding made in one may not reach code after it.
_BLOCK_FIELDS = {
    kind: tuple(f for f in ("body", "orelse", "finalbody") if f in kind._fields)
    for kind in (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.ExceptHandler)
    + tuple(getattr(ast, name) for name in ("TryStar", "match_case") if hasattr(ast, name))
}


def _is_unpacking(node: ast.Assign) -> bool:
    """`a, b = x, y` with as many plain names or other targets as values, and no starred item."""
    if len(node.targets) != 1 or not isinstance(node.targets[0], (ast.Tuple, ast.List)):
        return False
    targets, value = node.targets[0].elts, node.value
    return (
        isinstance(value, (ast.Tuple, ast.List))
        and len(value.elts) == len(targets)
        and not any(isinstance(item, ast.Starred) for item in (*targets, *value.elts))
    )


def _unpacks_call(node: ast.Assign) -> bool:
    """`a, b = f(...)`: plain names, none starred, bound from the items of what one call returns."""
    if len(node.targets) != 1 or not isinstance(node.targets[0], (ast.Tuple, ast.List)):
        return False
    return isinstance(node.value, ast.Call) and all(isinstance(t, ast.Name) for t in node.targets[0].elts)


_BINDERS = {
    ast.FunctionDef: _BindingCollector._nested_scope,
    ast.AsyncFunctionDef: _BindingCollector._nested_scope,
    ast.ClassDef: _BindingCollector._nested_scope,
    ast.Lambda: lambda collector, node: False,
    ast.ExceptHandler: _BindingCollector._except_handler,
    ast.Assign: _BindingCollector._assign,
    ast.AnnAssign: _BindingCollector._assign_target,
    ast.AugAssign: _BindingCollector._assign_target,
    ast.NamedExpr: _BindingCollector._assign_target,
    ast.For: _BindingCollector._assign_target,
    ast.AsyncFor: _BindingCollector._assign_target,
    ast.withitem: _BindingCollector._with_item,
    ast.Delete: _BindingCollector._delete,
    ast.Global: _BindingCollector._global,
    ast.Nonlocal: _BindingCollector._global,
    ast.Import: _BindingCollector._import,
    ast.ImportFrom: _BindingCollector._import_from,
}
if hasattr(ast, "MatchAs"):  # Python 3.10+
    _BINDERS[ast.MatchAs] = _BindingCollector._match_as

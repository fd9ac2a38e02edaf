"""Which names refer to torch: import aliases per scope, and local rebinding that hides them.

A scope (module, class or function) records the torch imports made in it and every other name it binds.
A name is torch only when the nearest scope that binds it binds it to a torch import and nothing else.
This is much cheaper than libcst's ScopeProvider and QualifiedNameProvider, and enough for call-site matching.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Union

from h2dlint.syntax import child_nodes

TORCH = "torch"

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]


@dataclass
class Bindings:
    """Names bound in one scope: torch aliases (name -> qualified name) and everything else."""

    torch_aliases: Dict[str, str] = field(default_factory=dict)
    other: Set[str] = field(default_factory=set)
    is_class: bool = False
    # For function scopes: names bound exactly once, by a plain `name = value`, and that value.
    single_values: Dict[str, ast.expr] = field(default_factory=dict)
    # For function scopes: parameters that the body never binds again.
    stable_parameters: Set[str] = field(default_factory=set)

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
    collector.bindings.single_values = {
        name: value
        for name, value in collector.values.items()
        if collector.counts[name] == 1 and name not in collector.declared_global
    }
    return collector.bindings


def class_bindings(node: ast.ClassDef, walrus: bool = True) -> Bindings:
    collector = _BindingCollector(module_level=False, walrus=walrus)
    collector.visit_all(node.body)
    collector.bindings.is_class = True
    return collector.bindings


def parameter_names(args: ast.arguments) -> Iterable[str]:
    for arg in (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg):
        if arg is not None:
            yield arg.arg


class NameResolver:
    """Resolves expressions to torch qualified names (`th.tensor` -> `torch.tensor`) in a stack of scopes."""

    def __init__(self) -> None:
        self._scopes: List[Bindings] = []

    def push(self, bindings: Bindings) -> None:
        self._scopes.append(bindings)

    def pop(self) -> None:
        self._scopes.pop()

    def resolve_name(self, name: str) -> Optional[str]:
        innermost = len(self._scopes) - 1
        for depth in range(innermost, -1, -1):
            scope = self._scopes[depth]
            # Python does not look up names in an enclosing class body from a nested function.
            if scope.is_class and depth != innermost:
                continue
            found = scope.lookup(name)
            if found is not None:
                return found or None
        return None

    def local_value(self, name: str) -> Optional[ast.expr]:
        """The value of `name` when the current function binds it once, by a plain assignment."""
        if not self._scopes:
            return None
        return self._scopes[-1].single_values.get(name)

    def qualify(self, expr: ast.expr) -> Optional[str]:
        """`torch.tensor` for `th.tensor`, `tensor` (from torch import tensor), ...; None when not torch."""
        if isinstance(expr, ast.Name):
            return self.resolve_name(expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.qualify(expr.value)
            return f"{base}.{expr.attr}" if base else None
        return None


def _target_names(target: ast.expr) -> Iterable[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


class _BindingCollector:
    """Collects the names bound directly in one scope, without entering nested scopes."""

    def __init__(self, module_level: bool, walrus: bool) -> None:
        self.bindings = Bindings()
        self._walrus = walrus
        self.declared_global: Set[str] = set()
        self.counts: Dict[str, int] = {}
        self.values: Dict[str, ast.expr] = {}
        self._module_level = module_level
        self._except_depth = 0

    def bind(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1
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
        for child in child_nodes(node):
            if self._walrus or not isinstance(child, ast.expr):
                self.visit(child)

    # Each binder records what `node` binds and returns whether to visit its children.

    def _bind_targets(self, target: ast.expr) -> None:
        for name in _target_names(target):
            self.bind(name)

    def _nested_scope(self, node: "ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef") -> bool:
        self.bind(node.name)  # a nested scope binds its own name here, and nothing else
        return False

    def _except_handler(self, node: ast.ExceptHandler) -> bool:
        if node.name is not None:
            self.bind(node.name)
        self._except_depth += 1
        self._visit_children(node)
        self._except_depth -= 1
        return False

    def _assign(self, node: ast.Assign) -> bool:
        for target in node.targets:
            self._bind_targets(target)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.values[node.targets[0].id] = node.value
        return True

    def _assign_target(self, node: "ast.AnnAssign | ast.AugAssign | ast.NamedExpr | ast.For") -> bool:
        self._bind_targets(node.target)
        return True

    def _with_item(self, node: ast.withitem) -> bool:
        if node.optional_vars is not None:
            self._bind_targets(node.optional_vars)
        return True

    def _delete(self, node: ast.Delete) -> bool:
        for target in node.targets:
            self._bind_targets(target)
        return True

    def _match_as(self, node: ast.AST) -> bool:
        name = getattr(node, "name", None)
        if name is not None:
            self.bind(name)
        return True

    def _global(self, node: "ast.Global | ast.Nonlocal") -> bool:
        self.declared_global.update(node.names)
        return False

    def _import(self, node: ast.Import) -> bool:
        for alias in node.names:
            if alias.asname is not None:
                self._bind_import(alias.asname, alias.name)
            else:
                top = alias.name.split(".")[0]
                self._bind_import(top, top)
        return False

    def _import_from(self, node: ast.ImportFrom) -> bool:
        if node.level or node.module is None:
            return False
        for alias in node.names:
            if alias.name == "*":
                return False
            self._bind_import(alias.asname or alias.name, f"{node.module}.{alias.name}")
        return False

    def _bind_import(self, bound: str, qualified: str) -> None:
        self.counts[bound] = self.counts.get(bound, 0) + 1
        if qualified == TORCH or qualified.startswith(TORCH + "."):
            self.bindings.torch_aliases[bound] = qualified
        else:
            self.bind(bound)


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

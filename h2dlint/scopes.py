"""Which names refer to torch: import aliases per scope, and local rebinding that hides them.

A scope (module, class or function) records the torch imports made in it and every other name it binds.
A name is torch only when the nearest scope that binds it binds it to a torch import and nothing else.
This is cheaper than libcst's ScopeProvider and QualifiedNameProvider, and enough for call-site matching.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Union

import libcst as cst

TORCH = "torch"


@dataclass
class Bindings:
    """Names bound in one scope: torch aliases (name -> qualified name) and everything else."""

    torch_aliases: Dict[str, str] = field(default_factory=dict)
    other: Set[str] = field(default_factory=set)
    is_class: bool = False
    # For function scopes: names bound exactly once, by a plain `name = value`, and that value.
    single_values: Dict[str, cst.BaseExpression] = field(default_factory=dict)

    def lookup(self, name: str) -> Optional[str]:
        """The qualified torch name for `name`, "" when this scope binds it to something else, None if unbound."""
        if name in self.other:
            return ""
        return self.torch_aliases.get(name)


def module_bindings(module: cst.Module) -> Bindings:
    collector = _BindingCollector(module_level=True)
    for statement in module.body:
        statement.visit(collector)
    return collector.bindings


def function_bindings(node: cst.FunctionDef) -> Bindings:
    collector = _BindingCollector(module_level=False)
    node.params.visit(_ParamCollector(collector))
    node.body.visit(collector)
    collector.bindings.other -= collector.declared_global
    collector.bindings.single_values = {
        name: value
        for name, value in collector.values.items()
        if collector.counts[name] == 1 and name not in collector.declared_global
    }
    return collector.bindings


def class_bindings(node: cst.ClassDef) -> Bindings:
    collector = _BindingCollector(module_level=False)
    node.body.visit(collector)
    collector.bindings.is_class = True
    return collector.bindings


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

    def local_value(self, name: str) -> Optional[cst.BaseExpression]:
        """The value of `name` when the current function binds it once, by a plain assignment."""
        if not self._scopes:
            return None
        return self._scopes[-1].single_values.get(name)

    def qualify(self, expr: cst.BaseExpression) -> Optional[str]:
        """`torch.tensor` for `th.tensor`, `tensor` (from torch import tensor), ...; None when not torch."""
        if isinstance(expr, cst.Name):
            return self.resolve_name(expr.value)
        if isinstance(expr, cst.Attribute):
            base = self.qualify(expr.value)
            return f"{base}.{expr.attr.value}" if base else None
        return None


def _dotted(expr: Union[cst.BaseExpression, cst.Attribute, cst.Name]) -> str:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return f"{_dotted(expr.value)}.{expr.attr.value}"
    return ""


def _target_names(target: cst.BaseExpression) -> Iterable[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)


class _ParamCollector(cst.CSTVisitor):
    def __init__(self, collector: "_BindingCollector") -> None:
        self.collector = collector

    def visit_Param(self, node: cst.Param) -> bool:
        self.collector._bind(node.name.value)
        return False  # defaults and annotations are evaluated in the enclosing scope


class _BindingCollector(cst.CSTVisitor):
    """Collects the names bound directly in one scope, without entering nested scopes."""

    def __init__(self, module_level: bool) -> None:
        self.bindings = Bindings()
        self.declared_global: Set[str] = set()
        self.counts: Dict[str, int] = {}
        self.values: Dict[str, cst.BaseExpression] = {}
        self._module_level = module_level
        self._except_depth = 0

    def _bind(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1
        # `try: import torch / except ImportError: torch = None` keeps torch meaning torch at module level.
        if self._module_level and self._except_depth:
            return
        self.bindings.other.add(name)

    def _bind_targets(self, target: cst.BaseExpression) -> None:
        for name in _target_names(target):
            self._bind(name)

    # Nested scopes bind their own name here, and nothing else.
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._bind(node.name.value)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._bind(node.name.value)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind_targets(node.name.name)
        self._except_depth += 1

    def leave_ExceptHandler(self, original_node: cst.ExceptHandler) -> None:
        self._except_depth -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_targets(target.target)
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self.values[node.targets[0].target.value] = node.value

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind_targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_targets(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_targets(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind_targets(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_targets(node.asname.name)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind_targets(node.target)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self._bind(node.name.value)

    def visit_Global(self, node: cst.Global) -> None:
        self.declared_global.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.declared_global.update(item.name.value for item in node.names)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            module = _dotted(alias.name)
            if alias.asname is not None:
                bound = _dotted(alias.asname.name)
                self._bind_import(bound, module)
            else:
                top = module.split(".")[0]
                self._bind_import(top, top)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        module = _dotted(node.module)
        for alias in node.names:
            imported = _dotted(alias.name)
            bound = _dotted(alias.asname.name) if alias.asname is not None else imported
            self._bind_import(bound, f"{module}.{imported}")

    def _bind_import(self, bound: str, qualified: str) -> None:
        self.counts[bound] = self.counts.get(bound, 0) + 1
        if qualified == TORCH or qualified.startswith(TORCH + "."):
            self.bindings.torch_aliases[bound] = qualified
        else:
            self._bind(bound)

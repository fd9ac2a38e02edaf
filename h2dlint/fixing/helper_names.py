"""Which name a fixed file calls the runtime helper by: one it already imports, or a new import's name."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import AbstractSet, FrozenSet, Optional


@dataclass(frozen=True)
class HelperName:
    reference: str  # the expression that calls the helper: `h2d_tensor`, `_h2d_tensor`, `h2d_runtime.h2d_tensor`
    import_as: Optional[str] = None  # when the file must import it: the name it binds (`h2d_tensor`, `_h2d_tensor`)


def helper_name(tree: ast.Module, module: str, function: str) -> HelperName:
    """How the file names `module.function`. A name the file also binds to something else (`h2d_tensor = None`,
    a parameter) would make the fixed call call that instead, so such a name is neither reused nor added: the
    import takes a free alias."""
    taken = names_bound_elsewhere(tree, module)
    existing = _existing_reference(tree, module, function, taken)
    if existing is not None:
        return HelperName(existing)
    name = function
    while name in taken:
        name = "_" + name
    return HelperName(name, name)


def _existing_reference(tree: ast.Module, module: str, function: str, taken: AbstractSet[str]) -> Optional[str]:
    for statement in tree.body:  # only module-level imports are visible everywhere in the file
        if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module == module:
            for alias in statement.names:
                if alias.name == function and (alias.asname or function) not in taken:
                    return alias.asname or function
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.name == module and (alias.asname or module.split(".")[0]) not in taken:
                    return f"{alias.asname or module}.{function}"
    return None


def names_bound_elsewhere(tree: ast.Module, module: str) -> FrozenSet[str]:
    """Every name the file binds, in any scope, other than by importing from the helper's `module`."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, ast.Import):
            bound.update(a.asname or a.name.split(".")[0] for a in node.names if a.name != module)
        elif isinstance(node, ast.ImportFrom) and not (node.level == 0 and node.module == module):
            bound.update(a.asname or a.name for a in node.names)
    return frozenset(bound)

"""How a fixed file reaches the runtime helper: reuse an import it already has, or add one in the right place."""

from __future__ import annotations

import ast
from typing import Optional, Tuple

from h2dlint.positions import line_break_of, line_starts
from h2dlint.summary import Edit, Span


def helper_reference(tree: ast.Module, text: str, module: str, function: str) -> Tuple[str, Optional[Edit]]:
    """The expression that names `module.function` in this file, and the import edit it needs (if any)."""
    existing = _existing_reference(tree, module, function)
    if existing is not None:
        return existing, None
    return function, _import_edit(tree, text, f"from {module} import {function}")


def _existing_reference(tree: ast.Module, module: str, function: str) -> Optional[str]:
    for statement in tree.body:  # only module-level imports are visible everywhere in the file
        if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module == module:
            for alias in statement.names:
                if alias.name == function:
                    return alias.asname or function
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.name == module:
                    return f"{alias.asname or module}.{function}"
    return None


def _import_edit(tree: ast.Module, text: str, statement: str) -> Edit:
    """Insert after the module's leading docstring, `from __future__` imports and other imports."""
    newline = line_break_of(text)
    anchor = _last_leading_statement(tree)
    if anchor is None:  # a fix implies a statement; comments above it stay above
        first = tree.body[0].lineno
        return Edit(Span(first, 1, first, 1), statement + newline)
    row = anchor.end_lineno or anchor.lineno
    starts = line_starts(text)
    if row < len(starts):
        return Edit(Span(row + 1, 1, row + 1, 1), statement + newline)
    end = len(text) - starts[row - 1] + 1  # the file ends without a line break
    return Edit(Span(row, end, row, end), newline + statement)


def _last_leading_statement(tree: ast.Module) -> Optional[ast.stmt]:
    last = None
    for index, statement in enumerate(tree.body):
        if index == 0 and _is_docstring(statement) or isinstance(statement, (ast.Import, ast.ImportFrom)):
            last = statement
        else:
            break
    return last


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )

"""How a fixed file reaches the runtime helper: reuse an import it already has, or add one in the right place."""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import AbstractSet, FrozenSet, Optional, Sequence, Tuple

from h2dlint.facts.positions import line_break_of, line_starts, skip_trivia, span_of
from h2dlint.facts.summary import Edit, Span


def helper_reference(
    tree: ast.Module, text: str, lines: Sequence[str], module: str, function: str
) -> Tuple[str, Optional[Edit]]:
    """The expression that names `module.function` in this file, and the import edit it needs (if any).
    A name the file also binds to something else (`h2d_tensor = None`, a parameter) would make the fixed
    call call that instead, so such a name is neither reused nor added: the import takes a free alias."""
    taken = _names_bound_elsewhere(tree, module)
    existing = _existing_reference(tree, module, function, taken)
    if existing is not None:
        return existing, None
    name = function
    while name in taken:
        name = "_" + name
    alias = "" if name == function else f" as {name}"
    return name, _import_edit(tree, text, lines, f"from {module} import {function}{alias}")


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


@lru_cache(maxsize=2)  # asked once per fix, with the same tree: a file with thousands of fixes walks it once
def _names_bound_elsewhere(tree: ast.Module, module: str) -> FrozenSet[str]:
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


def _import_edit(tree: ast.Module, text: str, lines: Sequence[str], statement: str) -> Edit:
    """Insert after the module's leading docstring, `from __future__` imports and other imports."""
    newline = line_break_of(text)
    anchor = _last_leading_statement(tree)
    if anchor is None:  # a fix implies a statement; comments above it stay above
        first = tree.body[0].lineno
        return Edit(Span(first, 1, first, 1), statement + newline)
    row = _logical_line_end(tree, lines, anchor)
    starts = line_starts(text)
    if row < len(starts):
        return Edit(Span(row + 1, 1, row + 1, 1), statement + newline)
    end = len(text) - starts[row - 1] + 1  # the file ends without a line break
    return Edit(Span(row, end, row, end), newline + statement)


def _logical_line_end(tree: ast.Module, lines: Sequence[str], statement: ast.stmt) -> int:
    """The last row of the logical line that ends with `statement` or goes on after it: `import os; x = (1,`
    continues on the next row, and so does a line ending with a backslash."""
    following = iter(tree.body[tree.body.index(statement) + 1 :])
    end = span_of(statement, lines)
    row, column = end.end_row, end.end_column
    while True:
        row, column, line_break = skip_trivia(lines, row, column)
        if line_break is not None:
            return line_break
        if lines[row - 1][column - 1] == ";":
            column += 1
        else:  # code after `;` on the same logical line: the next statement
            end = span_of(next(following), lines)
            row, column = end.end_row, end.end_column


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

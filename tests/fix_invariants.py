"""What every fix must keep, whatever the input: shared by the fix fixtures and the fuzzing.

Each check returns a list of problems (empty when the fix is sound), so that a long fuzzing run can count them
by kind instead of stopping at the first.
"""

from __future__ import annotations

import ast
import re
import symtable
from typing import Iterable, List, Sequence, Set

from h2dlint.facts.positions import lines_with_endings, source_lines
from h2dlint.facts.settings import Settings
from h2dlint.facts.summary import SAFE
from h2dlint.fixing.autofix import fix_source
from h2dlint.project.findings import Diagnostic

HELPER_IMPORT = "from h2dlint.runtime import "  # the default helper module's import line


def parse_problems(fixed: str, original_compiles: bool) -> List[str]:
    """Fixed code parses, and compiles whenever the original did."""
    try:
        if original_compiles:
            compile(fixed, "<fixed>", "exec", dont_inherit=True)
        else:
            ast.parse(fixed)
    except (SyntaxError, ValueError) as error:
        return [f"the fixed code does not compile: {error}"]
    return []


def idempotence_problems(fixed: str, settings: Settings, unsafe: bool = True) -> List[str]:
    """A second fix (with the same `unsafe` choice) changes nothing."""
    again, count, _ = fix_source(fixed, settings, unsafe=unsafe)
    if again != fixed or count:
        return [f"a second fix changed the code again ({count} fixes)"]
    return []


def fixable_left_problems(remaining: Iterable[Diagnostic], unsafe: bool = False) -> List[str]:
    """Nothing that the fix applies (safe fixes; with `unsafe`, all) is left once fixing stops."""
    return [f"still fixable after fixing: {d.span.row}:{d.span.column} {d.code}" for d in remaining
            if d.fix and (unsafe or d.fix.applicability == SAFE)]


def flagged_rows(diagnostics: Iterable[Diagnostic]) -> Set[int]:
    """The rows of the constructs a fix may rewrite."""
    return {row for d in diagnostics if d.fix is not None for row in range(d.span.row, d.span.end_row + 1)}


def kept_line_problems(before: str, after: str, diagnostics: Sequence[Diagnostic]) -> List[str]:
    """Every line outside the flagged constructs survives the fix unchanged and in order (lines are added only
    for the helper's import, and flagged lines may change)."""
    flagged = flagged_rows(diagnostics)
    kept = [line for row, line in enumerate(source_lines(before), 1)
            if row not in flagged and not line.lstrip().startswith(HELPER_IMPORT)]  # merged into, it changes
    remaining = iter(source_lines(after))
    for line in kept:
        if not any(candidate == line for candidate in remaining):  # consumes `after` up to the match
            return [f"a line outside the flagged constructs changed or moved: {line!r}"]
    return []


def helper_shadowing_problems(before: str, after: str, helper_module: str = "h2dlint.runtime") -> List[str]:
    """The helper that the fixed calls name is what they call: no scope binds that name to anything else
    (`h2d_tensor = None`, a parameter `h2d_tensor`). Judged with `symtable`, independently of the fixer."""
    imported = {alias.asname or alias.name for statement in ast.parse(after).body
                if isinstance(statement, ast.ImportFrom) and statement.module == helper_module
                for alias in statement.names}
    called = {name for name in imported if _calls(name, after) > _calls(name, before)}
    try:
        tables = [symtable.symtable(after, "<fixed>", "exec")]
    except SyntaxError:  # code that does not compile (nor did the original: see `parse_problems`)
        return []
    problems = []
    while tables:
        table = tables.pop()
        tables += table.get_children()
        for name in called & set(table.get_identifiers()):
            symbol = table.lookup(name)
            rebound = symbol.is_assigned() or symbol.is_namespace() or symbol.is_parameter()
            if rebound or (symbol.is_imported() and table.get_type() != "module"):
                problems.append(f"the fix calls `{name}`, which `{table.get_name()}` binds to something else")
    return problems


def _calls(name: str, text: str) -> int:
    return len(re.findall(rf"(?<![\w.]){re.escape(name)}\(", text))


def import_placement_problems(before: str, after: str, helper_module: str = "h2dlint.runtime") -> List[str]:
    """An import of the helper that the fix added runs before any other code: only the docstring, imports and
    statements sharing their logical lines (after `;`) come before it."""
    added = after.count(f"from {helper_module} import ") - before.count(f"from {helper_module} import ")
    if added <= 0:
        return []
    lines = lines_with_endings(after)
    body = ast.parse(after).body
    for index, statement in enumerate(body):
        if _imports_helper(statement, helper_module):
            return []  # the first helper import (or the torch guard holding it): everything before it was allowed
        leading = isinstance(statement, (ast.Import, ast.ImportFrom)) or (
            index == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
        if not leading and not (index and _same_logical_line(lines, body[index - 1], statement)):
            return [f"the helper's import comes after code at row {statement.lineno}, which may run first"]
    return []


def _imports_helper(statement: ast.stmt, helper_module: str) -> bool:
    if isinstance(statement, ast.ImportFrom):
        return statement.module == helper_module
    return isinstance(statement, (ast.If, ast.Try)) and any(_imports_helper(s, helper_module) for s in statement.body)


def _same_logical_line(lines: List[str], first: ast.stmt, second: ast.stmt) -> bool:
    """Only blanks, backslash continuations and a `;` between the end of `first` and the start of `second`."""
    data = "".join(lines[first.end_lineno - 1 : second.lineno]).encode("utf-8")
    start = first.end_col_offset
    end = len("".join(lines[first.end_lineno - 1 : second.lineno - 1]).encode("utf-8")) + second.col_offset
    between = re.sub(r"\\(\r\n|\r|\n)", "", data[start:end].decode("utf-8"))
    return ";" in between and not re.search(r"[\r\n#]", between)

"""The helper import, as a careful person writes it: one statement, merged into an existing
`from <helper-module> import ...`, else placed in isort's order beside the statement that imports torch (inside
its `if`/`try` guard when torch is imported conditionally), with the blank lines PEP 8 wants.

A helper of the project's own (`first_party`, a vendored one) belongs in isort's first-party section, which
follows torch's third-party one: it joins the section after torch's when that holds absolute imports (in an
isort-clean file, the first-party one; relative imports make the local one), else opens its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple, Union

import libcst as cst

Body = Sequence[cst.BaseStatement]
Alias = Tuple[str, str]  # the helper function, and the name the import binds
SortKey = Tuple[str, str]  # how isort orders `from` imports in a section: the module, then the first name


def with_helper_import(
    module: cst.Module, helper_module: str, aliases: Sequence[Alias], first_party: bool = False
) -> cst.Module:
    """`module` importing each `(function, name)` of `helper_module` (`first_party`: a module of the project).
    Plain names join one statement (an existing one when there is one); each renamed one gets its own, as isort
    writes `as` imports."""
    new = _NewImport(helper_module, first_party)
    plain = sorted(function for function, name in aliases if function == name)
    if plain:
        module = _with_plain_names(module, new, [_alias(name, name) for name in plain])
    for function, name in sorted(a for a in aliases if a[0] != a[1]):
        module = _with_new_statement(module, new, [_alias(function, name)])
    return module


@dataclass(frozen=True)
class _NewImport:
    helper_module: str
    first_party: bool

    def statement(self, names: Sequence[cst.ImportAlias]) -> cst.SimpleStatementLine:
        return cst.SimpleStatementLine([cst.ImportFrom(module=_dotted(self.helper_module), names=names)])

    def key(self, names: Sequence[cst.ImportAlias]) -> SortKey:
        return self.helper_module.lower(), _alias_key(names[0])


def _with_plain_names(module: cst.Module, new: _NewImport, names: Sequence[cst.ImportAlias]) -> cst.Module:
    for index, statement in enumerate(module.body):
        existing = _helper_import_from(statement, new.helper_module)
        if existing is not None:
            merged = _merged(existing, names)
            line = statement.with_changes(body=[merged])
            return module.with_changes(body=_replaced(module.body, index, line))
    return _with_new_statement(module, new, names)


def _with_new_statement(module: cst.Module, new: _NewImport, names: Sequence[cst.ImportAlias]) -> cst.Module:
    return module.with_changes(body=_with_statement(module, new.statement(names), new.key(names), new.first_party))


def _alias(function: str, name: str) -> cst.ImportAlias:
    return cst.ImportAlias(cst.Name(function), asname=None if name == function else cst.AsName(cst.Name(name)))


def _dotted(name: str) -> Union[cst.Name, cst.Attribute]:
    expression = cst.parse_expression(name)
    assert isinstance(expression, (cst.Name, cst.Attribute))
    return expression


def _helper_import_from(statement: cst.BaseStatement, helper_module: str) -> Optional[cst.ImportFrom]:
    """The statement's `from <helper_module> import a, b` (alone on its line, not `*`), or None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    node = statement.body[0]
    if not isinstance(node, cst.ImportFrom) or node.relative or isinstance(node.names, cst.ImportStar):
        return None
    if any(alias.asname is not None for alias in node.names):
        return None  # isort keeps `as` imports on lines of their own
    if node.module is None or cst.Module([]).code_for_node(node.module) != helper_module:
        return None
    return node


def _merged(statement: cst.ImportFrom, new: Sequence[cst.ImportAlias]) -> cst.ImportFrom:
    """Add `new` to the names, in order when they are sorted, each with its neighbour's comma (so a
    parenthesized one-name-per-line import stays one name per line)."""
    names: List[cst.ImportAlias] = list(statement.names)  # type: ignore[arg-type]
    keys = [_alias_key(alias) for alias in names]
    in_order = keys == sorted(keys)
    for alias in new:
        index = len(names)
        if in_order:
            index = next((i for i, name in enumerate(names) if _alias_key(name) > _alias_key(alias)), len(names))
        names.insert(index, alias.with_changes(comma=_neighbour_comma(names, index)))
    if statement.rpar is None and len(names) > 1 and isinstance(names[-1].comma, cst.Comma):
        names[-1] = names[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)  # no trailing comma without ()
    return statement.with_changes(names=names)


def _alias_key(alias: cst.ImportAlias) -> str:
    return cst.Module([]).code_for_node(alias.name).lower()


def _neighbour_comma(names: Sequence[cst.ImportAlias], index: int):
    for neighbour in (names[index - 1] if index else None, names[index] if index < len(names) else None):
        if neighbour is not None and isinstance(neighbour.comma, cst.Comma):
            return neighbour.comma
    return cst.MaybeSentinel.DEFAULT


def _with_statement(module: cst.Module, statement: cst.SimpleStatementLine, key: SortKey, first_party: bool) -> List:
    """The module's body with `statement` beside torch's import: at module level, else in its guard."""
    body = list(module.body)
    torch_at = _torch_import_index(body)
    if torch_at is not None:
        return _inserted(body, torch_at, statement, key, first_party)
    for index, guard in enumerate(body):
        if _is_import_guard(guard):
            inner = list(guard.body.body)  # type: ignore[attr-defined]
            torch_at = _torch_import_index(inner)
            if torch_at is not None:
                inner = _inserted(inner, torch_at, statement, key, first_party)
                block = guard.body.with_changes(body=inner)  # type: ignore[attr-defined]
                return _replaced(body, index, guard.with_changes(body=block))
    end = _leading_imports_end(body)
    if end and _is_import_line(body[end - 1]):
        return _inserted(body, end - 1, statement, key)
    neighbour = body[end - 1] if end else (body[0] if body else None)
    return [*body[:end], _breaking_like(statement, neighbour), *body[end:]]


def _breaking_like(statement: cst.SimpleStatementLine, neighbour: Optional[cst.BaseStatement]) -> cst.SimpleStatementLine:
    """`statement` ending its line as `neighbour` does: libcst's default line break is the first line's, which a
    file that mixes line breaks may use nowhere near the imports."""
    if not isinstance(neighbour, cst.SimpleStatementLine):
        return statement
    trailing = statement.trailing_whitespace.with_changes(newline=neighbour.trailing_whitespace.newline)
    return statement.with_changes(trailing_whitespace=trailing)


def _inserted(
    body: List, anchor: int, statement: cst.SimpleStatementLine, key: SortKey, first_party: bool = False
) -> List:
    """Insert `statement` into the isort section around `anchor` (the section that imports the helper's
    top-level package, if one does; for a first-party helper, the project's own section after it): after the
    straight imports, among the `from` imports in module order. After `import torch; x = 1`, a line that is not
    only imports, it goes on the next line."""
    statement = _breaking_like(statement, body[anchor] if anchor < len(body) else None)
    if anchor < len(body) and not _is_import_line(body[anchor]):
        return [*body[: anchor + 1], statement, *body[anchor + 1 :]]
    if anchor >= len(body):
        return [*body, statement]
    same_package = _same_package_import(body, anchor, key[0].split(".")[0])
    if same_package is None and first_party:
        after = _section(body, anchor)[1] + 1
        if not _starts_absolute_section(body, after):
            return [*body[:after], statement.with_changes(leading_lines=[cst.EmptyLine(indent=False)]), *body[after:]]
        same_package = after
    start, end = _section(body, anchor if same_package is None else same_package)
    index = next((i for i in range(start, end + 1) if _sorts_after(body[i], key)), end + 1)
    if index == start:  # the section's blank lines and comments now lead the new first statement
        statement = statement.with_changes(leading_lines=body[start].leading_lines)
        body = _replaced(body, start, body[start].with_changes(leading_lines=()))
    return [*body[:index], statement, *body[index:]]


def _section(body: Body, anchor: int) -> Tuple[int, int]:
    """The first and last index of the run of import lines around `anchor` with no blank line between them."""
    start = end = anchor
    while start > 0 and _is_import_line(body[start - 1]) and not _has_blank_line(body[start]):
        start -= 1
    while end + 1 < len(body) and _is_import_line(body[end + 1]) and not _has_blank_line(body[end + 1]):
        end += 1
    return start, end


def _starts_absolute_section(body: Body, index: int) -> bool:
    """Whether an isort section of absolute imports starts at `index` (a blank line before it)."""
    if index >= len(body) or not _is_import_line(body[index]) or not _has_blank_line(body[index]):
        return False
    return not any(isinstance(node, cst.ImportFrom) and node.relative for node in body[index].body)  # type: ignore[attr-defined]


def _same_package_import(body: Body, anchor: int, package: str) -> Optional[int]:
    """Among the import lines around `anchor` (blank lines allowed), one that imports from `package`."""
    start = end = anchor
    while start > 0 and _is_import_line(body[start - 1]):
        start -= 1
    while end + 1 < len(body) and _is_import_line(body[end + 1]):
        end += 1
    return next((i for i in range(start, end + 1) if package in _top_packages(body[i])), None)


def _sorts_after(statement: cst.BaseStatement, key: SortKey) -> bool:
    node = statement.body[0]  # type: ignore[attr-defined]
    if not isinstance(node, cst.ImportFrom):
        return False  # isort puts straight imports first within a section
    if node.relative:
        return True
    if node.module is None or isinstance(node.names, cst.ImportStar):
        return False
    return (cst.Module([]).code_for_node(node.module).lower(), _alias_key(node.names[0])) > key


def _top_packages(statement: cst.BaseStatement) -> List[str]:
    found = []
    for node in statement.body:  # type: ignore[attr-defined]
        if isinstance(node, cst.Import):
            found += [cst.Module([]).code_for_node(alias.name).split(".")[0] for alias in node.names]
        elif isinstance(node, cst.ImportFrom) and not node.relative and node.module is not None:
            found.append(cst.Module([]).code_for_node(node.module).split(".")[0])
    return found


def _torch_import_index(body: Body) -> Optional[int]:
    return next((i for i, statement in enumerate(body) if "torch" in _top_packages_of_any(statement)), None)


def _top_packages_of_any(statement: cst.BaseStatement) -> List[str]:
    return _top_packages(statement) if isinstance(statement, cst.SimpleStatementLine) else []


def _is_import_guard(statement: cst.BaseStatement) -> bool:
    """A module-level `if ...:` or `try:` whose block may import torch; `if TYPE_CHECKING:` never runs."""
    if isinstance(statement, cst.Try):
        return isinstance(statement.body, cst.IndentedBlock)
    if not isinstance(statement, cst.If) or not isinstance(statement.body, cst.IndentedBlock):
        return False
    test = statement.test
    name = test.attr.value if isinstance(test, cst.Attribute) else test.value if isinstance(test, cst.Name) else ""
    return name != "TYPE_CHECKING"


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(node, (cst.Import, cst.ImportFrom)) for node in statement.body
    )


def _has_blank_line(statement: cst.BaseStatement) -> bool:
    return any(line.comment is None for line in statement.leading_lines)


def _leading_imports_end(body: Body) -> int:
    """The index after the module's docstring and leading imports."""
    index = 0
    if body and _is_docstring(body[0]):
        index = 1
    while index < len(body) and _is_import_line(body[index]):
        index += 1
    return index


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _replaced(body: Sequence, index: int, statement) -> List:
    return [*body[:index], statement, *body[index + 1 :]]

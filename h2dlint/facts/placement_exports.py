"""What one file's placement analysis tells the others (`placement_summary.ModulePlacements.exports`), and
the syntax it reads for that: which names the module imports, and the statements of a function."""

from __future__ import annotations

import ast
from typing import FrozenSet, Iterator, List, Optional, Set, Tuple, Union

from h2dlint.facts.placement import Place, Placement
from h2dlint.facts.summary import ExportedPlacement

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]

# Values that may evaluate to a tensor whose placement another file could use; literals, f-strings,
# comparisons and the like cannot, and `None` in an assignment stops nothing (a tuple target's is unknown).
MAY_BE_TENSOR = (ast.Call, ast.Name, ast.Attribute, ast.Subscript, ast.IfExp, ast.BinOp, ast.UnaryOp, ast.Tuple)


def exported(found: Placement) -> Optional[ExportedPlacement]:
    if found.place is Place.UNKNOWN and found.pending is None:
        return None
    return ExportedPlacement(found.place.value, found.evidence, found.chain, found.pending)


def imported_names(body: List[ast.stmt]) -> Tuple[FrozenSet[str], bool]:
    """The names that the module's own statements (not its functions') bind by imports, and whether one
    is a star import."""
    names: Set[str] = set()
    star = False
    pending = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                star = star or alias.name == "*"
                names.add(alias.asname or alias.name.partition(".")[0])
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            pending.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))
            pending.extend(s for h in getattr(node, "handlers", ()) for s in h.body)
    return frozenset(names), star


def own_statements(function: FunctionNode) -> Iterator[ast.stmt]:
    """The statements of `function`'s body, not those of functions or classes nested in it: where its
    `return`s and `self.x = ...` assignments are (an expression holds no statement)."""
    pending: List[ast.stmt] = list(function.body)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for name in _STATEMENT_LISTS:
                pending.extend(getattr(node, name, ()))
            for handler in getattr(node, "handlers", ()):
                pending.extend(handler.body)
            for case in getattr(node, "cases", ()):
                pending.extend(case.body)


_STATEMENT_LISTS = ("body", "orelse", "finalbody")

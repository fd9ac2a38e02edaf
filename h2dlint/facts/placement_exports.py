"""What one file's placement analysis tells the others (`placement_summary.ModulePlacements.exports`), and
the syntax it reads for that: which names the module imports, the statements of a function, its returns, its
`self.x = ...` assignments and how it fills lists."""

from __future__ import annotations

import ast
from typing import FrozenSet, Iterator, List, Optional, Set, Tuple, Union

from h2dlint.facts.placement_values import Place, Placement
from h2dlint.facts.summary import ExportedPlacement
from h2dlint.facts.syntax import is_none, is_self

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]

# Values that may evaluate to a tensor, or a container of them, whose placement another file could use
# (`self.ids = [torch.tensor(r.ids) for r in reqs]`: where `batch.ids[i]` lives); literals, f-strings,
# comparisons and the like cannot, and `None` in an assignment stops nothing (a tuple target's is unknown).
MAY_BE_TENSOR = (
    ast.Call, ast.Name, ast.Attribute, ast.Subscript, ast.IfExp, ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List,
    ast.ListComp,
)


def exported(found: Placement, record: str = "") -> Optional[ExportedPlacement]:
    if found.place is Place.UNKNOWN and found.pending is None:
        return None
    return ExportedPlacement(found.place.value, found.evidence, found.chain, found.pending, record=record)


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
    return statements_within(function.body)


def statements_within(body: List[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of `body` and of the blocks inside them (branches, loops, `with`, handlers, cases), not
    those of functions or classes nested there."""
    pending: List[ast.stmt] = list(body)
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


_OTHER_FILLS = frozenset({"extend", "insert", "__setitem__", "__iadd__"})


def list_fill(node: ast.AST) -> Optional[Tuple[str, Optional[ast.expr]]]:
    """(name, item) for `name.append(item)` and `name[i] = item`; (name, None) for another way of filling a
    local list (`extend`, `insert`, `+=`, a slice assigned)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        method = node.func.attr
        if method == "append" and len(node.args) == 1 and not node.keywords:
            return node.func.value.id, node.args[0]
        if method in _OTHER_FILLS:
            return node.func.value.id, None
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        return node.target.id, None
    if isinstance(node, (ast.Assign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                one_item = isinstance(node, ast.Assign) and not isinstance(target.slice, ast.Slice)
                return target.value.id, node.value if one_item else None
    return None


def is_unfilled_list(value: ast.expr) -> bool:
    """`[]`, `list()`, or a list of slots to fill (`[None] * n`)."""
    if isinstance(value, ast.List):
        return not value.elts
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        return any(_is_list_of_none(side) for side in (value.left, value.right))
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "list" and not (
        value.args or value.keywords
    )


def _is_list_of_none(value: ast.expr) -> bool:
    return isinstance(value, ast.List) and len(value.elts) == 1 and is_none(value.elts[0])


def method_named(cls: ast.ClassDef, name: str) -> Optional[FunctionNode]:
    return next(
        (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None
    )


def returned_values(function: FunctionNode) -> Iterator[Optional[ast.expr]]:
    """The value of each `return` (None for a bare one, and once for a generator: a `yield` that is a
    statement's value, as generators write it; one deeper in an expression is not looked for)."""
    for node in own_statements(function):
        if isinstance(node, ast.Return):
            yield node.value
        value = getattr(node, "value", None)
        if isinstance(value, (ast.Yield, ast.YieldFrom)):
            yield None


def self_assignments(method: FunctionNode) -> Iterator[Tuple[str, Optional[ast.expr], int]]:
    """(attribute, value, line) for each `self.x = value` in `method`; the value is None when `x` does not get
    a value of its own (a tuple target, `for self.x in ...`). `self.x = None` is left out: not a tensor."""
    for node in own_statements(method):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and is_self(target.value):
                    if not is_none(node.value):
                        yield target.attr, node.value, node.lineno
                elif isinstance(target, (ast.Tuple, ast.List)):
                    yield from _unpacked(target, node.value, node.lineno)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute) and is_self(node.target.value):
            if node.value is not None and not is_none(node.value):
                yield node.target.attr, node.value, node.lineno


def _unpacked(
    target: Union[ast.Tuple, ast.List], value: ast.expr, line: int
) -> Iterator[Tuple[str, Optional[ast.expr], int]]:
    """`self.a, self.b = x, y`: each its own item; from anything but a literal tuple of the same length, None."""
    items = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) else None
    for index, element in enumerate(target.elts):
        if isinstance(element, ast.Attribute) and is_self(element.value):
            yield element.attr, (items[index] if items is not None else None), line

"""Which bindings of a local name reach a use of it, read from the timeline that `scopes` records for a name
bound more than once (`Binding`: where it takes effect, its plain value, the statement list it is made in).

A binding made in the statement list that holds the use, or in one enclosing it, certainly runs before the
use (it dominates it): the last such one, and every binding between it and the use, which may have run after
it (`x = a` / `if c: x = b` / use), are the ones that reach. With none of that kind (`if c: x = a` /
`else: x = b`), every earlier binding may be the one: a local read before any binding raises, so one of them
ran. Loops are not looked into: a binding later in a loop body that holds the use is not counted, as
`NameResolver.value_at` does not count it either.
"""

from __future__ import annotations

import ast
from typing import AbstractSet, Iterable, List, Optional, Sequence, Tuple

Position = Tuple[int, int]  # (line, column) as `ast` gives them
Span = Tuple[Position, Position]
# One binding of a name: where it takes effect, the value of a plain `name = value` (None for any other
# binding), and the statement list it is made in (from its first statement's start to its last one's end).
Binding = Tuple[Position, Optional[ast.expr], Span]


def start_of(node: ast.AST) -> Position:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def end_of(node: ast.AST) -> Position:
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]


def statements_span(statements: Sequence[ast.stmt]) -> Span:
    """Where a statement list runs: from its first statement's start to its last one's end."""
    return (start_of(statements[0]), end_of(statements[-1]))


def outside_blocks(node: ast.AST, blocks: Sequence[str]) -> Iterable[ast.AST]:
    """The children of a compound statement outside its statement lists `blocks`: its test, target, items."""
    for name in node._fields:
        if name in blocks:
            continue
        value = getattr(node, name, None)
        for item in value if isinstance(value, list) else (value,):
            if isinstance(item, ast.AST):
                yield item


def certain_binding(timeline: Sequence[Binding], here: Position) -> Optional[Binding]:
    """The binding just before `here`, when it certainly reaches it (made in a statement list holding `here`)."""
    earlier = [binding for binding in timeline if binding[0] <= here]
    return earlier[-1] if earlier and _dominates(earlier[-1], here) else None


def reaching_values(
    timeline: Sequence[Binding],
    here: Position,
    branches: Sequence[Tuple[Span, Span]] = (),
    updates: AbstractSet[Position] = frozenset(),
) -> Optional[Tuple[ast.expr, ...]]:
    """The value of each binding that may be the last to run before `here`, in source order; None when one
    of them is not a plain `name = value` (a parameter, a loop target, an unpacking) or none is earlier.
    `branches` are the statement lists of each `if` with an `else`: (body, orelse). `updates` are where the
    name is updated in place (`x += y`): such a binding keeps the value where the bindings before it put it,
    so the values of those reach through it."""
    values: List[ast.expr] = []
    for binding in reversed([binding for binding in timeline if binding[0] <= here]):
        if _in_other_branch(binding[0], here, branches) or binding[0] in updates:
            continue
        if binding[1] is None:
            return None
        values.append(binding[1])
        if _dominates(binding, here):
            break
    return tuple(reversed(values)) or None


def _in_other_branch(where: Position, here: Position, branches: Sequence[Tuple[Span, Span]]) -> bool:
    """Whether `where` and `here` are in the two branches of one `if`: one never runs after the other."""
    return any(
        _within(where, body) and _within(here, orelse) or _within(where, orelse) and _within(here, body)
        for body, orelse in branches
    )


def _within(where: Position, span: Span) -> bool:
    return span[0] <= where <= span[1]


def _dominates(binding: Binding, here: Position) -> bool:
    first, last = binding[2]
    return first <= here <= last

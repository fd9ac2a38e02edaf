"""The variables of loops and comprehensions: which container each takes its items from.

A comprehension binds its own variables (`[v.item() for v in lens]`), which hide a function's own `v` inside it.
The binding walk (`facts.bindings`) visits statements only, so the comprehensions of a function are indexed
here: for a use of a name inside one, the container whose items the name takes, if the comprehension binds it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set, Tuple, Union

Position = Tuple[int, int]
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def loop_items(target: ast.expr, iterable: ast.expr) -> Iterator[Tuple[str, ast.expr]]:
    """The names a loop binds to items of a container, with the container: `for x in xs`, the `x` of
    `for i, x in enumerate(xs)`, and each name of `for a, b in zip(xs, ys)`."""
    if isinstance(target, ast.Name):
        yield target.id, iterable
        return
    if not (isinstance(target, ast.Tuple) and isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)):
        return
    args = [arg for arg in iterable.args if not isinstance(arg, ast.Starred)]
    if len(args) != len(iterable.args):
        return
    if iterable.func.id == "enumerate" and len(target.elts) == 2 and args:
        pairs = [(target.elts[1], args[0])]
    elif iterable.func.id == "zip" and len(target.elts) == len(args):
        pairs = list(zip(target.elts, args))
    else:
        return
    yield from ((item.id, container) for item, container in pairs if isinstance(item, ast.Name))


@dataclass(frozen=True)
class _Comprehension:
    start: Position
    end: Position
    outer: Tuple[Position, Position]  # its first iterable, which the enclosing scope evaluates
    items: Dict[str, Optional[ast.expr]]  # each name it binds -> the container of its items (None: not known)

    def holds(self, at: Position) -> bool:
        return self.start <= at < self.end and not self.outer[0] <= at < self.outer[1]


class Comprehensions:
    """The comprehensions of one function: indexed by one walk of it on first use, or, for the function the
    checker is walking (`fed`), told each comprehension as the walk enters it. The walk reaches a comprehension
    before anything inside it, and before any later code that reads a value it computes."""

    def __init__(self, function: Optional[FunctionNode]) -> None:
        """`function` None: fed by `add`, never walked."""
        self._function = function
        self._index: Optional[List[_Comprehension]] = [] if function is None else None
        self._names: Set[str] = set()
        self._added: Set[int] = set()  # the comprehensions told of, by id, when fed

    @classmethod
    def fed(cls) -> "Comprehensions":
        return cls(None)

    def add(self, node: ast.expr) -> None:
        """The walk enters `node`, a comprehension of the function, or the placement analysis reads into it."""
        if self._function is None and id(node) not in self._added:
            self._added.add(id(node))
            comprehension = _indexed(node)
            self._index.append(comprehension)  # type: ignore[union-attr]
            self._index.sort(key=lambda known: known.start)
            self._names.update(comprehension.items)

    def binds(self, name: str) -> bool:
        """Whether some comprehension of the function binds `name` (nested functions' count too: a superset)."""
        self._build()
        return name in self._names

    def item_source(self, use: ast.Name) -> Tuple[bool, Optional[ast.expr]]:
        """(True, the container whose items it takes, or None when not known) when `use` reads a variable of a
        comprehension around it; (False, None) when it reads the function's own name."""
        if not self.binds(use.id):
            return False, None
        at = (use.lineno, use.col_offset)
        for comprehension in reversed(self._index or ()):  # innermost first: later starts nest inside
            if use.id in comprehension.items and comprehension.holds(at):
                return True, comprehension.items[use.id]
        return False, None

    def _build(self) -> None:
        if self._index is not None:
            return
        found = [_indexed(node) for node in ast.walk(self._function) if isinstance(node, _COMPREHENSIONS)]
        self._index = sorted(found, key=lambda comprehension: comprehension.start)
        self._names = {name for comprehension in self._index for name in comprehension.items}


def _indexed(node: ast.expr) -> _Comprehension:
    items: Dict[str, Optional[ast.expr]] = {}
    for generator in node.generators:  # type: ignore[attr-defined]
        for name in (n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)):
            items[name] = None
        items.update(loop_items(generator.target, generator.iter))
    first = node.generators[0].iter  # type: ignore[attr-defined]
    return _Comprehension(
        start=(node.lineno, node.col_offset),
        end=(node.end_lineno or node.lineno, node.end_col_offset or 0),
        outer=((first.lineno, first.col_offset), (first.end_lineno or first.lineno, first.end_col_offset or 0)),
        items=items,
    )

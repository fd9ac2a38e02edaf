"""Which assignment of an attribute of a local name reaches a read of it in the same function: after
`metadata.lens = seq_lens.to(torch.int32)`, `metadata.lens.max().item()` reads what was just assigned, whatever
other functions store in that field (attention backends fill a fresh metadata object field by field, then read
it back). `self.lens = ...` then `self.lens` is the same.

An assignment made in the statement list that holds the read, or in one enclosing it, certainly runs before the
read (`facts.reaching`). It still says nothing when, between the two, something may have changed the field:
- another binding of the base name (`metadata = other`);
- a call that may: a method called on the base (`self.refresh()`, `metadata.reset()`) or a call given the base
  itself (`fill(metadata)`). Calls on the field's own value (`self.lens.copy_(x)`) change no binding.
As for names, loops are not looked into: an assignment later in a loop body that holds the read is not counted.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional, Set

from h2dlint.facts.reaching import Binding, Position, Span, certain_binding, end_of, outside_blocks, statements_span

_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


class AttributeWrites:
    """The assignments of `name.attr` in one function body, and where calls may change what they assigned."""

    def __init__(self, function: ast.AST) -> None:
        self.writes: Dict[str, List[Binding]] = {}  # "metadata.lens" -> each assignment, in source order
        self._calls: Dict[str, List[Position]] = {}  # base name -> where a call may change its attributes
        self._rebinds: Dict[str, List[Position]] = {}  # base name -> where a statement binds the name again
        body = getattr(function, "body", [])
        if body:
            self._visit_block(body)

    def value_at(self, read: ast.Attribute) -> Optional[ast.expr]:
        """The value the assignment of `read`'s attribute that certainly reaches `read` stored, when nothing
        between them may have changed it; None otherwise, and for any other kind of assignment."""
        if not isinstance(read.value, ast.Name):
            return None
        base = read.value.id
        timeline = self.writes.get(f"{base}.{read.attr}")
        here = (read.lineno, read.col_offset)
        found = certain_binding(timeline, here) if timeline else None
        if found is None or found[1] is None:
            return None
        changed = (*self._calls.get(base, ()), *self._rebinds.get(base, ()))
        return None if any(found[0] < where < here for where in changed) else found[1]

    def _visit_block(self, statements: List[ast.stmt]) -> None:
        block = statements_span(statements)
        for statement in statements:
            self._visit_statement(statement, block)

    def _visit_statement(self, statement: ast.AST, block: Span) -> None:
        if isinstance(statement, _NESTED_SCOPES):
            return
        self._record_writes(statement, block)
        for node in _own_nodes(statement):
            if isinstance(node, ast.Call):
                self._record_call(node)
        for field in _BLOCKS:
            for child in getattr(statement, field, None) or ():
                if isinstance(child, ast.stmt):
                    self._visit_block(getattr(statement, field))
                    break
                self._visit_statement(child, block)  # an `except` handler or a `case`: its own statements

    def _record_writes(self, statement: ast.AST, block: Span) -> None:
        if not isinstance(statement, ast.stmt):
            return  # an `except` handler or a `case` binds names, never fields (and a `case` has no position)
        where = end_of(statement)
        if isinstance(statement, ast.Assign):
            single = len(statement.targets) == 1
            for target in statement.targets:
                value = statement.value if single else None
                self._record_targets(target, where, block, value)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            self._record_targets(statement.target, where, block, statement.value)
        elif isinstance(statement, (ast.AugAssign, ast.For, ast.AsyncFor)):
            self._record_targets(statement.target, where, block, None)
        elif isinstance(statement, ast.Delete):
            for target in statement.targets:
                self._record_targets(target, where, block, None)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                if item.optional_vars is not None:
                    self._record_targets(item.optional_vars, where, block, None)

    def _record_targets(self, target: ast.expr, where: Position, block: Span, value: Optional[ast.expr]) -> None:
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            self.writes.setdefault(f"{target.value.id}.{target.attr}", []).append((where, value, block))
        elif isinstance(target, ast.Name):
            self._rebinds.setdefault(target.id, []).append(where)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for item in target.elts:
                self._record_targets(item, where, block, None)
        elif isinstance(target, ast.Starred):
            self._record_targets(target.value, where, block, None)

    def _record_call(self, call: ast.Call) -> None:
        where = (call.lineno, call.col_offset)
        for base in _bases_given(call):
            self._calls.setdefault(base, []).append(where)


def _bases_given(call: ast.Call) -> Set[str]:
    """The names whose attributes `call` may change: its receiver's (`self.m()`: self) and the bare names it is
    given (`fill(metadata)`, `f(*objs)`, `f(meta=m)`)."""
    given = [*call.args, *(keyword.value for keyword in call.keywords)]
    unstarred = (item.value if isinstance(item, ast.Starred) else item for item in given)
    names = {item.id for item in unstarred if isinstance(item, ast.Name)}
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
        names.add(call.func.value.id)
    return names


def _own_nodes(statement: ast.AST) -> Iterator[ast.AST]:
    """The nodes of `statement` outside its statement lists and nested scopes: its expressions."""
    pending: List[ast.AST] = list(outside_blocks(statement, _BLOCKS))
    while pending:
        node = pending.pop()
        if isinstance(node, _NESTED_SCOPES):
            continue
        yield node
        pending.extend(ast.iter_child_nodes(node))

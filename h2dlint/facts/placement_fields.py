"""The fields of a record class as its constructor calls fill them: `Buffers(seq_lens=torch.zeros(n,
device=dev), ...)` puts `Buffers.seq_lens` on the device, as `self.seq_lens = ...` in a method would.

A record class is a dataclass, a `NamedTuple` or a `TypedDict` (or vLLM's `TensorSchema`, a checked one): its
constructor stores each argument in the field of that name and does nothing else, so what a call passes is what
the field holds (a `TypedDict`'s is read by key: `inputs["image_grid_thw"]`, `facts.placement`). The calls are read in the class's own file,
by its name (`Buffers(...)`) or, in its own classmethods, by `cls(...)`, in its top-level functions and methods.
A class that defines `__init__` is no record: its constructor may do anything. A field stays unknown where a
call may fill it through `*args` or `**kwargs`, or by position where the order of the fields is not known here
(a base class may declare some first), where the file writes the class's name followed by `(` anywhere
else (a call in a nested function, at module level), or where the file stores it through another object
(`meta.seq_lens = ...`, `dataclasses.replace(meta, seq_lens=...)`).

What other files do is the project's to check (`ModuleSummary.stored_attributes`, `called_names`): the
placement is passed on as the question "record" (`project.placement_links`), answered only where no other file
stores the field, and every other file that calls the class's name puts the same placement there
(`imported_fills`, asked by `project.record_fills`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
import re
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from h2dlint.facts.placement import placement_of
from h2dlint.facts.placement_exports import FunctionNode
from h2dlint.facts.placement_regions import own_nodes, rows_naming
from h2dlint.facts.placement_values import Placement
from h2dlint.facts.syntax import is_self, last_name

_RECORD_DECORATORS = frozenset({"dataclass"})
_RECORD_BASES = frozenset({"NamedTuple", "TypedDict", "TensorSchema"})  # `TypedDict(...)` is a dict of its keywords
FunctionsAt = Callable[[List[int]], List[Tuple[FunctionNode, Optional[str]]]]  # functions holding some of the rows
REPLACE = "replace"  # `dataclasses.replace(obj, field=value)` stores `field` in a copy of `obj`


def stored_attributes(targets: Iterable[ast.expr]) -> Iterator[str]:
    """The attributes that assignment `targets` store on an object other than `self` (in tuples too)."""
    pending = [target for target in targets if not isinstance(target, ast.Name)]  # most targets are names
    while pending:
        target = pending.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            pending.extend(target.elts)
        elif isinstance(target, ast.Starred):
            pending.append(target.value)
        elif isinstance(target, ast.Attribute) and not is_self(target.value):
            yield target.attr


@dataclass(frozen=True)
class FieldFill:
    """One value a constructor call passes for a field: the function that makes the call, its class (None for a
    module function), the value (None when the call may fill the field in a way not known) and the line."""

    function: FunctionNode
    owner: Optional[str]
    value: Optional[ast.expr]
    line: int

    def step(self, class_name: str, field: str) -> str:
        value = ast.unparse(self.value)[:40] if self.value is not None else "..."
        return f"line {self.line}: `{class_name}({field}={value})` in `{self.function.name}`"


class RecordFields:
    """The part of `placement_summary.ModulePlacements` that reads the fields of its record classes from their
    constructor calls. It uses the host's `_classes`, `_source`, `_functions_at`, `scope` and `_names_for`."""

    _fills: Optional[Dict[str, Dict[str, List[FieldFill]]]] = None
    _records: Optional[Dict[str, Tuple[str, ...]]] = None

    def fills_of(self, class_name: str) -> Dict[str, List[FieldFill]]:
        """Field -> what the constructor calls of record class `class_name` in this file pass for it."""
        if self._fills is None:
            records = self.constructed_records()
            self._fills = field_fills(records, self._functions_at, self._source) if records else {}  # type: ignore
        return self._fills.get(class_name, {})

    def constructed_records(self) -> Dict[str, Tuple[str, ...]]:
        """The record classes of this file that it may construct, with their fields in order."""
        if self._records is None:
            self._records = record_classes(self._classes, self._source)  # type: ignore[attr-defined]
        return self._records

    def filled(self, class_name: str, field: str, depth: int) -> List[Optional[Placement]]:
        """Where each constructor call puts `field` of record class `class_name`; None for a call whose value
        for it is not known."""
        return [self._placed(fill, class_name, field, depth) for fill in self.fills_of(class_name).get(field, ())]

    def imported_fills(self, name: str, field: str) -> Optional[List[Placement]]:
        """Where each call of `name`, a record class another file defines, puts its field `field` in this file
        (`project.record_fills` asks it); None where one call may fill the field in a way not known (by
        position: the order of the fields is the other file's to know), or no call of `name` is read at all."""
        fills = field_fills({name: ()}, self._functions_at, self._source).get(name, {})  # type: ignore[attr-defined]
        if not fills:
            return None  # written as `mod.Name(...)`, or with nothing passed: nothing here says what it holds
        passed = [fill for fill in fills.get(field, ()) if not isinstance(fill.value, ast.Constant)]  # None: no tensor
        found = [self._placed(fill, name, field, 0) for fill in passed]
        return None if None in found else found  # type: ignore[return-value]

    def _placed(self, fill: FieldFill, class_name: str, field: str, depth: int) -> Optional[Placement]:
        if fill.value is None:
            return None
        scope = self.scope(self._names_for(fill.function, fill.owner), fill.owner, fill.function)  # type: ignore
        return placement_of(fill.value, scope, depth + 1).via(fill.step(class_name, field))


def record_classes(classes: Dict[str, ast.ClassDef], source: str) -> Dict[str, Tuple[str, ...]]:
    """Record class -> its fields in order, for each top-level record class of this file that the source may
    construct (its name or `cls` followed by `(`: a cheap test, which its `class` line may pass too)."""
    found = {}
    for name, node in classes.items():
        if is_record(node) and (f"{name}(" in source or "cls(" in source):
            found[name] = _fields_in_order(node)
    return found


def field_fills(
    records: Dict[str, Tuple[str, ...]], functions_at: FunctionsAt, source: str
) -> Dict[str, Dict[str, List[FieldFill]]]:
    """Record class -> field -> what each constructor call passes for it, in the top-level functions and methods
    that `functions_at` gives for some lines. Only the lines that name a record or `cls`, and then a passed
    field, are walked."""
    table: Dict[str, Dict[str, List[FieldFill]]] = {name: {} for name in records}
    open_records: Set[str] = set()  # constructed with `*args` or `**kwargs`: any field may hold anything
    seen: Dict[str, int] = dict.fromkeys(records, 0)
    for function, owner, node in _nodes_on(functions_at, rows_naming(source, [*records, "cls"])):
        record = _constructed(node, function, owner, records) if isinstance(node, ast.Call) else None
        if record is None:
            continue
        seen[record] += isinstance(node.func, ast.Name) and node.func.id == record  # type: ignore[attr-defined]
        if _unpacks(node) or (node.args and not records[record]):  # type: ignore[attr-defined]
            open_records.add(record)  # positional arguments fill fields in an order not known here
        for field, value in _passed(node, records[record]):  # type: ignore[arg-type]
            table[record].setdefault(field, []).append(FieldFill(function, owner, value, node.lineno))
    written = calls_written(records, source)
    open_records.update(record for record, calls in seen.items() if calls != written.get(record, 0))
    passed = sorted({field for fields in table.values() for field in fields})
    stored = {
        node.attr
        for _, _, node in _nodes_on(functions_at, rows_naming(source, passed) if passed else [])
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and not is_self(node.value)
    }
    for record, fields in table.items():
        for field in fields if record in open_records else stored & set(fields):
            fields[field] = [FieldFill(f.function, f.owner, None, f.line) for f in fields[field]]
    return table


def _nodes_on(functions_at: FunctionsAt, rows: List[int]) -> Iterator[Tuple[FunctionNode, Optional[str], ast.AST]]:
    """(function, its class, node) for each node of the functions' own bodies (`own_nodes`) on one of `rows`."""
    for function, owner in functions_at(rows) if rows else ():
        for node in own_nodes(function, rows):
            yield function, owner, node


def calls_written(records: Iterable[str], source: str) -> Dict[str, int]:
    """How often `source` writes each of `records` followed by `(` as a name of its own (not `x.Name(` or
    `MyName(`), its `class Name(` line aside."""
    counts = {}
    for name in records:
        found = 0
        for match in re.finditer(rf"{re.escape(name)}\s*\(", source):  # a literal first: a fast search
            before = source[max(0, match.start() - _CLASS_PREFIX):match.start()]
            if not _NOT_A_CALL_BEFORE.search(before):
                found += 1
        counts[name] = found
    return counts


_CLASS_PREFIX = 40  # characters looked at before a name for `class ` or a longer name
_NOT_A_CALL_BEFORE = re.compile(r"[\w.]\Z|class\s+\Z")  # `MyName(`, `x.Name(`, `class Name(`


def is_record(node: ast.ClassDef) -> bool:
    """A dataclass, `NamedTuple`, `TypedDict` or `TensorSchema` with no `__init__` of its own."""
    if any(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__init__" for item in node.body):
        return False
    decorators = (d.func if isinstance(d, ast.Call) else d for d in node.decorator_list)
    return any(last_name(d) in _RECORD_DECORATORS for d in decorators) or any(
        last_name(b) in _RECORD_BASES for b in node.bases
    )


def _fields_in_order(node: ast.ClassDef) -> Tuple[str, ...]:
    """The fields a positional argument fills, in order; none when the order is not known from this class
    alone (a base class may declare fields first, a field may be left out of `__init__`)."""
    if node.bases and not any(last_name(b) in _RECORD_BASES for b in node.bases):
        return ()
    fields = []
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            if "ClassVar" in ast.unparse(item.annotation):
                continue
            if isinstance(item.value, ast.Call) and any(k.arg == "init" for k in item.value.keywords):
                return ()
            fields.append(item.target.id)
    return tuple(fields)


def _constructed(
    call: ast.Call, function: FunctionNode, owner: Optional[str], records: Dict[str, Tuple[str, ...]]
) -> Optional[str]:
    """The record class `call` constructs, if it is one: by its name, or by `cls` in its own classmethod."""
    if not isinstance(call.func, ast.Name):
        return None
    if call.func.id in records:
        return call.func.id
    if call.func.id == "cls" and owner in records and _is_classmethod(function):
        return owner
    return None


def _is_classmethod(function: FunctionNode) -> bool:
    return any(last_name(d) == "classmethod" for d in function.decorator_list)


def _unpacks(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)


def _passed(call: ast.Call, in_order: Tuple[str, ...]) -> List[Tuple[str, ast.expr]]:
    """(field, value) for each field `call` names or fills by position."""
    positional = () if any(isinstance(a, ast.Starred) for a in call.args) else call.args
    return [*zip(in_order, positional), *((k.arg, k.value) for k in call.keywords if k.arg is not None)]

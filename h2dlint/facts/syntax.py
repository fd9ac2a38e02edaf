"""Fast iteration over `ast` children, for walks that visit every node of large trees, and the small name
helpers that the facts share.

`ast.iter_child_nodes` inspects every field of every node; this precomputes, per node type, the fields that
can hold nodes, and skips the leaves that can never hold a call or a binding (names, constants, contexts).
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import re
from typing import Callable, Dict, Iterator, List, Optional, Tuple, Union

from h2dlint.facts.arguments import string_value

# Fields that never hold a node worth visiting: expression contexts, operators, identifiers, flags.
_SKIPPED_FIELDS = frozenset({"ctx", "op", "ops", "type_comment", "names", "kind", "level", "is_async", "conversion"})
LEAVES = frozenset({ast.Name, ast.Constant, ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal})

_FIELDS: Dict[type, Tuple[str, ...]] = {}


def child_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The children of `node` that may contain calls or bindings, in field order."""
    kind = node.__class__
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _SKIPPED_FIELDS)
    for name in fields:
        value = getattr(node, name, None)
        if value.__class__ is list:
            for item in value:
                if isinstance(item, ast.AST) and item.__class__ not in LEAVES:
                    yield item
        elif isinstance(value, ast.AST) and value.__class__ not in LEAVES:
            yield value


def target_names(target: ast.expr) -> Iterator[str]:
    """The names an assignment or `for` target binds: `a`, each of `a, (b, *c)`."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from target_names(element)
    elif isinstance(target, ast.Starred):
        yield from target_names(target.value)


def methods_of(node: ast.ClassDef) -> List[Union[ast.FunctionDef, ast.AsyncFunctionDef]]:
    """The functions a class body defines, in order."""
    return [f for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]


def last_name(expr: ast.expr) -> str:
    """`m` for `m` or `x.y.m`; "" for anything else."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return ""


def dotted_name(expr: ast.expr) -> Optional[str]:
    """`x.y.m` for a chain of attributes on a name, as written; None for anything else."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        base = dotted_name(expr.value)
        return f"{base}.{expr.attr}" if base else None
    return None


def index_parts(index: ast.expr) -> Iterator[ast.expr]:
    """The parts of a subscript's index that may be tensors: each item of `x[a, b]`, less slices, literals and
    starred items."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return (part for part in parts if not isinstance(part, (ast.Slice, ast.Constant, ast.Starred)))


def is_self(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Name) and expr.id in ("self", "cls")


def is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def attribute_looked_up(call: ast.Call) -> Optional[ast.Attribute]:
    """`obj.name` for `getattr(obj, "name")` or `getattr(obj, "name", None)`: the attribute, where it is set."""
    if not (isinstance(call.func, ast.Name) and call.func.id == "getattr" and 2 <= len(call.args) <= 3):
        return None
    name = string_value(call.args[1])
    if call.keywords or not name or not name.isidentifier() or (len(call.args) == 3 and not is_none(call.args[2])):
        return None
    return ast.copy_location(ast.Attribute(value=call.args[0], attr=name, ctx=ast.Load()), call)


def type_cast(call: ast.Call) -> Optional[Tuple[ast.expr, ast.expr]]:
    """(type, value) for `cast(T, value)` or `typing.cast(T, value)`: `typing.cast` returns `value` as it is,
    and declares it a `T` to type checkers (vLLM writes `metadata = cast(AiterMLAMetadata, metadata)`)."""
    if call.keywords or len(call.args) != 2 or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    func = call.func
    is_cast = (isinstance(func, ast.Name) and func.id == "cast") or (
        isinstance(func, ast.Attribute) and func.attr == "cast" and isinstance(func.value, ast.Name)
        and func.value.id in ("typing", "t")
    )
    return (call.args[0], call.args[1]) if is_cast else None


def isinstance_of(test: Optional[ast.expr]) -> Optional[Tuple[str, ast.expr]]:
    """(name, class) for `isinstance(name, Cls)` with one class, also as an operand of `and`; else None."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        found = [f for f in map(isinstance_of, test.values) if f is not None]
        return found[0] if len(found) == 1 else None
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"):
        return None
    if len(test.args) != 2 or test.keywords or not isinstance(test.args[0], ast.Name):
        return None
    cls = test.args[1]
    return (test.args[0].id, cls) if isinstance(cls, (ast.Name, ast.Attribute)) else None


@functools.lru_cache(maxsize=512)  # the tables of a run, and each of their patterns alone
def glob_matcher(patterns: Tuple[str, ...]) -> Callable[[str], Optional[bool]]:
    """Whether a name matches any of the fnmatch globs `patterns` (case-sensitive): True, or None."""
    return _GlobMatcher(patterns).match


class _GlobMatcher:
    """fnmatch globs asked of most names of a project, where a loop over `fnmatchcase` would cost a measurable
    share of a cold run. A glob that is a word with `*` before it, after it or both is tested with `str`
    methods, as is a word alone; the rest with one regular expression: an alternation of `.*word.*` patterns
    is three times slower than those methods."""

    def __init__(self, patterns: Tuple[str, ...]) -> None:
        exact, starts, ends, contains, other = set(), [], [], [], []
        for pattern in patterns:
            word = pattern.strip("*")
            if any(c in word for c in "*?["):
                other.append(pattern)
            elif pattern.startswith("*") and pattern.endswith("*") and len(pattern) > 1:
                contains.append(word)
            elif pattern.startswith("*"):
                ends.append(word)
            elif pattern.endswith("*"):
                starts.append(word)
            else:
                exact.add(pattern)
        self._exact, self._starts, self._ends = frozenset(exact), tuple(starts), tuple(ends)
        self._contains = re.compile("|".join(map(re.escape, contains))).search if contains else None
        self._other = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in other)).match if other else None

    def match(self, name: str) -> Optional[bool]:
        found = (
            name in self._exact
            or (self._starts and name.startswith(self._starts))
            or (self._ends and name.endswith(self._ends))
            or (self._contains is not None and self._contains(name) is not None)
            or (self._other is not None and self._other(name) is not None)
        )
        return True if found else None


def forward_input(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Optional[str]:
    """The first parameter after `self` of a method named `forward`: what the module takes in; else None."""
    positional = [*node.args.posonlyargs, *node.args.args][1:2] if node.name == "forward" else []
    return positional[0].arg if positional else None

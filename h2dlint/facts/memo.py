"""Memo caches keyed on runtime values: the guarded build reruns on every cache miss.

Heuristic `MEMO_PER_MISS`: a memo guard (`if key not in _CACHE:` ... `_CACHE[key] = ...`; `if t is None:`
... `_CACHE[key] = t`; `if (t := _CACHE.get(key)) is not None: return t` followed by code that fills
`_CACHE[...]`) whose key is a runtime value (a name, an attribute, a tuple holding one: a shape, a batch
size) builds again for each new key, which serving meets per request: its code is per-request ("runs on
each cache miss"). A memo with a constant key (`_CACHE["table"]`), or a guard with no key at all
(`if self._x is None:`), builds once and stays one-time.

Heuristic `PROCESS_CONSTANT_KEYS`: a key that names a device or a dtype (`device`, `x.device`, `dtype`,
`(device, dtype)`) takes one value per process, or a few: such a memo builds once, like a constant key.

The collector tells the two apart with `runtime_memo_key` / `runtime_lazy_memo_key`; which guards are memos
at all is its own decision.
"""

from __future__ import annotations

import ast
from typing import Callable, Optional, Sequence


def runtime_memo_key(test: ast.expr, body: Sequence[ast.stmt]) -> bool:
    """Whether the memo guard `if test: body` is keyed on a runtime value."""
    return _is_runtime(_guard_key(test, body))


def runtime_lazy_memo_key(statement: ast.stmt, value_at: Callable[[ast.Name], Optional[ast.expr]]) -> bool:
    """Whether the early return of a lazy build (`if (t := C.get(k)) is not None: return t`) reads a memo
    keyed on a runtime value."""
    test = statement.test if isinstance(statement, ast.If) else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        test = test.left
    if isinstance(test, ast.NamedExpr):
        test = test.value
    if isinstance(test, ast.Name):
        test = value_at(test) or test
    return _is_runtime(_lookup_key(test))


def _guard_key(test: ast.expr, body: Sequence[ast.stmt]) -> Optional[ast.expr]:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    if isinstance(test.ops[0], ast.NotIn):
        return test.left  # `if key not in cache:`
    if isinstance(test.ops[0], ast.Is) and isinstance(test.left, ast.Name):  # `if t is None:` ... `cache[k] = t`
        for statement in body:
            if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name):
                if statement.value.id == test.left.id:
                    stored = [t.slice for t in statement.targets if isinstance(t, ast.Subscript)]
                    if stored:
                        return stored[0]
    return None


def _lookup_key(lookup: Optional[ast.expr]) -> Optional[ast.expr]:
    """`key` of `cache[key]` or `cache.get(key)`."""
    if isinstance(lookup, ast.Subscript):
        return lookup.slice
    is_get = isinstance(lookup, ast.Call) and isinstance(lookup.func, ast.Attribute) and lookup.func.attr == "get"
    return lookup.args[0] if is_get and lookup.args else None  # type: ignore[union-attr]


PROCESS_CONSTANT_KEYS = ("device", "dev", "dtype")


def _is_runtime(key: Optional[ast.expr]) -> bool:
    if key is None:
        return False
    if isinstance(key, ast.Tuple):
        return any(_is_runtime(element) for element in key.elts)
    return not isinstance(key, ast.Constant) and not _names_a_process_constant(key)


def _names_a_process_constant(key: ast.expr) -> bool:
    name = key.id if isinstance(key, ast.Name) else key.attr if isinstance(key, ast.Attribute) else None
    return name is not None and any(name == n or name.endswith("_" + n) for n in PROCESS_CONSTANT_KEYS)

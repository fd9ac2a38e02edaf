"""Memo caches keyed on runtime values: the guarded build reruns on every cache miss.

Heuristic `MEMO_PER_MISS`: a memo guard (`if key not in _CACHE:` ... `_CACHE[key] = ...`; `if t is None:`
... `_CACHE[key] = t`; `if (t := _CACHE.get(key)) is not None: return t` followed by code that fills
`_CACHE[...]`) whose key is a runtime value (a name, an attribute, a tuple holding one: a shape, a batch
size) builds again for each new key, which serving meets per request: its code is per-request ("runs on
each cache miss"). A memo with a constant key (`_CACHE["table"]`), or a guard with no key at all
(`if self._x is None:`), builds once and stays one-time.

Heuristic `PROCESS_CONSTANT_KEYS`: a key that names a device or a dtype (`device`, `x.device`, `dtype`,
`torch.float32`, `(device, dtype)`, `str(x.device)`, `f"{device}"`) takes one value per process, or a few:
such a memo builds once, like a constant key. A local key (`key = (str(device), dtype)`, then
`_CACHE.get(key)`) is judged by the value bound to it.

The collector tells the two apart with `runtime_memo_key` / `runtime_lazy_memo_key`; which guards are memos
at all is its own decision.
"""

from __future__ import annotations

import ast
from typing import Callable, Optional, Sequence


ValueAt = Callable[[ast.Name], Optional[ast.expr]]


def runtime_memo_key(test: ast.expr, body: Sequence[ast.stmt], value_at: ValueAt) -> bool:
    """Whether the memo guard `if test: body` is keyed on a runtime value."""
    return _is_runtime(_guard_key(test, body), value_at)


def runtime_lazy_memo_key(statement: ast.stmt, value_at: ValueAt) -> bool:
    """Whether the early return of a lazy build (`if (t := C.get(k)) is not None: return t`) reads a memo
    keyed on a runtime value."""
    test = statement.test if isinstance(statement, ast.If) else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        test = test.left
    if isinstance(test, ast.NamedExpr):
        test = test.value
    if isinstance(test, ast.Name):
        test = value_at(test) or test
    return _is_runtime(_lookup_key(test), value_at)


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
# `torch.float32` and the like: a dtype written out.
_TORCH_DTYPES = frozenset(
    "float float16 float32 float64 half bfloat16 double int int8 int16 int32 int64 long short uint8 bool "
    "float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz complex64 complex128".split()
)
_KEY_STEPS = 4  # local names followed back to the key's value: `key = (dev, dtype)`


def _is_runtime(key: Optional[ast.expr], value_at: ValueAt, steps: int = _KEY_STEPS) -> bool:
    if key is None:
        return False
    if isinstance(key, ast.Name) and steps > 0 and not _names_a_process_constant(key):
        bound = value_at(key)
        if bound is not None:
            return _is_runtime(bound, value_at, steps - 1)
    if isinstance(key, (ast.Tuple, ast.JoinedStr)):
        return any(_is_runtime(element, value_at, steps) for element in _parts(key))
    if isinstance(key, ast.FormattedValue):
        return _is_runtime(key.value, value_at, steps)
    if _is_str_of(key):
        return _is_runtime(key.args[0], value_at, steps)  # type: ignore[attr-defined]
    return not isinstance(key, ast.Constant) and not _names_a_process_constant(key)


def _parts(key: ast.expr) -> Sequence[ast.expr]:
    return key.elts if isinstance(key, ast.Tuple) else key.values  # type: ignore[attr-defined]


def _is_str_of(key: ast.expr) -> bool:
    """`str(x)` / `repr(x)`: a key with as many values as `x`."""
    return (
        isinstance(key, ast.Call)
        and isinstance(key.func, ast.Name)
        and key.func.id in ("str", "repr")
        and len(key.args) == 1
        and not key.keywords
    )


def _names_a_process_constant(key: ast.expr) -> bool:
    if isinstance(key, ast.Attribute) and isinstance(key.value, ast.Name) and key.value.id == "torch":
        return key.attr in _TORCH_DTYPES
    name = key.id if isinstance(key, ast.Name) else key.attr if isinstance(key, ast.Attribute) else None
    return name is not None and any(name == n or name.endswith("_" + n) for n in PROCESS_CONSTANT_KEYS)

"""One-time guards: code under them runs once (or once per key), not per step, whatever calls it.

Cached-build guards (`if self._x is None:`, `if not hasattr(self, "_x"):`), memo tables (`if key not in
cache:`), bounds that grow on demand, once flags (`if not X.done:` where the module only sets `done` to True)
and lazy-build returns (`if self._w is not None: return self._w` followed by code that sets `self._w`).
Capture branches (`if in_capture:`, `x if torch.cuda.is_current_stream_capturing() else y`) run while a CUDA
graph is captured: once per graph.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from h2dlint.facts.arguments import string_value
from h2dlint.facts.heuristics import BY_ID
from h2dlint.facts.placement_exports import statements_within
from h2dlint.facts.placement_regions import rows_naming
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.syntax import glob_matcher, is_none, is_self, last_name


def once_flags(module: ast.Module) -> FrozenSet[str]:
    """Attributes that the functions of `module` set only to True, at least once (`cls.has_set_value = True`),
    apart from `__init__`, which gives the default."""
    verdicts: Dict[str, bool] = {}
    for statement in _statements(module.body):
        for attribute, value in _attribute_assignments(statement):
            is_true = isinstance(value, ast.Constant) and value.value is True
            verdicts[attribute] = verdicts.get(attribute, True) and is_true
    return frozenset(attribute for attribute, only_true in verdicts.items() if only_true)


def is_dropped(attribute: Optional[str], module: ast.Module, text: str, is_one_time: Callable[[str], bool]) -> bool:
    """Whether a function other than `__init__` and the one-time ones (`is_one_time`: `reset_*`, loading) sets
    `attribute` back to None (`self._meta = None`): a cache of it is then rebuilt after each such call, not once.
    Found in the module's `text` first, then the functions around those lines."""
    if attribute is None:
        return False
    rows = rows_naming(text, (f".{attribute} = None", f".{attribute}=None"))
    names = enclosing_functions(module, rows) if rows else []
    return any(name not in ("", "__init__") and not is_one_time(name) for name in names)


def enclosing_functions(module: ast.Module, rows: Sequence[int]) -> List[str]:
    """The name of the innermost function around each of `rows` (lines), or "" at module or class level; found
    through statements only, which costs far less than visiting every expression."""
    found: List[str] = []
    for row in rows:
        name, body = "", module.body
        while True:
            inner = next((s for s in _defs(body) if s.lineno <= row <= (s.end_lineno or s.lineno)), None)
            if inner is None:
                break
            name = inner.name if not isinstance(inner, ast.ClassDef) else name
            body = inner.body
        found.append(name)
    return found


def _defs(body: Sequence[ast.stmt]) -> Iterator[Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]]:
    """The functions and classes defined in `body`, also inside its branches, loops and `with` blocks."""
    for statement in statements_within(list(body)):
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield statement


def guarded_attribute(test: ast.expr, tested_value: Optional[ast.expr]) -> Optional[str]:
    """The attribute a cached-build guard tests: `_x` of `self._x is None`, of `getattr(self, "_x", None) is
    None`, or of `t is None` after `t = self._x`."""
    subject = test.left if isinstance(test, ast.Compare) else None
    if isinstance(subject, ast.Name) and isinstance(tested_value, ast.Attribute):
        return tested_value.attr
    if isinstance(subject, ast.Attribute):
        return subject.attr
    if isinstance(subject, ast.Call) and len(subject.args) >= 2:
        return string_value(subject.args[1])
    return None


_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case) if hasattr(ast, "match_case") else (ast.stmt, ast.excepthandler)


def _statements(body: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    """Every statement in `body` and the statements nested in it (function and class bodies, branches,
    loops, handlers), except the bodies of `__init__`; assignments are statements, so no expression is
    walked."""
    stack = list(reversed(body))
    while stack:
        statement = stack.pop()
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == "__init__":
            continue
        yield statement
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            nested = getattr(statement, field, None)
            if isinstance(nested, list):  # `except` handlers and `match` cases are blocks of statements too
                stack.extend(reversed([n for n in nested if isinstance(n, _BLOCKS)]))


def _attribute_assignments(node: ast.AST) -> Iterable[Tuple[str, Optional[ast.expr]]]:
    """(attribute name, value) for each attribute `node` assigns; the value is None for an augmented
    assignment or when the target is unpacked."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                yield target.attr, node.value
            elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
                yield from ((n.attr, None) for n in ast.walk(target) if isinstance(n, ast.Attribute))
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Attribute):
        yield node.target.attr, node.value if isinstance(node, ast.AnnAssign) else None


def is_once_flag_guard(test: ast.expr, flags: Callable[[], FrozenSet[str]]) -> bool:
    """`if not X.done:` where this module only ever sets `done` to True (outside `__init__` and class
    bodies, which give the default): the block runs until the flag is set, once. `flags` gives
    `once_flags(module)`, computed on first use."""
    if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
        return False
    flag = test.operand
    is_attribute = isinstance(flag, ast.Attribute) and isinstance(flag.value, ast.Name)
    return is_attribute and flag.attr in flags()  # type: ignore[union-attr]


def tested_value(test: ast.expr, names: NameResolver) -> Optional[ast.expr]:
    """What the local tested by `if t is None:` holds there, when known (`t = self._t` before it)."""
    is_none_test = isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
    if is_none_test and isinstance(test.left, ast.Name):  # type: ignore[attr-defined]
        return names.value_at(test.left)  # type: ignore[attr-defined]
    return None


def cached_build_guard(
    test: ast.expr, body: Sequence[ast.stmt], tested_value: Optional[ast.expr] = None
) -> Optional[str]:
    """The id of the one-time heuristic (`h2dlint.facts.heuristics`) that `if test: body` matches, or None:
    `self._x is None`, `getattr(self, "_x", None) is None` (`one-time-guard-none`) or `not hasattr(self, "_x")`
    (`one-time-guard-hasattr`), also on `cls.`; a memo (`one-time-guard-memo`): `if t is None:` whose body
    stores `t` in a cache (`cache[key] = t`) or back in the attribute it was read from (`tested_value`:
    `t = self._t` before, `self._t = t` in the body), or fills the table `t` was read from (`t =
    cache.get(key)` before, `cache[key] = (a, b)` in the body), or `if key not in cache:` whose body fills
    `cache[...]`;
    or a cache that grows on demand (`one-time-guard-grows-on-demand`, see `_grows_on_demand`). The shapes
    exclude each other, so switching one off never lets another match instead."""
    if _grows_on_demand(test, body):
        return "one-time-guard-grows-on-demand"
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        memo = _is_attribute_lookup(test.operand, "hasattr") or _memo_on_object(test.operand, body)
        return "one-time-guard-hasattr" if memo else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotIn):
        return "one-time-guard-memo" if any(_fills(statement, test.comparators[0]) for statement in body) else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)):
        return None
    if not (isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
        return None
    subject = test.left
    if isinstance(subject, ast.Attribute):
        return "one-time-guard-none" if is_self(subject.value) else None
    if isinstance(subject, ast.Name):
        table = _memo_table(tested_value) if tested_value is not None else None
        stores = any(
            _stores_in_cache(statement, subject.id)
            or _stores_back(statement, subject.id, tested_value)
            or (table is not None and _fills_within(statement, table))
            for statement in body
        )
        return "one-time-guard-memo" if stores else None
    return "one-time-guard-none" if _is_attribute_lookup(subject, "getattr") else None


def _grows_on_demand(test: ast.expr, body: Sequence[ast.stmt]) -> bool:
    """`if n > self.max_size: self.max_size = n; self._rebuild()`: the guarded block raises the very bound it
    compares against, so it runs only when a new maximum arrives, not per step."""
    raised = {
        target.attr
        for statement in body
        if isinstance(statement, (ast.Assign, ast.AugAssign))
        for target in (statement.targets if isinstance(statement, ast.Assign) else [statement.target])
        if isinstance(target, ast.Attribute) and is_self(target.value)
    }
    if not raised:  # most guarded blocks set no attribute of `self`: no walk of the test
        return False
    ordering = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
    if not any(isinstance(node, ast.Compare) and isinstance(node.ops[0], ordering) for node in ast.walk(test)):
        return False
    return any(isinstance(node, ast.Attribute) and is_self(node.value) and node.attr in raised for node in ast.walk(test))



def lazy_build_return(
    statement: ast.stmt, rest: Sequence[ast.stmt], value_at: Callable[[ast.Name], Optional[ast.expr]]
) -> Optional[str]:
    """`if layer._wrapper is not None: return ...` followed by code that sets `layer._wrapper`: what follows
    runs once, on the first call. The guard may read a local copied from the attribute just before
    (`context = self._context` then `if context is not None: return context`). A memo lookup is the same
    once per key: `if (ptrs := _PTR_CACHE.get(key)) is not None: return ptrs` (or `if ptrs := ...:`, or
    `_PTR_CACHE[key]`) followed by code that fills `_PTR_CACHE[...]`. Returns the id of the heuristic
    (`one-time-lazy-build` or `one-time-memo-lookup`), or None."""
    if not (isinstance(statement, ast.If) and not statement.orelse and isinstance(statement.body[-1], ast.Return)):
        return None
    subject = _lookup_tested_for_a_value(statement.test)
    bare_name = statement.test is subject and isinstance(subject, ast.Name)
    if subject is None or (bare_name and not _returns(statement, subject)):  # type: ignore[arg-type]
        return None  # a bare `if x: return` is a memo only when it returns `x`
    looked_up = (value_at(subject) or subject) if isinstance(subject, ast.Name) else subject
    guarded, cache = _attribute_of_name(looked_up), _memo_table(looked_up)
    if guarded is None and cache is None:
        return None
    later = (node for statement in rest for node in ast.walk(statement))
    if guarded is not None:
        sets = any(isinstance(node, ast.Assign) and guarded in map(_attribute_of_name, node.targets) for node in later)
        return "one-time-lazy-build" if sets else None
    return "one-time-memo-lookup" if any(_fills(node, cache) for node in later) else None  # type: ignore[arg-type]



def _lookup_tested_for_a_value(test: ast.expr) -> Optional[ast.expr]:
    """What `test` checks holds a value: `x` for `x is not None` or a bare `x`; `d.get(k)` for
    `(x := d.get(k)) is not None` or `x := d.get(k)`."""
    if isinstance(test, ast.Compare):
        if len(test.ops) != 1 or not isinstance(test.ops[0], ast.IsNot) or not is_none(test.comparators[0]):
            return None
        test = test.left
    if isinstance(test, ast.NamedExpr):
        return test.value
    return test if isinstance(test, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else None



def _returns(statement: ast.If, name: ast.Name) -> bool:
    last = statement.body[-1]
    return isinstance(last, ast.Return) and isinstance(last.value, ast.Name) and last.value.id == name.id



def _memo_table(lookup: ast.expr) -> Optional[ast.expr]:
    """The mapping `lookup` reads an entry of: `cache` for `cache.get(key)` or `cache[key]`."""
    if isinstance(lookup, ast.Subscript):
        return lookup.value
    is_get = isinstance(lookup, ast.Call) and isinstance(lookup.func, ast.Attribute) and lookup.func.attr == "get"
    return lookup.func.value if is_get else None  # type: ignore[union-attr]



def _attribute_of_name(target: ast.expr) -> Optional[Tuple[str, str]]:
    """("layer", "_wrapper") for `layer._wrapper`."""
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return (target.value.id, target.attr)
    return None



def _stores_in_cache(statement: ast.stmt, name: str) -> bool:
    """`cache[key] = name` (a memo table keeps what the guarded block built)."""
    return (
        isinstance(statement, ast.Assign)
        and isinstance(statement.value, ast.Name)
        and statement.value.id == name
        and any(isinstance(target, ast.Subscript) for target in statement.targets)
    )



def _stores_back(statement: ast.stmt, name: str, read_from: Optional[ast.expr]) -> bool:
    """`self._t = name`, where `name` was read from `self._t` (`read_from`)."""
    if not (isinstance(read_from, ast.Attribute) and is_self(read_from.value)):
        return False
    return (
        isinstance(statement, ast.Assign)
        and isinstance(statement.value, ast.Name)
        and statement.value.id == name
        and _attribute_of_name(read_from) in map(_attribute_of_name, statement.targets)
    )



def _fills(statement: ast.stmt, cache: ast.expr) -> bool:
    """`cache[...] = ...`, the mapping written as in the guard (`self._tables`, `_CACHE`)."""
    return isinstance(statement, ast.Assign) and any(
        isinstance(target, ast.Subscript) and ast.dump(target.value) == ast.dump(cache)
        for target in statement.targets
    )



def _fills_within(statement: ast.stmt, cache: ast.expr) -> bool:
    """`cache[...] = ...` in `statement` or a block inside it (`with lock:`), not in a nested function: `t =
    cache.get(key)` then `if t is None:` whose block fills `cache[key]` with what it builds runs once per key."""
    return any(_fills(node, cache) for node in statements_within([statement]))


def _memo_on_object(test: ast.expr, body: Sequence[ast.stmt]) -> bool:
    """`hasattr(layer, "_cached")` whose guarded block sets `layer._cached`: built once per object, as on `self`."""
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "hasattr"):
        return False
    if len(test.args) != 2 or not isinstance(test.args[0], ast.Name):
        return False
    owner, attribute = test.args[0].id, string_value(test.args[1])
    return attribute is not None and any(
        _attribute_of_name(target) == (owner, attribute)
        for statement in body
        for node in ast.walk(statement)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
    )


def _is_attribute_lookup(expr: ast.expr, function: str) -> bool:
    """`hasattr(self, ...)` / `getattr(self, ...)` (or on `cls`)."""
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == function
        and bool(expr.args)
        and is_self(expr.args[0])
    )


CAPTURE_GUARD = "one-time-guard-capture"
DEBUG_GUARD = "one-time-guard-debug"
CPU_PLATFORM_GUARD = "one-time-guard-cpu-platform"
RESCALING_GUARD = "one-time-guard-rescaling"
FLAG_GUARDS = (CAPTURE_GUARD, DEBUG_GUARD, CPU_PLATFORM_GUARD, RESCALING_GUARD)  # branches a flag's name selects
# Words of a flag's name that turn its sense round: such a flag is no guard.
NEGATING_WORDS = frozenset({"no", "not", "disable", "disabled", "skip", "without", "off", "suppress", "never"})


def flag_branch(test: ast.expr, enabled: Callable[[str], bool]) -> Optional[Tuple[str, bool]]:
    """(the heuristic, whether the body (True) or the `else` (False) is the branch it makes one-time) when
    `test` is a flag or flag call that one of `FLAG_GUARDS` names (`in_capture`,
    `torch.cuda.is_current_stream_capturing()`, `self.debug_mode`, `envs.SGLANG_DEBUG_X.get()`), or its negation;
    None otherwise."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = flag_branch(test.operand, enabled)
        return None if inner is None else (inner[0], not inner[1])
    flag = test.func if isinstance(test, ast.Call) and not test.args else test
    if isinstance(test, ast.Call) and isinstance(flag, ast.Attribute) and flag.attr == "get":
        flag = flag.value  # `envs.SGLANG_DEBUG_X.get()`: the flag is the variable read
    if not isinstance(flag, (ast.Name, ast.Attribute)):
        return None
    name = last_name(flag).lstrip("_").lower()
    if NEGATING_WORDS & set(name.split("_")):
        return None  # `self.disable_debug`, `no_capture`: the flag's sense is the other way round
    for heuristic in FLAG_GUARDS:
        if heuristic == CPU_PLATFORM_GUARD and isinstance(test, ast.Attribute):
            continue  # `t.is_cpu` says where a tensor is, not which platform runs: no guard of the platform's
        if enabled(heuristic) and glob_matcher(BY_ID[heuristic].patterns)(name) is not None:
            return heuristic, True
    return None


def returns_unless_flag(statement: ast.stmt, enabled: Callable[[str], bool]) -> Optional[str]:
    """The guard (`flag_branch`) of `if not <flag>: return`: what follows it runs only with the flag on."""
    if not isinstance(statement, ast.If) or statement.orelse:
        return None
    if len(statement.body) != 1 or not isinstance(statement.body[0], ast.Return):
        return None
    flagged = flag_branch(statement.test, enabled)
    return flagged[0] if flagged is not None and not flagged[1] else None

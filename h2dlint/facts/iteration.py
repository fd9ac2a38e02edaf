"""Loops that repeat steps written in the source (`for v in (a, b, c):`) rather than running once per item of
data: their bodies are not per-step. Loops over requests (`for req in batch.reqs:`), whose bodies run once
per request. And denoising loops (`for t in timesteps:`), whose bodies run once per step."""

from __future__ import annotations

import ast
from typing import Iterator, Sequence

from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.syntax import glob_matcher, last_name, target_names


def is_fixed_iteration(iterable: ast.expr, names: NameResolver) -> bool:
    """Whether a loop over `iterable` repeats steps written in the source rather than running once per item
    of data: a literal tuple, list or set (`for v in (hosts, gpus, sizes): ...`), or a table of constants,
    written in place (`[1, 2, 4] + list(range(8, 256, 8))`) or in a local the function assigns once
    (`sizes = [2048, 4096]`). Such a loop does not make its body per-step: setup code walks grids of sizes
    this way (autotuning, warmup inputs), while per-step code loops over requests, tokens or layers, whose
    number is data. A bare `range(n)` still counts as a loop: it is how code repeats an action n times."""
    if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)) and not any(
        isinstance(element, ast.Starred) for element in iterable.elts
    ):
        return True
    if isinstance(iterable, ast.Name):
        value = names.local_value(iterable.id)
        return value is not None and not _is_counted_range(value) and _is_constant_collection(value)
    return isinstance(iterable, ast.BinOp) and _is_constant_collection(iterable)


def _is_counted_range(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "range"


_CONSTANT_COLLECTION_CALLS = frozenset({"range", "list", "tuple", "sorted", "reversed"})


def _is_constant_collection(expr: ast.expr, depth: int = 0) -> bool:
    """`expr` is built from number and string literals only: literals, `+`/`*` of them, and `range`/`list`
    (and the like) of them."""
    if depth > 8:
        return False
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (int, float, str)) and not isinstance(expr.value, bool)
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_constant_collection(e, depth + 1) for e in expr.elts)
    if isinstance(expr, ast.UnaryOp):
        return _is_constant_collection(expr.operand, depth + 1)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Mult, ast.Sub, ast.FloorDiv)):
        return _is_constant_collection(expr.left, depth + 1) and _is_constant_collection(expr.right, depth + 1)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and not expr.keywords:
        return expr.func.id in _CONSTANT_COLLECTION_CALLS and bool(expr.args) and all(
            _is_constant_collection(a, depth + 1) for a in expr.args
        )
    return False


_WRAPPERS = frozenset({"enumerate", "zip", "sorted", "reversed", "list", "tuple", "set"})
_VIEWS = frozenset({"items", "keys", "values", "copy"})


def iterates_requests(target: ast.expr, iterable: ast.expr, patterns: Sequence[str]) -> bool:
    """Whether a `for` loop goes over requests, by its names: a target (`req`, `rid`, any element of
    `for i, req in ...`) or the last name of the iterable (`batch.reqs`, `enumerate(self.requests)`,
    `reqs_to_fill.items()`) matches one of `patterns` (`hot-per-request-loop-over-requests`)."""
    if not patterns:
        return False
    names = [*target_names(target), *_iterated_names(iterable)]
    matches = glob_matcher(tuple(patterns))
    return any(matches(name) is not None for name in names)


def _iterated_names(iterable: ast.expr) -> Iterator[str]:
    """The names a loop's iterable ends in, through `enumerate`/`zip`/`sorted` and `.items()`-like views."""
    if isinstance(iterable, ast.Call):
        func = iterable.func
        if isinstance(func, ast.Name) and func.id in _WRAPPERS:
            for argument in iterable.args:
                yield from _iterated_names(argument)
        elif isinstance(func, ast.Attribute) and func.attr in _VIEWS and not iterable.args:
            yield from _iterated_names(func.value)
    elif isinstance(iterable, ast.Subscript):
        yield from _iterated_names(iterable.value)
    else:
        name = last_name(iterable)
        if name:
            yield name


def iterates_timesteps(iterable: ast.expr, patterns: Sequence[str]) -> bool:
    """Whether a loop is a denoising loop (`hot-denoising-loop`): a name anywhere in what a `for` iterates
    (`timesteps`, `self.progress_bar(self.scheduler.timesteps)`, `range(len(timesteps))`), or in the test of a
    `while` (`begin < len(scheduler.timesteps)`), matches one of `patterns`."""
    if not patterns:
        return False
    matches = glob_matcher(tuple(patterns))
    names = (n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(iterable) if isinstance(n, _NAMED))
    return any(matches(name) is not None for name in names)


_NAMED = (ast.Name, ast.Attribute)


def runs_until_stopped(loop: ast.While, stop_names: Sequence[str]) -> bool:
    """Whether a `while` loop runs until the process stops (`hot-service-loop`): `while True:` (`while 1:`), or
    a test on a stop or run flag alone (`while not self._stop_event.is_set():`, `while self._running:`), whose
    last name matches one of `stop_names`; and no statement of its body leaves it on the first pass (a retry
    loop: `while True: try: connect(); break`). A loop that counts down or polls data has a test of its own."""
    if not stop_names or _leaves_on_first_pass(loop.body):
        return False
    test = loop.test
    if isinstance(test, ast.Constant):
        return test.value is True or test.value == 1
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        test = test.func  # `is_set()`, `is_running()`
    name = last_name(test)
    if isinstance(test, ast.Attribute) and test.attr in _FLAG_METHODS:
        name = last_name(test.value) or name
    return bool(name) and glob_matcher(tuple(stop_names))(name) is not None


_FLAG_METHODS = frozenset({"is_set", "is_alive"})


def _leaves_on_first_pass(body: Sequence[ast.stmt]) -> bool:
    """A `break` or `return` that every pass reaches: in the body itself or in the body of a `try` in it."""
    for statement in body:
        if isinstance(statement, (ast.Break, ast.Return)):
            return True
        if isinstance(statement, ast.Try) and _leaves_on_first_pass(statement.body):
            return True
    return False

"""Functions that only lead to an exception: their code runs on an error path, not per step.

Heuristic `cold-always-raises`: a function whose body ends in a `raise` and has no `return`, `yield` or `await`
of its own (`_raise_stale_slot_assertion(...)`, which formats a message, reading tensors for it, and raises)
runs only on the way to an exception, so it is cold whoever calls it. A body raising `NotImplementedError` is
an interface for subclasses to define (`facts.dispatch.declares_interface`), not an error path.

Heuristic `one-time-error-path`, the same idea inside a function: the exception a `raise` statement builds, an
`assert`'s message, and a branch of an `if` or an `except` handler that ends in `raise` with no other way out
(`if bad: logger.error(t.tolist()); raise ValueError(...)`) run only when something has gone wrong, not per
step (`walk.Walk` visits them under that one-time guard).
"""

from __future__ import annotations

import ast
from typing import Sequence, Union

from h2dlint.facts.placement_regions import own_nodes

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
ERROR_PATH = "one-time-error-path"
_WAYS_OUT = (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom, ast.Await)


def always_raises(function: FunctionNode) -> bool:
    """Whether every run of `function` ends in its final `raise` (see the module docstring)."""
    last = function.body[-1]
    if not isinstance(last, ast.Raise) or last.exc is None or _raises_not_implemented(last.exc):
        return False
    return not any(isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)) for node in own_nodes(function))


def leads_to_raise(branch: Sequence[ast.AST]) -> bool:
    """Whether the statements `branch` (an `if`'s body or `else`, an `except` handler) end in a `raise` that
    nothing before it can leave the branch around: no `return`, `break`, `continue`, `yield` or `await` among
    them, nor a nested function, whose own code runs elsewhere."""
    if not branch or not isinstance(branch[-1], ast.Raise):
        return False
    return not any(
        isinstance(node, _WAYS_OUT + (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        for statement in branch[:-1]
        for node in ast.walk(statement)
    )


def _raises_not_implemented(exc: ast.expr) -> bool:
    raised = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"

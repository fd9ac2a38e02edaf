"""Functions that only lead to an exception: their code runs on an error path, not per step.

Heuristic `cold-always-raises`: a function whose body ends in a `raise` and has no `return`, `yield` or `await`
of its own (`_raise_stale_slot_assertion(...)`, which formats a message, reading tensors for it, and raises)
runs only on the way to an exception, so it is cold whoever calls it. A body raising `NotImplementedError` is
an interface for subclasses to define (`facts.dispatch.declares_interface`), not an error path.
"""

from __future__ import annotations

import ast
from typing import Union

from h2dlint.facts.placement_regions import own_nodes

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]


def always_raises(function: FunctionNode) -> bool:
    """Whether every run of `function` ends in its final `raise` (see the module docstring)."""
    last = function.body[-1]
    if not isinstance(last, ast.Raise) or last.exc is None or _raises_not_implemented(last.exc):
        return False
    return not any(isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await)) for node in own_nodes(function))


def _raises_not_implemented(exc: ast.expr) -> bool:
    raised = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"

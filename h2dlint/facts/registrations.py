"""Registrations that change how a function runs: torch custom ops, `@torch.compile`, caching decorators,
properties (a read of the attribute runs the body), and CUDA-graph capture blocks."""

from __future__ import annotations

import ast
import re
from typing import Dict, Optional, Sequence

from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.summary import FunctionInfo
from h2dlint.facts.syntax import last_name

GRAPH_CAPTURE = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})


# Decorators that run a function's body once per distinct argument: a build cached this way is one-time.
_CACHE_DECORATORS = frozenset({"cache", "lru_cache", "cached_property", "cached"})


# Decorators that make a function an attribute read: `obj.name` runs it, caching or not.
_ACCESSOR_DECORATORS = frozenset({"property", "cached_property", "getter"})


# Registrations of a function as a torch custom op, by the registering decorator's or function's name:
# `@torch.library.custom_op`, sglang's `@register_custom_op`, vllm's `direct_register_custom_op(op_func=f)`.
_CUSTOM_OP_REGISTRATION = re.compile(r"(custom_op|^(direct_)?register(_\w+)?_op)$")


def is_graph_capture(expr: ast.expr, names: NameResolver) -> bool:
    """`torch.cuda.graph(...)`, however torch is imported: the context manager of a capture block."""
    return isinstance(expr, ast.Call) and names.qualify(expr.func) in GRAPH_CAPTURE


def cache_decorator(decorators: Sequence[ast.expr]) -> Optional[str]:
    """The decorator, as written, that caches a function's results (`@functools.lru_cache(...)`, `@cache`)."""
    for decorator in decorators:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if last_name(target) in _CACHE_DECORATORS:
            return ast.unparse(target)
    return None



def is_property(decorators: Sequence[ast.expr]) -> bool:
    """Decorated `@property` and with no cache: each read of the attribute runs the body (`cached_property`
    runs it once per object, as a memo)."""
    return any(isinstance(d, ast.Name) and d.id == "property" for d in decorators) and cache_decorator(decorators) is None


def is_accessor(decorators: Sequence[ast.expr]) -> bool:
    """A property of any kind (`@property`, `@cached_property`, `@name.getter`), for placement: `obj.name` gives
    what the body returns, so `obj.name(...)` calls that value (a module, a callable), not the body."""
    return any(last_name(d.func if isinstance(d, ast.Call) else d) in _ACCESSOR_DECORATORS for d in decorators)


def custom_op_decorator(decorators: Sequence[ast.expr]) -> Optional[str]:
    """The decorator, as written, that registers a function as a torch custom op (`@register_custom_op(...)`)."""
    for decorator in decorators:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _CUSTOM_OP_REGISTRATION.search(last_name(target)):
            return f"`@{ast.unparse(target)}`"
    return None



def compile_decorator(decorators: Sequence[ast.expr], names: NameResolver) -> Optional[str]:
    """`torch.compile` when a decorator is `@torch.compile` or `@torch.compile(...)` (however torch is imported)."""
    for decorator in decorators:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if names.qualify(target) == "torch.compile":
            return "torch.compile"
    return None



def registered_op_function(call: ast.Call) -> Optional[str]:
    """The function name a registering call makes a custom op of: `direct_register_custom_op("op", f)` or
    `direct_register_custom_op(op_name="op", op_func=f)` give `f`."""
    name = last_name(call.func)
    if not name.endswith("op") or not _CUSTOM_OP_REGISTRATION.search(name):  # the test first: most calls fail it
        return None
    given = [k.value for k in call.keywords if k.arg == "op_func"] or call.args[1:2]
    return given[0].id if given and isinstance(given[0], ast.Name) else None


def registered_function(functions: Dict[str, FunctionInfo], registering: str, name: str) -> Optional[FunctionInfo]:
    """The function `name` that a registering call in `registering` (a qualname or MODULE) makes a custom
    op of: `name` nested in the registering function, or else defined at module level."""
    nested = functions.get(f"{registering}.<locals>.{name}")
    top = functions.get(name)
    return nested or (top if top is not None and top.class_qualname is None else None)

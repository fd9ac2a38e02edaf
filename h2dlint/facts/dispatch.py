"""Dispatch the call graph cannot see by name: dispatch tables, method aliases, class aliases, and methods
declared on an interface.

A local bound to a class, or to a choice of classes (`mlp_cls = MoEFP8 if fp8 else MoE`), builds them when it
is called (`mlp_cls(config)`): `class_aliases` names them, so the call counts as a call of each.

Dispatch tables are dicts of functions, and the calls made through them (`HANDLERS[kind](batch)`).

Heuristic `DISPATCH_TABLE`: a name bound to a dict literal whose values are all functions as written (`f`,
`self.m`, `cls.m`), or a dict filled with them (`HANDLERS[key] = f`), is a table; a call through it
(`HANDLERS[key](...)`, `HANDLERS.get(key)(...)`, `self.HANDLERS[key](...)`) may reach any of them, so it
links to every one. The collector records the tables in `ModuleSummary.tables` and the calls as `CallRef`s
of kind "table"; `ModuleGraph` and `ProjectGraph` resolve them.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, Optional, Sequence, Tuple, Union

Entry = Tuple[str, str]  # ("name", f) for `f`; ("self", m) for `self.m` / `cls.m`


def table_entries(value: ast.expr) -> Optional[Tuple[Entry, ...]]:
    """The functions a dict literal maps to, when every value is one as written; None otherwise."""
    if not isinstance(value, ast.Dict) or not value.values or None in value.keys:
        return None
    entries = [_entry(item) for item in value.values]
    return tuple(dict.fromkeys(e for e in entries if e is not None)) if all(entries) else None  # type: ignore[misc]


def record_table(tables: Dict[str, Tuple[Entry, ...]], target: ast.expr, value: ast.expr) -> None:
    """`TABLE = {...}` or `TABLE[key] = f` (also `self.TABLE`): add what it maps to to `tables`."""
    name = _table_name(target)
    if name is not None:
        entries = table_entries(value)
        if entries is not None:
            tables[name] = tuple(dict.fromkeys(tables.get(name, ()) + entries))
        return
    if isinstance(target, ast.Subscript):
        name, entry = _table_name(target.value), _entry(value)
        if name is not None and entry is not None:
            tables[name] = tuple(dict.fromkeys(tables.get(name, ()) + (entry,)))


def table_called(func: ast.expr) -> Optional[str]:
    """The table a call goes through: `T[k](...)` or `T.get(k)(...)`, `T` a name or `self.T`; else None."""
    if isinstance(func, ast.Subscript):
        return _table_name(func.value)
    is_get = isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr == "get"
    return _table_name(func.func.value) if is_get else None  # type: ignore[union-attr]


def _table_name(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
        return node.attr
    return None


def _entry(value: ast.expr) -> Optional[Entry]:
    if isinstance(value, ast.Name):
        return ("name", value.id)
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id in ("self", "cls"):
        return ("self", value.attr)
    return None


# Heuristic `METHOD_ALIAS`: a method bound to an instance attribute in a method of its class
# (`self.update = self.update_sliding_window`, chosen in `__init__` by configuration; also both branches of
# `self.a if cond else self.b`) is what a call of that attribute reaches, on `self` or on an object of the
# class (`self.indices_updater.update(...)`). The collector records the aliases in
# `ModuleSummary.method_aliases`; `ModuleGraph` and `ProjectGraph` add them to the method of that name, if
# the class defines one (the alias shadows it on the instance). Evidence: sglang's FlashInfer indices updaters pick `update_sliding_window`,
# `update_cross_attention` or `update_single_wrapper` this way, and each backend's `init_forward_metadata`
# calls `update` per step.
def method_aliases(target: ast.expr, value: ast.expr) -> Tuple[Tuple[str, str], ...]:
    """(attribute, method) for `self.attribute = self.method` (either branch of a conditional); else ()."""
    if not (isinstance(target, ast.Attribute) and _on_self(target.value)):
        return ()
    values = (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,)
    return tuple(
        (target.attr, v.attr) for v in values if isinstance(v, ast.Attribute) and _on_self(v.value)
        and v.attr != target.attr
    )


def _on_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


# Heuristic `INTERFACE_METHOD`: a method declared and left to subclasses: decorated `@abstractmethod`, a body
# that only raises `NotImplementedError`, or a body of `...` / `pass` in a class based on `ABC` or
# `Protocol`. A call of it on a receiver of unknown class may reach every override in the project
# (`ProjectGraph` links them all), which is how a backend, a scheduler or a sampler is called.
INTERFACE_BASES = frozenset({"ABC", "Protocol", "ABCMeta"})
_ABSTRACT_DECORATORS = frozenset({"abstractmethod", "abc.abstractmethod"})


def declares_interface(node: Union[ast.FunctionDef, ast.AsyncFunctionDef], class_bases: Sequence[str]) -> bool:
    if any(ast.unparse(d) in _ABSTRACT_DECORATORS for d in node.decorator_list):
        return True
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and
                                         isinstance(s.value.value, str))]
    if len(body) != 1:
        return False
    only = body[0]
    if isinstance(only, ast.Raise) and only.exc is not None:
        raised = only.exc.func if isinstance(only.exc, ast.Call) else only.exc
        return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"
    empty = isinstance(only, ast.Pass) or (isinstance(only, ast.Expr) and isinstance(only.value, ast.Constant)
                                           and only.value.value is Ellipsis)
    return empty and any(base in INTERFACE_BASES for base in class_bases)


def class_aliases(func: ast.expr, value_at: Callable[[ast.Name], Optional[ast.expr]]) -> Tuple[str, ...]:
    """The classes a call of the local `func` builds: `A`, `B` after `func = A if c else B` (or `func = A`),
    by capitalised names as written; () for anything else."""
    value = value_at(func) if isinstance(func, ast.Name) else None
    choices = (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,)
    names = tuple(choice.id for choice in choices if isinstance(choice, ast.Name) and choice.id[:1].isupper())
    return names if len(names) == len(choices) else ()

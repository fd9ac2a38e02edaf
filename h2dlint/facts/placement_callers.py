"""Where a parameter of a private function lives, from the calls its own module makes of it.

`def _pack(self, lens): ... lens.max().item()` says nothing of `lens`; `self._pack(seq_lens.cuda())`, the
only call of it, does. A private function (one leading underscore: `_pack`, a method `self._pack`) is an
implementation detail of its module, called from there, so its parameter lives where every call in the module
passes it (`placement-parameter-from-callers`):
- every call of it in the module is a plain call made in a top-level function or method (for a method, on
  `self`, from its class or a subclass here that does not override it); any other reference to the name (a
  callback, a call in a nested function or lambda, `obj._pack(...)`) leaves the callers unknown, and so the
  parameter;
- each call passes the parameter by position or keyword, with no `*args`/`**kwargs` that may hide it; a call
  that leaves it to its default, or passes a constant (`None`), passes no tensor and is skipped;
- the arguments agree (`agree_all`): one unknown, or a host and a device one, give unknown.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Dict, List, Optional, Tuple

from h2dlint.facts.placement import placement_of
from h2dlint.facts.placement_conventions import FROM_CALLERS
from h2dlint.facts.placement_exports import FunctionNode
from h2dlint.facts.placement_regions import own_nodes
from h2dlint.facts.placement_values import UNKNOWN, Place, Placement, agree_all, short

_Site = Tuple[FunctionNode, Optional[str], ast.Call]  # the calling function, its class, the call
# (private name -> its calls `_f(...)`, private method name -> its calls `self._m(...)`, how often each private
# name and each private attribute is referenced at all)
_CallIndex = Tuple[Dict[str, List[_Site]], Dict[str, List[_Site]], Dict[str, int], Dict[str, int]]
_NOT_PASSED = object()  # the call leaves the parameter to its default
_HIDDEN = object()  # `*args` or `**kwargs` may pass it


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


class CallerArguments:
    """The part of `placement_summary.ModulePlacements` that places a private function's parameters by the
    calls its module makes (`passed`). It uses the host's `_functions`, `_classes`, `_conventions`, `scope`,
    `_module`, `_summary`, `_names_for` and `_method_of`."""

    _call_index: Optional["_CallIndex"]

    def passed(self, function: Optional[FunctionNode], class_name: Optional[str], name: str, depth: int) -> Placement:
        """Where parameter `name` of `function` (a method of `class_name`, or a module function) lives, from the
        calls of it in this module; unknown for a public function or one defined inside another."""
        if function is None or not is_private(function.name) or not self._conventions.parameter_from_callers:
            return UNKNOWN
        method = class_name is not None
        if method and self._method_of(class_name, function.name)[0] is not function:  # type: ignore[arg-type]
            return UNKNOWN
        if not method and self._functions.get(function.name) is not function:
            return UNKNOWN
        key = (class_name or "", f"({function.name}){name}")
        return self._summary(key, lambda: self._passed(function, class_name, name, depth))

    def _passed(self, function: FunctionNode, class_name: Optional[str], name: str, depth: int) -> Placement:
        sites = self._callers(function, class_name)
        if not sites:
            return UNKNOWN
        found: List[Placement] = []
        for caller, owner, call in sites:
            argument = _argument(call, function, name, bound=class_name is not None)
            if argument is _HIDDEN:
                return UNKNOWN
            if argument is _NOT_PASSED or isinstance(argument, ast.Constant):
                continue
            scope = self.scope(self._names_for(caller, owner), owner, caller)  # type: ignore[attr-defined]
            placed = placement_of(argument, scope, depth + 1)  # type: ignore[arg-type]
            step = f"line {call.lineno}: `{short(call.func, 32)}({short(argument, 32)}, ...)` in `{caller.name}`"
            found.append(placed.via(step))
        if not found:
            return UNKNOWN
        agreed = found[0] if len(found) == 1 else agree_all(found)
        if agreed.place is Place.UNKNOWN:
            return agreed
        first = sites[0][2]
        more = f" (and {len(sites) - 1} more)" if len(sites) > 1 else ""
        written = short(first.func, 32)
        calls = f"at every call of `{written}(...)` in this file (line {first.lineno}{more})"
        evidence = f"is, {calls}, a tensor that {agreed.evidence}"
        return replace(agreed, evidence=evidence, heuristic=agreed.heuristic or FROM_CALLERS)

    def _callers(self, function: FunctionNode, class_name: Optional[str]) -> List[_Site]:
        """The calls of `function` in this module, when they are all its references; else empty."""
        by_name, by_self, names, attributes = self._calls()
        if class_name is None:
            sites = by_name.get(function.name, [])
            return sites if len(sites) == names.get(function.name, 0) else []
        sites = by_self.get(function.name, [])
        if len(sites) != attributes.get(function.name, 0):
            return []
        # `self._m(...)` in a subclass here that overrides `_m` calls its own method, not this one
        calls_this = all(o is not None and self._method_of(o, function.name)[0] is function for _, o, _ in sites)
        return sites if calls_this else []

    def _calls(self) -> "_CallIndex":
        """The calls of private functions and methods made in top-level functions and methods, and how often
        each private name is referenced anywhere in the module, worked out once."""
        if self._call_index is None:
            by_name: Dict[str, List[_Site]] = {}
            by_self: Dict[str, List[_Site]] = {}
            for caller, owner in self._top_level_functions():
                for node in own_nodes(caller):
                    if isinstance(node, ast.Call):
                        func = node.func
                        if isinstance(func, ast.Name) and is_private(func.id):
                            by_name.setdefault(func.id, []).append((caller, owner, node))
                        elif isinstance(func, ast.Attribute) and is_private(func.attr) and _is_self(func.value, caller):
                            if owner is not None:
                                by_self.setdefault(func.attr, []).append((caller, owner, node))
            names: Dict[str, int] = {}
            attributes: Dict[str, int] = {}
            for node in ast.walk(self._module):  # type: ignore[attr-defined]
                if isinstance(node, ast.Name) and is_private(node.id) and isinstance(node.ctx, ast.Load):
                    names[node.id] = names.get(node.id, 0) + 1
                elif isinstance(node, ast.Attribute) and is_private(node.attr):
                    attributes[node.attr] = attributes.get(node.attr, 0) + 1
            self._call_index = (by_name, by_self, names, attributes)
        return self._call_index

    def _top_level_functions(self) -> List[Tuple[FunctionNode, Optional[str]]]:
        functions: List[Tuple[FunctionNode, Optional[str]]] = [(f, None) for f in self._functions.values()]
        for class_name, node in self._classes.items():
            functions.extend(
                (f, class_name) for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
            )
        return functions


def _is_self(expr: ast.expr, caller: FunctionNode) -> bool:
    """Whether `expr` is the first parameter of the method `caller` (`self`)."""
    positional = (*caller.args.posonlyargs, *caller.args.args)
    return isinstance(expr, ast.Name) and bool(positional) and expr.id == positional[0].arg


def _argument(call: ast.Call, function: FunctionNode, name: str, bound: bool) -> object:
    """The expression `call` passes `function`'s parameter `name` (the first parameter bound to the receiver
    when `bound`), `_NOT_PASSED`, or `_HIDDEN`."""
    args = function.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if bound and not _is_static(function):
        positional = positional[1:]
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    if any(isinstance(a, ast.Starred) for a in call.args):
        return _HIDDEN
    if name in positional and positional.index(name) < len(call.args):
        return call.args[positional.index(name)]
    if any(keyword.arg is None for keyword in call.keywords):
        return _HIDDEN
    return _NOT_PASSED


def _is_static(function: FunctionNode) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in function.decorator_list)

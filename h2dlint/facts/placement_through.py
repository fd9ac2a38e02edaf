"""What a call returns, where its function only computes from one of its parameters: `_out_lengths(lens)` with
`def _out_lengths(lengths): return (lengths - 1) // 2 + 1` is where the argument `lens` is, at that call,
whatever other calls pass (`facts.placement_callers` needs every call to agree).

A function of this module (or a method of the class) follows its parameter `p` when every `return` gives a
value that lives where `p` does: worked out by placing its returns twice, with `p` on the device and then on the
host (every other parameter unknown), and getting the device and then the host back. Operations that keep a
tensor where it is (arithmetic, views, `.long()`, elementwise torch functions) pass the probe through; a copy
(`.to(device)`), a new tensor (`torch.zeros(n)`) or another input does not."""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Dict, Optional, Tuple

from h2dlint.facts.bindings import parameter_names
from h2dlint.facts.placement import placement_of
from h2dlint.facts.placement_callers import argument_for
from h2dlint.facts.placement_exports import FunctionNode
from h2dlint.facts.placement_values import UNKNOWN, Place, Placement, agreed

_RECEIVERS = ("self", "cls")
_IN_PROGRESS = ""  # a function whose parameters are being probed: a recursive call follows none


def first_parameter(function: FunctionNode) -> Optional[str]:
    """The name of `function`'s first positional parameter, if it has one."""
    positional = (*function.args.posonlyargs, *function.args.args)
    return positional[0].arg if positional else None


class ParameterFollowing:
    """The part of `placement_summary.ModulePlacements` that places a call's result where the argument its
    function follows lives (`passed_through`). It uses the host's `_callee`, `_returned_values`, `_names_for`
    and `scope`."""

    _followed: Optional[Dict[int, Optional[str]]] = None  # id of a function -> the parameter it follows

    def passed_through(self, call: ast.Call, class_name: Optional[str], depth: int) -> Optional[ast.expr]:
        """The argument of `call` that what it returns follows, or None."""
        function, owner = self._callee(call, class_name)  # type: ignore[attr-defined]
        if function is None:
            return None
        name = self._followed_parameter(function, owner, depth)
        if not name:
            return None
        argument = argument_for(call, function, name, bound=owner is not None)
        return argument if isinstance(argument, ast.expr) else None

    def _followed_parameter(self, function: FunctionNode, owner: Optional[str], depth: int) -> Optional[str]:
        if self._followed is None:
            self._followed = {}
        key = id(function)
        if key not in self._followed:
            self._followed[key] = _IN_PROGRESS
            self._followed[key] = self._probe_parameters(function, owner, depth)
        return self._followed[key]

    def _probe_parameters(self, function: FunctionNode, owner: Optional[str], depth: int) -> Optional[str]:
        values: Tuple[Optional[ast.expr], ...] = self._returned_values(function)  # type: ignore[attr-defined]
        if not values or any(value is None for value in values):
            return None
        for name in parameter_names(function.args):
            if name in _RECEIVERS:
                continue
            if self._returns_where(function, owner, name, Place.DEVICE, depth) is Place.DEVICE and (
                self._returns_where(function, owner, name, Place.HOST, depth).on_host
            ):
                return name
        return None

    def _returns_where(
        self, function: FunctionNode, owner: Optional[str], parameter: str, place: Place, depth: int
    ) -> Place:
        """Where `function`'s returns live with its `parameter` on `place` and every other one unknown."""
        probe = Placement(place, "is the parameter probed")
        scope = self.scope(self._names_for(function, owner), owner, function)  # type: ignore[attr-defined]
        scope = replace(scope, passed=lambda name, _: probe if name == parameter else UNKNOWN)
        values = self._returned_values(function)  # type: ignore[attr-defined]
        return agreed([placement_of(value, scope, depth + 1) for value in values if value is not None]).place

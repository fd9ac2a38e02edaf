"""Reading a call's arguments and literal values from `ast` nodes."""

from __future__ import annotations

import ast
from typing import Callable, List, Optional

from h2dlint.facts.tensor_ops import DATA_BUILDERS

_CONSTANTS = {"True": True, "False": False, "None": None}


def keyword_arg(call: ast.Call, name: str) -> Optional[ast.keyword]:
    for arg in call.keywords:
        if arg.arg == name:
            return arg
    return None


def keyword_value(call: ast.Call, name: str) -> Optional[ast.expr]:
    """The value passed as keyword `name`, or None when it is not passed by keyword."""
    arg = keyword_arg(call, name)
    return None if arg is None else arg.value


def positional_args(call: ast.Call) -> List[ast.expr]:
    """Plain positional arguments, up to the first `*` argument."""
    found = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            break
        found.append(arg)
    return found


def argument(call: ast.Call, position: int, keyword: str) -> Optional[ast.expr]:
    """The argument at `position` among the positional ones, else the `keyword` one, else None."""
    positional = positional_args(call)
    return positional[position] if len(positional) > position else keyword_value(call, keyword)


def has_star_args(call: ast.Call) -> bool:
    return any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords)


def string_value(expr: ast.expr) -> Optional[str]:
    """The value of a plain string literal (not an f-string), else None."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    return None


def is_constant(expr: ast.expr, *values: str) -> bool:
    """True for the constants `True`, `False` or `None` listed in `values`."""
    return isinstance(expr, ast.Constant) and any(expr.value is _CONSTANTS[v] for v in values)


def is_false_literal(expr: ast.expr) -> bool:
    if is_constant(expr, "False", "None"):
        return True
    return isinstance(expr, ast.Constant) and type(expr.value) is int and expr.value == 0


def is_empty_factory(call: ast.Call, qualified: str) -> bool:
    """A factory whose size (or data) is a literal 0 or empty: `torch.empty(0)`, `torch.zeros((0,))`,
    `torch.tensor([])`. `qualified` is the factory's name (`torch.tensor`)."""
    first = next(iter(positional_args(call)), None)
    if qualified in DATA_BUILDERS:
        return isinstance(first, (ast.List, ast.Tuple)) and not first.elts
    if qualified in ("torch.arange", "torch.range"):
        return len(positional_args(call)) == 1 and _is_zero(first)
    if isinstance(first, (ast.Tuple, ast.List)):
        return any(_is_zero(item) for item in first.elts)
    return first is not None and _is_zero(first)


def _is_zero(expr: Optional[ast.expr]) -> bool:
    return isinstance(expr, ast.Constant) and expr.value == 0 and not isinstance(expr.value, bool)


def moved_to(call: ast.Call) -> Optional[ast.expr]:
    """The device a `.to(...)` or `.cuda(...)` call names, as written: `device=`, else its first positional
    argument (which, for `.to(torch.float16)`, is a dtype: callers tell them apart)."""
    return keyword_value(call, "device") or next(iter(positional_args(call)), None)


def tensor_device(
    device: Optional[ast.expr], value_at: Callable[[ast.Name], Optional[ast.expr]]
) -> Optional[ast.Attribute]:
    """`ids.device` when the device `device` is taken from a tensor, directly or through a local bound to it
    (`dev = ids.device`; `value_at` gives a local's value); None otherwise."""
    if isinstance(device, ast.Name):
        device = value_at(device)
    return device if isinstance(device, ast.Attribute) and device.attr == "device" else None


def borrowed_device(node: ast.AST, value_at: Callable[[ast.Name], Optional[ast.expr]]) -> bool:
    """Whether the call `node` builds on, or copies to, the device of a tensor it was handed or made: a local or
    parameter's (`device=ids.device`, `.to(ids.device)`, `dev = ids.device`), not an attribute's
    (`self.table.device`: a buffer the object keeps where its model is)."""
    if not isinstance(node, ast.Call):
        return False
    moves = isinstance(node.func, ast.Attribute) and node.func.attr == "to"
    taken = tensor_device(moved_to(node) if moves else keyword_value(node, "device"), value_at)
    return taken is not None and isinstance(taken.value, ast.Name)

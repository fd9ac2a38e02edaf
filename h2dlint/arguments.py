"""Reading a call's arguments and literal values from libcst nodes."""

from __future__ import annotations

import ast
from typing import List, Optional

import libcst as cst


def keyword_arg(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional_args(call: cst.Call) -> List[cst.Arg]:
    """Plain positional arguments, up to the first keyword or `*`/`**` argument."""
    found = []
    for arg in call.args:
        if arg.keyword is not None or arg.star:
            break
        found.append(arg)
    return found


def has_star_args(call: cst.Call) -> bool:
    return any(arg.star for arg in call.args)


def string_value(expr: cst.BaseExpression) -> Optional[str]:
    """The value of a plain string literal (not an f-string), else None."""
    if isinstance(expr, cst.SimpleString):
        try:
            value = ast.literal_eval(expr.value)
        except (ValueError, SyntaxError):
            return None
        return value if isinstance(value, str) else None
    if isinstance(expr, cst.ConcatenatedString):
        left, right = string_value(expr.left), string_value(expr.right)
        return None if left is None or right is None else left + right
    return None


def is_constant(expr: cst.BaseExpression, *values: str) -> bool:
    """True for the names `True`, `False` or `None` listed in `values`."""
    return isinstance(expr, cst.Name) and expr.value in values


def is_false_literal(expr: cst.BaseExpression) -> bool:
    if is_constant(expr, "False", "None"):
        return True
    return isinstance(expr, cst.Integer) and expr.value == "0"

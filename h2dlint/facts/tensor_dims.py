"""Whether a tensor expression certainly has at least one dimension: the one shape fact the placement analysis
needs.

PyTorch lets a tensor on the host take part in an operation with a device tensor only when it has no dimension
(a "CPU scalar", `torch.tensor(2.0)`); a host operand with dimensions and a device operand raise ("Expected all
tensors to be on the same device"). So `host_rows + unknown` is on the host whenever `host_rows` has a
dimension, whatever `unknown` is: it cannot be on the device, it can only raise. This module proves "has a
dimension" from the syntax alone, following a local name to the binding that reaches its use.
"""

from __future__ import annotations

import ast
from h2dlint.facts.arguments import positional_args
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.tensor_ops import DATA_BUILDERS, JOINS

_MAX_DEPTH = 12  # names, views and operands followed back from the use

# torch functions whose result always has a dimension: ranges, joins (`cat` rejects 0-dim tensors, `stack` adds
# one), index lists, and the outputs of `meshgrid` (one dimension per input).
_RANGES_AND_INDICES = "arange range linspace logspace randperm nonzero argwhere meshgrid tril_indices triu_indices eye"
ALWAYS_SHAPED = JOINS | frozenset("torch." + name for name in _RANGES_AND_INDICES.split())
# torch functions with a size argument: shaped when the size is written out with at least one dimension.
SIZED = frozenset("torch." + name for name in "zeros ones empty rand randn".split())
# Methods whose result always has a dimension (`flatten` of a 0-dim tensor gives one of size 1).
SHAPED_METHODS = frozenset("flatten unsqueeze nonzero argwhere unfold".split())
# Methods that keep their receiver's dimensions: dtype casts, copies, elementwise functions, transposes.
SAME_SHAPE_METHODS = frozenset(
    "long int float half bfloat16 bool double short byte contiguous clone detach cpu cuda to pin_memory abs neg "
    "add sub mul div remainder clamp round floor ceil exp log sqrt flip roll cumsum cumprod masked_fill transpose "
    "permute t".split()
)
RESHAPES = frozenset({"reshape", "view"})  # shaped when the new shape is written out with at least one dimension


def has_dims(expr: ast.expr, names: NameResolver, depth: int = 0) -> bool:
    """Whether the tensor `expr` evaluates to certainly has at least one dimension (False: not known)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, ast.Name):
        if names.comprehension_item(expr)[0]:
            return False  # a comprehension's own variable: an item, of no known shape
        value = names.value_at(expr) or names.unpacked_value(expr)
        return value is not None and has_dims(value, names, depth + 1)
    if isinstance(expr, ast.Subscript):
        return _subscript_has_dims(expr, names, depth)
    if isinstance(expr, ast.BinOp):  # broadcasting keeps the most dimensions of either operand
        return has_dims(expr.left, names, depth + 1) or has_dims(expr.right, names, depth + 1)
    if isinstance(expr, ast.UnaryOp):
        return has_dims(expr.operand, names, depth + 1)
    if isinstance(expr, ast.IfExp):  # whichever branch runs
        return has_dims(expr.body, names, depth + 1) and has_dims(expr.orelse, names, depth + 1)
    if isinstance(expr, ast.Call):
        return _call_has_dims(expr, names, depth)
    return False


def _subscript_has_dims(expr: ast.Subscript, names: NameResolver, depth: int) -> bool:
    """`x[:, None]` adds a dimension; `x[a:b]` keeps `x`'s; an integer index may remove the only one."""
    items = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
    if any(isinstance(item, ast.Constant) and item.value is None for item in items):
        return True
    keeps = all(isinstance(item, ast.Slice) or _is_ellipsis(item) for item in items)
    return keeps and has_dims(expr.value, names, depth + 1)


def _call_has_dims(call: ast.Call, names: NameResolver, depth: int) -> bool:
    qualified = names.qualify(call.func)
    args = positional_args(call)
    if qualified is not None:
        if qualified in ALWAYS_SHAPED:
            return True
        if qualified in SIZED:
            return _written_size(args)
        if qualified == "torch.full":  # `torch.full(size, fill_value)`
            return _written_size(args[:1])
        if qualified in DATA_BUILDERS:  # shaped when the data is a list: `torch.tensor([])` has one, of size 0
            return bool(args) and isinstance(args[0], (ast.List, ast.ListComp))
        return False
    if not isinstance(call.func, ast.Attribute):
        return False
    method = call.func.attr
    if method in SHAPED_METHODS:
        return True
    if method in RESHAPES:
        return _written_size(args)
    if method in SAME_SHAPE_METHODS:
        return has_dims(call.func.value, names, depth + 1)
    return False


def _written_size(args: list) -> bool:
    """A size written out with at least one dimension: `(n, 4)`, `n, 4`, `-1`, `8`."""
    if len(args) >= 2:
        return True
    if len(args) == 1:
        size = args[0]
        if isinstance(size, (ast.Tuple, ast.List)):
            return bool(size.elts)
        return _is_int_literal(size)
    return False


def _is_int_literal(expr: ast.expr) -> bool:
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        expr = expr.operand
    return isinstance(expr, ast.Constant) and isinstance(expr.value, int) and not isinstance(expr.value, bool)


def _is_ellipsis(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is Ellipsis

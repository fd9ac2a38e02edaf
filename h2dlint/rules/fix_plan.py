"""From a rule's `Rewrite` (ast nodes) to a `Fix` record (positions), with how safe the fix is.

A fix is `safe` when it is proven to keep behaviour, `unsafe` when it may not (`--unsafe-fixes` applies it),
and absent when it must not be made at all (the caller's reason becomes the finding's "Not fixed" note).
"""

from __future__ import annotations

import ast
import math
from functools import lru_cache
from typing import Optional, Sequence, Tuple

from h2dlint.facts.arguments import keyword_value
from h2dlint.facts.positions import span_of
from h2dlint.facts.summary import SAFE, UNSAFE, Fix
from h2dlint.rules.rewrites import Rewrite

FixOrReason = Tuple[Optional[Fix], Optional[str]]

# Calls whose result is always a plain Python list, tuple or number, never a NumPy array or a tensor: data the
# helper really copies from pinned memory. (`sum`, `max`, `abs` keep NumPy scalars, so they are not here.)
PLAIN_DATA_BUILDERS = frozenset({"list", "tuple", "sorted", "len", "int", "float", "bool", "complex"})
# The largest literal magnitude a fill keeps exactly as `torch.tensor` does: past float32's range
# `torch.tensor` gives `inf` where `torch.full` raises; past int64 they raise different errors.
FLOAT_FILL_LIMIT = 3.0e38
INT64_RANGE = (-(2**63), 2**63 - 1)
COMPLEX_DTYPES = frozenset({"complex32", "complex64", "complex128", "cfloat", "cdouble", "chalf"})
# `torch.zeros`/`torch.ones` infer float; the dtype `torch.tensor` infers from an int or bool literal.
INFERRED_DTYPE = {bool: "bool", int: "int64"}
CONSTANT_DATA = "its data is a constant: build the tensor once outside the loop (or in `__init__`) and reuse it"
TORCH_IMPORTED_IN_FUNCTIONS = (
    "torch is imported only inside functions here: importing the helper at module level would make the module "
    "need torch to import"
)


def plan_fix(rewrite: Rewrite, caveat: str, tree: ast.Module, lines: Sequence[str]) -> FixOrReason:
    """The `Fix` for `rewrite`, or why there is none. `caveat` names stream work in the enclosing function
    that may rely on the blocking copy draining the stream ("" when there is none)."""
    call = rewrite.constructor
    fill = _fill(call)
    if fill is None and _is_constant_data(call.args[0]):
        return None, CONSTANT_DATA
    if fill is None and not _torch_imported_at_module_level(tree):
        return None, TORCH_IMPORTED_IN_FUNCTIONS
    target, dtype = fill or (rewrite.helper, None)
    unsafe = _stream_caveat(caveat) or (None if fill else _data_caveat(call.args[0]))
    device = rewrite.device
    return Fix(
        message=_message(target, fill is not None),
        target=target,
        constructor=rewrite.qualified,
        call=span_of(call, lines),
        device=span_of(device, lines) if isinstance(device, ast.expr) else device,
        absorbed=None if rewrite.absorbed is None else span_of(rewrite.absorbed, lines),
        dtype=dtype,
        applicability=UNSAFE if unsafe else SAFE,
        caveat=unsafe,
    ), None


def _message(target: str, fill: bool) -> str:
    if fill:
        return f"Replace with `torch.{target}(())`, which fills on the device: no copy, no sync"
    return f"Replace with `{target}(...)`, which copies from pinned memory without blocking"


def _stream_caveat(stream_work: str) -> Optional[str]:
    if not stream_work:
        return None
    return f"the function also {stream_work}, which may rely on the blocking copy draining the stream"


def _data_caveat(data: ast.expr) -> Optional[str]:
    if _is_plain_data(data):
        return None
    return (
        f"no effect for array or tensor data: if `{_short(data)}` is a NumPy array or a tensor, the helper falls "
        "back to the blocking call"
    )


def _short(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_plain_data(data: ast.expr) -> bool:
    """Data that is certainly a Python list, tuple or number, so the helper takes its pinned path."""
    if isinstance(data, (ast.List, ast.Tuple, ast.ListComp)):
        return True
    if _literal_number(data) is not None:
        return True
    if isinstance(data, ast.BinOp) and isinstance(data.op, (ast.Add, ast.Mult)):
        return any(isinstance(side, (ast.List, ast.Tuple, ast.ListComp)) for side in (data.left, data.right))
    if isinstance(data, ast.IfExp):
        return _is_plain_data(data.body) and _is_plain_data(data.orelse)
    return isinstance(data, ast.Call) and isinstance(data.func, ast.Name) and data.func.id in PLAIN_DATA_BUILDERS


def _is_constant_data(data: ast.expr) -> bool:
    """A list or tuple display of literal numbers (nested or not): the same tensor on every call."""
    if isinstance(data, (ast.List, ast.Tuple)):
        return bool(data.elts) and all(_is_constant_data(element) for element in data.elts)
    return _literal_number(data) is not None


def _literal_number(node: ast.expr) -> Optional[complex]:
    """The value of a literal bool, int, float or complex, optionally signed; None for anything else."""
    operand = node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) else node
    if not isinstance(operand, ast.Constant) or type(operand.value) not in (bool, int, float, complex):
        return None
    if operand is not node and type(operand.value) is bool:
        return None  # `-True` is an int
    return ast.literal_eval(node)


def _fill(call: ast.Call) -> Optional[Tuple[str, Optional[str]]]:
    """(`full`, `zeros` or `ones`, the dtype to add) when `call` builds a literal scalar that the fill builds
    exactly alike: same value, dtype, shape and `requires_grad` (tests/test_fill_equivalence.py runs both)."""
    value = _literal_number(call.args[0])
    if value is None or not isinstance(call.func, ast.Attribute) or not _fill_keeps_value(value):
        return None
    requires_grad = keyword_value(call, "requires_grad")
    if requires_grad is not None and not (isinstance(requires_grad, ast.Constant) and type(requires_grad.value) is bool):
        return None
    dtype = keyword_value(call, "dtype")
    torch_dtype = _torch_dtype_name(dtype, call.func.value)
    if isinstance(value, complex) and (dtype is not None and torch_dtype not in COMPLEX_DTYPES):
        return None  # a complex literal into a real dtype: the two raise different errors
    if dtype is not None and torch_dtype is None:
        return "full", None  # `dtype=d` with `d` None infers like `torch.tensor`; zeros/ones would not
    unit = {0: "zeros", 1: "ones"}.get(value) if not isinstance(value, complex) else None
    if unit is None or (isinstance(value, float) and math.copysign(1.0, value) < 0):
        return "full", None  # `-0.0` is a negative zero, which `torch.zeros` is not
    return unit, None if dtype is not None else INFERRED_DTYPE.get(type(value))


def _fill_keeps_value(value: complex) -> bool:
    if isinstance(value, (bool, int)):
        return INT64_RANGE[0] <= value <= INT64_RANGE[1]
    parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
    return all(math.isfinite(part) and abs(part) <= FLOAT_FILL_LIMIT for part in parts)


def _torch_dtype_name(dtype: Optional[ast.expr], torch_module: ast.expr) -> Optional[str]:
    """`float16` for `dtype=torch.float16`, written with the same module expression as the callee."""
    if isinstance(dtype, ast.Attribute) and ast.dump(dtype.value) == ast.dump(torch_module):
        return dtype.attr
    return None


@lru_cache(maxsize=2)  # asked once per fix, with the same tree
def _torch_imported_at_module_level(tree: ast.Module) -> bool:
    """torch is imported by a module-level statement, or in a module-level `if`/`try` guard."""
    statements = list(tree.body)
    for statement in tree.body:
        if isinstance(statement, (ast.If, ast.Try)):
            statements.extend(statement.body)
    return any(_imports_torch(statement) for statement in statements)


def _imports_torch(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Import):
        return any(alias.name.split(".")[0] == "torch" for alias in statement.names)
    return isinstance(statement, ast.ImportFrom) and statement.level == 0 and (statement.module or "").split(".")[0] == "torch"


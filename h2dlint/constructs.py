"""Recognisers for the torch constructs that rules look for: devices, dtypes, fresh host tensors, copies."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from h2dlint.arguments import (
    has_star_args,
    is_constant,
    is_false_literal,
    keyword_arg,
    keyword_value,
    positional_args,
    string_value,
)
from h2dlint.scopes import NameResolver

HOST_DEVICE_TYPES = frozenset({"cpu", "meta"})

# Calls that build a tensor from host data; without a device it lands in pageable host memory.
DATA_CONSTRUCTORS = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray", "torch.from_numpy"})

# Methods that keep a host tensor on the host, so `torch.tensor(x).long().to(dev)` is still a fresh host tensor.
HOST_PRESERVING_METHODS = frozenset(
    {
        "bfloat16", "bool", "clone", "contiguous", "detach", "double", "flatten", "float", "half", "int",
        "long", "reshape", "squeeze", "unsqueeze", "view",
    }
)

TORCH_DTYPES = frozenset(
    "torch." + name
    for name in (
        "bool uint8 int8 int16 int32 int64 float16 float32 float64 bfloat16 complex32 complex64 complex128 "
        "half float double short int long cfloat cdouble uint16 uint32 uint64 float8_e4m3fn float8_e5m2"
    ).split()
)


def device_type(expr: ast.expr, names: NameResolver) -> Optional[str]:
    """`"cuda"` for `"cuda:0"` or `torch.device("cuda", 0)`; `""` for a literal None; None when not a literal."""
    if is_constant(expr, "None"):
        return ""
    literal = string_value(expr)
    if literal is not None:
        return literal.split(":")[0].strip()
    if isinstance(expr, ast.Call) and names.qualify(expr.func) == "torch.device":
        type_arg = keyword_value(expr, "type") or next(iter(positional_args(expr)), None)
        if type_arg is not None:
            literal = string_value(type_arg)
            return None if literal is None else literal.split(":")[0].strip()
    return None


def is_host_device(expr: ast.expr, names: NameResolver) -> bool:
    """True for a device that is certainly not an accelerator: `"cpu"`, `torch.device("cpu")`, `"meta"`, None."""
    kind = device_type(expr, names)
    return kind == "" or kind in HOST_DEVICE_TYPES


def looks_like_dtype(expr: ast.expr, names: NameResolver) -> bool:
    if names.qualify(expr) in TORCH_DTYPES:
        return True
    if isinstance(expr, ast.Attribute):
        last = expr.attr
    elif isinstance(expr, ast.Name):
        last = expr.id
    else:
        last = string_value(expr) or ""
    return "dtype" in last.lower()


def host_built_tensor(expr: ast.expr, names: NameResolver) -> Optional[ast.Call]:
    """The constructor call when `expr` is a tensor just built in pageable host memory, else None.

    `expr` may be the call itself, host-preserving methods on it (`.long()`, `.view(...)`), or a local
    variable that the function assigns exactly once from such an expression.
    """
    if isinstance(expr, ast.Name):
        value = names.local_value(expr.id)
        if value is None or isinstance(value, ast.Name):
            return None
        expr = value
    while _is_host_preserving_call(expr):
        expr = expr.func.value  # type: ignore[attr-defined]
    if not isinstance(expr, ast.Call) or names.qualify(expr.func) not in DATA_CONSTRUCTORS:
        return None
    if has_star_args(expr):
        return None  # `**kwargs` may carry a device or pin_memory
    device = keyword_arg(expr, "device")
    if device is not None and not is_host_device(device.value, names):
        return None
    pinned = keyword_arg(expr, "pin_memory")
    if pinned is not None and not is_false_literal(pinned.value):
        return None
    return expr


def _is_host_preserving_call(expr: ast.expr) -> bool:
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in HOST_PRESERVING_METHODS
        and keyword_arg(expr, "device") is None
    )


@dataclass(frozen=True)
class DeviceCopy:
    """`receiver.to(device, ...)` or `receiver.cuda(...)`, moving a tensor to an accelerator."""

    receiver: ast.expr
    method: str
    non_blocking: bool


def device_copy(call: ast.Call, names: NameResolver) -> Optional[DeviceCopy]:
    """Describe `call` when it copies its receiver to a (possibly) accelerator device, else None."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in ("to", "cuda"):
        return None
    method = call.func.attr
    positional = positional_args(call)
    if method == "to":
        device = keyword_value(call, "device")
        if device is None and positional and not looks_like_dtype(positional[0], names):
            device = positional[0]
        if device is None or is_host_device(device, names):
            return None  # a dtype conversion, or a copy to the host
        flag_positions = (1, 2)
    else:
        flag_positions = (1,)
    flag = keyword_arg(call, "non_blocking")
    if flag is not None:
        non_blocking = not is_false_literal(flag.value)
    else:
        non_blocking = any(
            i < len(positional) and is_constant(positional[i], "True") for i in flag_positions
        )
    return DeviceCopy(receiver=call.func.value, method=method, non_blocking=non_blocking)

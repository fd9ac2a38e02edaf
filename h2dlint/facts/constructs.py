"""Recognisers for the torch constructs that rules look for: devices, dtypes, fresh host tensors, copies."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Optional

from h2dlint.facts.arguments import (
    has_star_args,
    is_constant,
    is_false_literal,
    keyword_arg,
    keyword_value,
    positional_args,
    string_value,
)
from h2dlint.facts.scopes import NameResolver

LocalValue = Callable[[str], Optional[ast.expr]]  # the value a function's local holds, when it is known

HOST_DEVICE_TYPES = frozenset({"cpu", "meta"})

_MAX_NAME_STEPS = 4  # names followed back to a value: `b = a.long()` after `a = torch.tensor(d)`

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
    """True for a device that is certainly not an accelerator: `"cpu"`, `torch.device("cpu")`, `"meta"`, None,
    or a local name that holds one where it is read (`device = "cpu"`)."""
    if isinstance(expr, ast.Name):
        value = names.value_at(expr)
        return value is not None and not isinstance(value, ast.Name) and is_host_device(value, names)
    kind = device_type(expr, names)
    return kind == "" or kind in HOST_DEVICE_TYPES


def host_by_default(expr: ast.expr, names: NameResolver) -> bool:
    """`device` in `def f(x, device="cpu")`, never rebound, or `self.device` that the class sets only from such a
    parameter (`self.device = torch.device(device)`): the code runs on the host unless a caller says otherwise,
    so its copies are not known to reach an accelerator."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return names.is_host_default_attribute(expr.attr)
    if not isinstance(expr, ast.Name):
        return False
    default = names.parameter_default(expr.id)
    return default is not None and is_host_device(default, names)


def host_unless_told(device: ast.expr, names: NameResolver) -> bool:
    """A host device, or a parameter (or attribute) that defaults to one (`host_by_default`): no copy to it is
    known to reach an accelerator."""
    return is_host_device(device, names) or host_by_default(device, names)


def may_be_host_device(expr: ast.expr, names: NameResolver) -> bool:
    """Whether a device may be the host's: one that is, a conditional with such a branch, a parameter that
    defaults to one, or a local name that one of its bindings sets to one (`device = "cpu"`, then
    `device = "cuda"` in a branch)."""
    if host_unless_told(expr, names):
        return True
    if isinstance(expr, ast.IfExp):
        return any(is_host_device(branch, names) for branch in (expr.body, expr.orelse))
    if isinstance(expr, ast.Name):
        values = (v for v in names.bound_values(expr.id) if v is not None and not isinstance(v, ast.Name))
        return any(may_be_host_device(value, names) for value in values)
    return False


# Dtype names that name nothing else, as attributes of any module: `tl.int64`, `np.float32` in `.to(tl.int64)`.
_SIZED_DTYPE_NAMES = frozenset(d.split(".")[1] for d in TORCH_DTYPES if any(c.isdigit() for c in d))


def looks_like_dtype(expr: ast.expr, names: NameResolver) -> bool:
    if names.qualify(expr) in TORCH_DTYPES:
        return True
    if isinstance(expr, ast.Attribute) and expr.attr in _SIZED_DTYPE_NAMES:
        return True
    if isinstance(expr, ast.Attribute):
        last = expr.attr
    elif isinstance(expr, ast.Name):
        last = expr.id
    else:
        last = string_value(expr) or ""
    return "dtype" in last.lower()


def has_empty_literal_data(call: ast.Call) -> bool:
    """`torch.tensor([], ...)`: empty data never reaches the copy, so nothing syncs."""
    positional = positional_args(call)  # none before a `*args`, whose data cannot be seen
    data = positional[0] if positional else keyword_value(call, "data")
    return isinstance(data, (ast.List, ast.Tuple)) and not data.elts


def accelerator_device(call: ast.Call, names: NameResolver) -> Optional[ast.expr]:
    """The `device=` argument of `call` when it may name an accelerator; None when absent, a host device, or a
    parameter that defaults to one (`host_by_default`)."""
    device = keyword_value(call, "device")
    return None if device is None or host_unless_told(device, names) else device


def host_built_tensor(expr: ast.expr, names: NameResolver, pinned_too: bool = False) -> Optional[ast.Call]:
    """The constructor call when `expr` is a tensor just built in pageable host memory, else None.

    `expr` may be the call itself, host-preserving methods on it (`.long()`, `.view(...)`), or a local
    variable whose value there is such an expression: assigned once, or by the assignment just before the
    use (`x = torch.tensor(d)` then `x = x.to(dev)`). With `pinned_too`, a tensor built with `pin_memory=True`
    counts as well.
    """
    expr = _without_host_preserving_calls(expr)
    for _ in range(_MAX_NAME_STEPS):
        if not isinstance(expr, ast.Name):
            break
        value = names.value_at(expr)
        if value is None:
            return None
        expr = _without_host_preserving_calls(value)  # `x = torch.tensor(d)`, `x = x.long()`: back to the first
    if not isinstance(expr, ast.Call) or names.qualify(expr.func) not in DATA_CONSTRUCTORS:
        return None
    if has_star_args(expr):
        return None  # `**kwargs` may carry a device or pin_memory
    if accelerator_device(expr, names) is not None:
        return None
    if not pinned_too and is_pinned(expr):
        return None
    return expr


def is_pinned(constructor: ast.Call) -> bool:
    """`pin_memory=` given, and not a literal False (`pin_memory=self.pin_memory` counts: it is, on CUDA)."""
    pinned = keyword_arg(constructor, "pin_memory")
    return pinned is not None and not is_false_literal(pinned.value)


def on_accelerator(expr: ast.expr, names: NameResolver) -> bool:
    """True when `expr` is known to be a tensor on an accelerator: built by a torch call with an accelerator
    `device=`, moved by `.cuda()` or `.to(<device>)`, a local name the function assigns once from one, or, in a
    method, `self.x` when every assignment of `self.x` in the class is one (see `accelerator_attributes`)."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return names.is_accelerator_attribute(expr.attr)
    if isinstance(expr, ast.Name):
        value = names.value_at(expr)
        if value is None or isinstance(value, ast.Name):
            return False
        expr = value
    if isinstance(expr, ast.Subscript):  # a view of a device tensor, or an item of a collection of them
        return on_accelerator(expr.value, names)
    return is_device_construct(expr, names, names.local_value)


def is_device_construct(value: ast.expr, names: NameResolver, local_value: LocalValue) -> bool:
    """Whether the call `value` builds a tensor on an accelerator or moves one there (`local_value`: the
    values of the function's locals, for a device or keyword table held in one)."""
    if not isinstance(value, ast.Call):
        return False
    if device_copy(value, names) is not None:
        return True
    qualified = names.qualify(value.func) or ""
    if not qualified.startswith("torch."):
        return False
    device = keyword_value(value, "device") or _device_in_keyword_table(value, local_value)
    return device is not None and not is_host_device(device, names)


def _device_in_keyword_table(call: ast.Call, local_value: LocalValue) -> Optional[ast.expr]:
    """The device a `**table` argument passes, when `table` is a local holding `dict(device=d, ...)` or
    `{"device": d, ...}`: `i32 = dict(dtype=torch.int32, device=device)` then `torch.zeros(n, **i32)`."""
    for keyword in call.keywords:
        table = local_value(keyword.value.id) if keyword.arg is None and isinstance(keyword.value, ast.Name) else None
        if _is_dict_call(table):
            found = keyword_value(table, "device")  # type: ignore[arg-type]
            if found is not None:
                return found
        if isinstance(table, ast.Dict):
            for key, item in zip(table.keys, table.values):
                if isinstance(key, ast.Constant) and key.value == "device":
                    return item
    return None


def _is_dict_call(expr: Optional[ast.expr]) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "dict"


def _without_host_preserving_calls(expr: ast.expr) -> ast.expr:
    while _is_host_preserving_call(expr):
        expr = expr.func.value  # type: ignore[attr-defined]
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
        if device is None or host_unless_told(device, names):
            return None  # a dtype conversion, a copy to the host, or to a device that defaults to the host
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


_STREAM_METHODS = frozenset({"wait_stream", "record_stream", "wait_event"})
_STREAM_CALLS = frozenset({"torch.cuda.stream", "torch.cuda.Stream", "torch.cuda.set_stream"})


def stream_work_in(function: ast.AST, names: NameResolver) -> Optional[str]:
    """What `function` does that may depend on the current stream being drained, or None.

    A blocking H2D copy leaves the stream drained as a side effect; a function that also hands tensors between
    streams, or starts non-blocking copies whose results it reads later, may rely on that by accident.
    """
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr in _STREAM_METHODS:
            return f"calls `.{node.func.attr}()`"
        if names.qualify(node.func) in _STREAM_CALLS:
            return f"uses `{names.qualify(node.func)}`"
        if _is_async_device_to_host(node, names):
            return f"copies with `.{node.func.attr}(..., non_blocking=True)`"  # type: ignore[attr-defined]
    return None


def _is_async_device_to_host(call: ast.Call, names: NameResolver) -> bool:
    """`.cpu(non_blocking=True)`, `.to("cpu", non_blocking=True)`, or `.copy_(src, non_blocking=True)`,
    whose direction is unknown and so counted."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in ("cpu", "to", "copy_"):
        return False
    flag = keyword_value(call, "non_blocking")
    if flag is None or is_false_literal(flag):
        return False
    if call.func.attr != "to":
        return True
    device = keyword_value(call, "device") or next(iter(positional_args(call)), None)
    return device is not None and is_host_device(device, names) and device_type(device, names) != ""

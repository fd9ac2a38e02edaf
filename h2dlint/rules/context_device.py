"""What HTD101 and HTD102 share: a constructor with no `device=` that a device context sends to the device."""

from __future__ import annotations

import ast
from typing import Optional

from h2dlint.facts.arguments import has_star_args, keyword_value, positional_args, tensor_device
from h2dlint.facts.constructs import has_empty_literal_data
from h2dlint.facts.placement_values import Place
from h2dlint.rules.base import Match
from h2dlint.rules.context import Context

CONTEXT_UNFIXABLE = "the device comes from the context, not from an argument the fix could move"


def built_in_device_context(call: ast.Call, qualified: str, context: Context) -> Optional[Match]:
    """`torch.tensor(data)` inside `with torch.device(dev):` (or after `torch.set_default_device`): host data
    copied to the device with a blocking copy; None when the call names its own device or copies nothing."""
    where = context.device_context
    if where is None or keyword_value(call, "device") is not None or has_star_args(call):
        return None
    if has_empty_literal_data(call):
        return None
    data = next(iter(positional_args(call)), None) or keyword_value(call, "data")
    if data is None or context.placement(data).place is Place.DEVICE:
        return None  # nothing to copy, or a device tensor: no host data crosses
    return Match(
        node=call,
        problem=f"`{qualified}(...)` {where} builds the data on the host and copies it to the device with a"
        " blocking host-to-device copy and a stream sync on every call",
        remedy="Build the data with `pin_memory=True` and copy it with `.to(device, non_blocking=True)`",
        unfixable=CONTEXT_UNFIXABLE,
    )


def copies_to_a_host_tensors_device(call: ast.Call, context: Context) -> bool:
    """`.to(x.device)`, `device=x.device` (or `.to(dev)` after `dev = x.device`) or `.to(x)` where `x` is known to
    be on the host: the copy stays there."""
    device = keyword_value(call, "device") or next(iter(positional_args(call)), None)
    taken = tensor_device(device, context.names.value_at)
    if taken is not None:
        return context.placement(taken.value).place.on_host
    return isinstance(device, (ast.Name, ast.Attribute, ast.Subscript)) and context.placement(device).place.on_host

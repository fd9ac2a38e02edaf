"""HTD206: `torch.tensor([...])` of device tensors (0-dim results), in hot code: each element read on the host."""

from __future__ import annotations

import ast
from typing import Optional

from h2dlint.facts.arguments import argument
from h2dlint.rules.base import Invalid, Match, Valid
from h2dlint.rules.context import Context
from h2dlint.rules.device_to_host import (
    D2H_FIX_SAFETY,
    DeviceToHostRule,
    WHY_D2H,
    device_operand,
    sync_match,
)

EFFECT = "reads each element on the host (`.item()`): a device-to-host sync on every call"
REMEDY = "`torch.stack([...])` keeps the elements on the device, with no sync"
_BUILDERS = ("torch.tensor", "torch.as_tensor")


class TensorOfDeviceScalars(DeviceToHostRule):
    code = "HTD206"
    name = "tensor-of-device-scalars"
    summary = "`torch.tensor([a, b])` of device tensors in hot code: each element is read on the host."
    triggers = (("tensor",),)

    what_it_does = """
        Checks for `torch.tensor(...)` or `torch.as_tensor(...)` of a list or tuple display (or a local name bound
        to one) with an element known to be a device tensor, in code that runs per step or per request:
        `torch.tensor([x.sum(), y.max()])`.
        """
    why_bad = WHY_D2H + """
        `torch.tensor` reads the elements of a list as Python numbers: each device element is copied to the host
        with a sync, and the result is built on the host (and copied back when `device=` is given).
        """
    example = """
        def forward(self, lens_gpu, ids_gpu):
            return torch.tensor([lens_gpu.sum(), ids_gpu.max()])
        """
    use_instead = """
        def forward(self, lens_gpu, ids_gpu):
            return torch.stack([lens_gpu.sum(), ids_gpu.max()])
        """

    fix_safety = (
        D2H_FIX_SAFETY,
        """
        `torch.stack` gives the same values on the device rather than on the host, with the elements' dtype
        rather than the inferred one: not equivalent, so not rewritten.
        """,
    )

    VALID = (
        # Python numbers named like device things, host tensors, and a whole tensor (copied, not read).
        Valid("""
            import torch

            def forward(num_gpu, sizes, ids_gpu):
                host = torch.tensor(sizes)
                return torch.tensor([num_gpu, 1]), torch.tensor([host.sum()]), torch.as_tensor(ids_gpu)
            """),
    )
    INVALID = (
        Invalid(
            """
            import torch

            def forward(lens_gpu, ids_gpu):
                return torch.tensor([lens_gpu.sum(), ids_gpu.max()])  # HTD206
            """,
            reason="`torch.stack([...])`",
        ),
        Invalid(
            """
            import torch

            def forward(n, dev):
                total = torch.ones(n, device=dev).sum()
                parts = [total, total * 2]
                return torch.tensor(parts, device=dev)  # HTD206
            """,
            reason="(`total` is built on the device (`device=dev`) at line 4)",
        ),
    )

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        if context.names.qualify(call.func) not in _BUILDERS:
            return None
        data = argument(call, 0, "data")
        if isinstance(data, ast.Name):
            data = context.names.value_at(data)
        if not isinstance(data, (ast.List, ast.Tuple)):
            return None
        for element in data.elts:
            operand = device_operand(element, context, may_be_number=True)
            if operand is not None:
                return sync_match(call, "`torch.tensor([...])` of device tensors", operand, REMEDY, EFFECT)
        return None

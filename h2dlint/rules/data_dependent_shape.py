"""HTD203: an operation whose output size depends on a device tensor's values (`nonzero`, one-argument
`torch.where`, `unique`, `bincount`, `repeat_interleave` with tensor repeats, `one_hot` without
`num_classes`), in hot code."""

from __future__ import annotations

import ast
from typing import Dict, Optional

from h2dlint.facts.arguments import argument, keyword_value, positional_args
from h2dlint.rules.base import Invalid, Match, Valid
from h2dlint.rules.context import Context
from h2dlint.rules.device_to_host import (
    DeviceToHostRule,
    WHY_D2H,
    device_operand,
    sync_match,
)

EFFECT = "reads the output size from the device: a device-to-host sync on every call"
STATIC_REMEDY = "keep the shape static: `torch.nonzero_static(x, size=...)`, or `torch.where(cond, a, b)` and masks"
# Each operation, the remedy that fits it.
_REMEDIES: Dict[str, str] = {
    "nonzero": STATIC_REMEDY,
    "argwhere": STATIC_REMEDY,
    "where": STATIC_REMEDY,
    "masked_select": "keep the shape static: `torch.where(mask, x, 0)` or `x.masked_fill(~mask, 0)`",
    "unique": "keep the data on the host where it is made, or sort and mark boundaries on the device",
    "unique_consecutive": "keep the data on the host where it is made, or mark boundaries with `x[1:] != x[:-1]`",
    "bincount": "count on the device with a static size: `torch.zeros(n).scatter_add_(0, x, ones)`",
    "repeat_interleave": "pass `output_size=` (the total, known on the host: the sum of the host mirror)",
    "one_hot": "pass `num_classes=`",
}
_TORCH_FUNCTIONS = {f"torch.{name}": name for name in _REMEDIES if name != "one_hot"}
_TORCH_FUNCTIONS["torch.nn.functional.one_hot"] = "one_hot"
_METHODS = frozenset(_REMEDIES) - {"where", "one_hot"}


class DataDependentShape(DeviceToHostRule):
    code = "HTD203"
    name = "data-dependent-shape"
    summary = "`nonzero`, `unique`, `bincount` or tensor-repeats `repeat_interleave` on the device, in hot code."
    triggers = (tuple(_REMEDIES),)

    what_it_does = """
        Checks for operations whose output size depends on a device tensor's values, in code that runs per step or
        per request: `nonzero`, `argwhere`, one-argument `torch.where(cond)`, `masked_select`, `unique`,
        `unique_consecutive`, `bincount` (as methods or `torch.` functions), `repeat_interleave` with **tensor**
        repeats and no `output_size=`, and `torch.nn.functional.one_hot` without `num_classes=`. The input (for
        `repeat_interleave`, the repeats) must be known to be on the device.

        `repeat_interleave` with int repeats does not sync on current PyTorch and is not reported;
        `torch.nonzero_static` and three-argument `torch.where` keep the shape static.
        """
    why_bad = WHY_D2H + """
        PyTorch has to allocate the output before the kernel runs, so it first computes its size on the device
        and copies it to the host.
        """
    example = """
        def forward(self, hidden, lens_gpu):
            return hidden.repeat_interleave(lens_gpu, dim=0)
        """
    use_instead = """
        def forward(self, hidden, lens_gpu, total):
            return hidden.repeat_interleave(lens_gpu, dim=0, output_size=total)
        """


    VALID = (
        # Int repeats do not sync; `output_size=` removes the sync; unknown repeats may be ints.
        Valid("""
            import torch

            def forward(hidden_gpu, lens_gpu, n, total, reps):
                a = hidden_gpu.repeat_interleave(n, dim=0)
                b = torch.repeat_interleave(hidden_gpu, lens_gpu, dim=0, output_size=total)
                c = torch.repeat_interleave(hidden_gpu, repeats=n, dim=0)
                return a, b, c, hidden_gpu.repeat_interleave(reps)
            """),
        # Static shapes, and a host tensor (CPU-only preprocessing).
        Valid("""
            import torch

            def forward(mask_gpu, a_gpu, b_gpu, sizes):
                host = torch.tensor(sizes)
                return torch.where(mask_gpu, a_gpu, b_gpu), torch.nonzero_static(mask_gpu, size=8), host.nonzero()
            """),
        # `Modality.all()`-style enums and unknown receivers are not tensors known to be on the device.
        Valid("""
            import torch

            def forward(batch, Modality):
                return batch.ids.unique(), Modality.all()
            """),
    )
    INVALID = (
        # An elementwise torch function is where its device operand is (a host operand may be a 0-dim scalar).
        Invalid(
            """
            import torch

            def forward(keep, ids, dev):
                return torch.where(keep, ids.to(dev), -1).nonzero()  # HTD203
            """,
            reason="is moved to the device by `.to(...)` at line 4",
        ),
        Invalid(
            """
            import torch

            def forward(hidden, lens_gpu):
                return hidden.repeat_interleave(lens_gpu, dim=0)  # HTD203
            """,
            reason="`output_size=`",
        ),
        Invalid(
            """
            import torch

            def forward(n, dev):
                ids = torch.zeros(n, dtype=torch.int64, device=dev)
                return torch.nonzero(ids > 0)  # HTD203
            """,
            reason="`torch.nonzero_static(x, size=...)`",
        ),
        Invalid(
            """
            import torch

            def forward(mask_gpu):
                rows, cols = torch.where(mask_gpu)  # HTD203
                return rows
            """,
        ),
        Invalid(
            """
            import torch

            def forward(expert_ids_gpu):
                return expert_ids_gpu.bincount()  # HTD203
            """,
            reason="scatter_add_",
        ),
        Invalid(
            """
            import torch
            import torch.nn.functional as F

            def forward(labels_gpu):
                return F.one_hot(labels_gpu)  # HTD203
            """,
            reason="`num_classes=`",
        ),
    )

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        qualified = context.names.qualify(call.func)
        if qualified is not None:
            operation = _TORCH_FUNCTIONS.get(qualified)
            return self._function(call, operation, context) if operation is not None else None
        if isinstance(call.func, ast.Attribute) and call.func.attr in _METHODS:
            operation = call.func.attr
            if operation == "repeat_interleave":
                return self._repeat(call, argument(call, 0, "repeats"), 2, context)
            return self._report(call, operation, call.func.value, context)
        return None

    def _function(self, call: ast.Call, operation: str, context: Context) -> Optional[Match]:
        positional = positional_args(call)
        if operation == "repeat_interleave":
            repeats = argument(call, 1, "repeats")  # `torch.repeat_interleave(x, repeats=n)` repeats `x`
            if repeats is None and len(positional) == 1:
                repeats = positional[0]  # `torch.repeat_interleave(lens)`: the repeats alone
            return self._repeat(call, repeats, 3, context)
        if operation == "where" and (len(positional) != 1 or call.keywords):
            return None
        if operation == "one_hot" and (len(positional) > 1 or keyword_value(call, "num_classes") is not None):
            return None
        return self._report(call, operation, argument(call, 0, "input"), context)

    def _repeat(self, call: ast.Call, repeats: Optional[ast.expr], size_at: int, context: Context) -> Optional[Match]:
        """`size_at`: where `output_size` goes among the positional arguments (method 2, function 3)."""
        if keyword_value(call, "output_size") is not None or len(positional_args(call)) > size_at:
            return None
        return self._report(call, "repeat_interleave", repeats, context)

    def _report(self, call: ast.Call, operation: str, tensor: Optional[ast.expr], context: Context) -> Optional[Match]:
        operand = device_operand(tensor, context)
        if operand is None:
            return None
        what = f"`{operation}` of a device tensor" if operation != "repeat_interleave" else (
            "`repeat_interleave` with tensor repeats on the device and no `output_size=`")
        return sync_match(call, what, operand, _REMEDIES[operation], EFFECT)



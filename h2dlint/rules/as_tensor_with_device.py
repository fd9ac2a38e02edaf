"""HTD102: `torch.as_tensor(data, device=<accelerator>)` in hot code."""

from __future__ import annotations

import ast
from typing import Optional

from h2dlint.facts.constructs import accelerator_device, has_empty_literal_data
from h2dlint.rules.base import Invalid, Match, Rule, Valid
from h2dlint.rules.context import Context
from h2dlint.rules.context_device import built_in_device_context
from h2dlint.rules.docs import HELPER_FIX_SAFETY, KNOWN_DRAIN_LIMITS, KNOWN_HEAT_LIMITS
from h2dlint.rules.rewrites import constructor_rewrite


class AsTensorWithDevice(Rule):
    code = "HTD102"
    name = "as-tensor-with-device"
    summary = "`torch.as_tensor(data, device=...)` in hot code: a blocking copy and a stream sync on every call."
    triggers = (("as_tensor",), ("device",))

    what_it_does = """
        Checks for `torch.as_tensor(data, device=...)` with an accelerator device in code that runs per step
        or per request.

        It also checks `torch.as_tensor(data)` without `device=` inside a `with torch.device(<accelerator>):` block
        (or `with x.device:`), or in a module that calls `torch.set_default_device(<accelerator>)` at the top
        level: there the device comes from the context, and the copy is the same. Those are report-only.
        """
    why_bad = """
        When `data` is host data (a list, a NumPy array, a CPU tensor), `torch.as_tensor` copies it to the
        device exactly as `torch.tensor(..., device=...)` does: a blocking copy followed by
        `cudaStreamSynchronize`, so the host waits for all work already queued on the stream. "as" suggests
        a free conversion, which is why this form survives review in per-step code.

        When `data` is already a tensor on that device, the call is free and the finding can be ignored
        with `# noqa: HTD102`. Note that the original call, by accident, leaves the current stream drained;
        code that afterwards reads a buffer filled by an earlier `non_blocking` device-to-host copy may
        depend on that.
        """
    example = """
        class Sampler:
            def forward(self, logits, reqs):
                temperatures = torch.as_tensor([r.temperature for r in reqs], device=logits.device)
                return logits / temperatures[:, None]
        """
    use_instead = """
        class Sampler:
            def forward(self, logits, reqs):
                pinned = torch.tensor([r.temperature for r in reqs], pin_memory=True)
                temperatures = pinned.to(logits.device, non_blocking=True)
                return logits / temperatures[:, None]
        """

    fix_availability = "sometimes"
    fix_safety = HELPER_FIX_SAFETY.format(helper="h2d_as_tensor", original="torch.as_tensor")
    known_problems = (
        KNOWN_HEAT_LIMITS,
        """
        When `data` is already a tensor on the target device the call is free, but the rule cannot tell: silence such
        a site with `# noqa: HTD102` (the fix is harmless there: the helper makes the original call for tensor data).
        """,
        KNOWN_DRAIN_LIMITS,
    )
    options = ("extend-hot-functions", "extend-cold-functions", "helper-module", "sync-allowed-contexts")
    quiet_where_syncs_allowed = True
    references = ("cuda-sync", "pin-memory", "runtime", "hotness")

    VALID = (
        Valid("""
            import torch

            def forward(x):
                return torch.as_tensor(x)
            """),
        Valid("""
            import torch

            def forward(x):
                return torch.as_tensor(x, device='cpu')
            """),
        Valid("""
            import torch

            def forward(x):
                return torch.as_tensor(x, dtype=torch.int32, device=None)
            """),
        Valid("""
            import torch

            def forward(x):
                return torch.as_tensor((), device='cuda')
            """),
        Valid("""
            import torch

            TABLE = torch.as_tensor([1, 2, 3], device='cuda')
            """),
        Valid("""
            import torch

            class M:
                def __init__(self, rows, device):
                    self.rows = [torch.as_tensor(r, device=device) for r in rows]
            """),
        Valid("""
            import numpy as np

            def forward(x):
                return np.as_tensor(x, device='cuda')
            """),
        Valid("""
            import torch

            def forward(x, torch):
                return torch.as_tensor(x, device='cuda')
            """),
        # A device context that names the CPU, and factories that fill on the device (no host data).
        Valid("""
            import torch

            def forward(ids, dev):
                with torch.device("cpu"):
                    host = torch.as_tensor(ids)
                with torch.device(dev):
                    zeros = torch.zeros(len(ids))
                return host, zeros
            """),
    )
    INVALID = (
        Invalid(
            """
            import torch

            class Sampler:
                def forward(self, reqs, logits):
                    t = torch.as_tensor([r.temperature for r in reqs], device=logits.device)  # HTD102
            """,
            fixed="""
            import torch
            from h2dlint.runtime import h2d_as_tensor

            class Sampler:
                def forward(self, reqs, logits):
                    t = h2d_as_tensor([r.temperature for r in reqs], device=logits.device)
            """,
            column=13,
            reason="`Sampler.forward` runs per step",
        ),
        Invalid(
            """
            from torch import as_tensor

            def run(batches, dev):
                for ids in batches:
                    yield as_tensor(ids, dtype=int, device=dev)  # HTD102
            """,
            fixed="""
            from h2dlint.runtime import h2d_as_tensor
            from torch import as_tensor

            def run(batches, dev):
                for ids in batches:
                    yield h2d_as_tensor(ids, dtype=int, device=dev)
            """,
            column=15,
            reason="in a loop at line 4",
        ),
        Invalid(
            """
            import torch as th

            def sample(x):
                return th.as_tensor(x, device=th.device('cuda', 0))  # HTD102
            """,
            fixed="""
            import torch as th
            from h2dlint.runtime import h2d_as_tensor

            def sample(x):
                return h2d_as_tensor(x, device=th.device('cuda', 0))
            """,
            reason="`sample` runs per step",
        ),
        Invalid(
            """
            import torch

            def forward(ids, dev):
                with torch.device(dev):
                    return torch.as_tensor(ids)  # HTD102
            """,
            reason="inside `with torch.device(dev):` at line 4",
        ),
        Invalid(
            """
            import torch

            torch.set_default_device("cuda")

            def forward(ids):
                return torch.as_tensor(ids)  # HTD102
            """,
            reason="after `torch.set_default_device(...)` at line 3",
        ),
    )

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        names = context.names
        if names.qualify(call.func) != "torch.as_tensor":
            return None
        if accelerator_device(call, names) is None:
            return built_in_device_context(call, "torch.as_tensor", context)
        if has_empty_literal_data(call):
            return None
        rewrite, unfixable = constructor_rewrite(call, "h2d_as_tensor")
        return Match(
            node=call,
            problem="`torch.as_tensor(..., device=...)` copies host data with a blocking host-to-device copy and"
            " a stream sync on every call",
            remedy="Build the data with `torch.tensor(..., pin_memory=True)` and copy it with"
            " `.to(device, non_blocking=True)`",
            rewrite=rewrite,
            unfixable=unfixable,
        )

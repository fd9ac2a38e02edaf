"""HTD101: `torch.tensor(data, device=<accelerator>)` in hot code."""

from __future__ import annotations

import ast
from typing import Optional

from h2dlint.facts.constructs import accelerator_device, has_empty_literal_data
from h2dlint.rules.base import Invalid, Match, Rule, Valid
from h2dlint.rules.context import Context
from h2dlint.rules.context_device import built_in_device_context
from h2dlint.rules.docs import HELPER_FIX_SAFETY, KNOWN_DRAIN_LIMITS, KNOWN_HEAT_LIMITS
from h2dlint.rules.rewrites import constructor_rewrite


class TensorWithDevice(Rule):
    code = "HTD101"
    name = "tensor-with-device"
    summary = "`torch.tensor(data, device=...)` in hot code: a blocking copy and a stream sync on every call."
    triggers = (("tensor",), ("device",))

    what_it_does = """
        Checks for `torch.tensor(data, device=...)` with an accelerator device in code that runs per step or
        per request: inside a loop or comprehension, in a per-step entry point such as `forward` or
        `prepare_for_decode`, or in a function such code calls.

        It also checks `torch.tensor(data)` without `device=` inside a `with torch.device(<accelerator>):` block
        (or `with x.device:`), or in a module that calls `torch.set_default_device(<accelerator>)` at the top
        level: there the device comes from the context, and the copy is the same. Those are report-only.
        """
    why_bad = """
        `torch.tensor` builds the data in pageable host memory, then copies it to the device with a blocking
        copy followed by `cudaStreamSynchronize`. The host waits for all work already queued on the stream,
        such as the previous forward pass, so CPU scheduling and GPU work stop overlapping. Inside a decode
        step this costs a full pipeline drain every step, most visibly at small batch sizes.

        Building the data in pinned memory and copying with `non_blocking=True` removes the sync. Note that
        the original call, by accident, leaves the current stream drained: code that afterwards reads a
        buffer filled by an earlier `non_blocking` device-to-host copy, or hands the tensor to another
        stream without `wait_stream`/`record_stream`, may depend on that drain.
        """
    example = """
        class EagleDraftInput:
            def prepare_for_decode(self, batch):
                ids = [req.output_ids[-1] for req in batch.reqs]
                penalties.cumulate(torch.tensor(ids, dtype=torch.int64, device=batch.device))
        """
    use_instead = """
        class EagleDraftInput:
            def prepare_for_decode(self, batch):
                ids = [req.output_ids[-1] for req in batch.reqs]
                pinned = torch.tensor(ids, dtype=torch.int64, pin_memory=True)
                penalties.cumulate(pinned.to(batch.device, non_blocking=True))
        """

    fix_availability = "sometimes"
    fix_safety = HELPER_FIX_SAFETY.format(helper="h2d_tensor", original="torch.tensor")
    known_problems = (
        KNOWN_HEAT_LIMITS,
        """
        Any device other than a literal `"cpu"`, `"meta"` or `None` is taken as an accelerator, so a variable that
        holds `"cpu"` gives a false finding (the fixed call then falls back to the original, so the fix is harmless
        there).
        """,
        KNOWN_DRAIN_LIMITS,
    )
    options = ("extend-hot-functions", "extend-cold-functions", "helper-module", "sync-allowed-contexts")
    quiet_where_syncs_allowed = True
    references = ("cuda-sync", "pin-memory", "sync-debug-mode", "runtime", "reference", "hotness")

    VALID = (
        Valid("""
            import torch

            def forward(x):
                return torch.tensor(x)
            """),
        Valid("""
            import torch

            def forward(x):
                return torch.tensor(x, device='cpu')
            """),
        # A memo on another object (`layer`) whose guarded block sets the attribute it tests: once per object.
        Valid("""
            import torch

            def forward(layer, dev):
                if not hasattr(layer, "_ids"):
                    layer._ids = torch.tensor([1, 2], device=dev)
                return layer._ids
            """),
        # A block the project keeps syncs in on purpose (`sync-allowed-contexts`, default `gpu_sync_allowed`).
        Valid("""
            import torch
            from vllm.utils import gpu_sync_allowed

            def forward(x, dev):
                with gpu_sync_allowed():
                    return torch.tensor(x, device=dev)
            """),
        # A device parameter that defaults to the CPU: the function runs on the host unless a caller says so.
        Valid("""
            import torch

            def forward(speech, device: str = "cpu"):
                return torch.tensor(speech, device=device)
            """),
        Valid("""
            import torch

            def forward(x):
                return torch.tensor(x, device=torch.device('cpu', 0))
            """),
        Valid("""
            import torch

            def forward(x):
                return torch.tensor(x, device=None)
            """),
        Valid("""
            import torch

            def forward(x):
                return torch.tensor([], device='cuda')
            """),
        Valid("""
            import torch

            TABLE = torch.tensor([1, 2, 3], device='cuda')
            """),
        # A loop over a table of sizes written in the source walks a fixed grid (autotuning inputs), not data.
        Valid("""
            import torch

            def make_inputs():
                sizes = [2048, 4096]
                for n in [1, 2, 4] + list(range(8, 64, 8)):
                    for s in sizes:
                        yield torch.tensor([n, s], device='cuda')
            """),
        Valid("""
            import torch

            class M:
                def __init__(self, device):
                    self.rows = [torch.tensor([i], device=device) for i in range(8)]
            """),
        Valid("""
            import torch

            class M:
                def warmup(self, sizes):
                    for bs in sizes:
                        self.forward(torch.tensor([0] * bs, device=self.device))
            """),
        Valid("""
            import torch

            def build(rows):  # h2dlint: cold
                for r in rows:
                    yield torch.tensor(r, device='cuda')
            """),
        Valid("""
            import torch

            def forward(x, torch):
                return torch.tensor(x, device='cuda')
            """),
        Valid("""
            from torch import tensor

            def forward(x, make):
                tensor = make
                return tensor(x, device='cuda')
            """),
        Valid("""
            import torch

            def load(path):
                return torch.tensor(read(path), device='cuda')
            """),
        Valid("""
            import mylib as torch

            def forward(x):
                return torch.tensor(x, device='cuda')
            """),
        # A device context that names the CPU, and factories that fill on the device (no host data).
        Valid("""
            import torch

            def forward(ids, dev):
                with torch.device("cpu"):
                    host = torch.tensor(ids)
                with torch.device(dev):
                    zeros = torch.zeros(len(ids))
                return host, zeros
            """),
    )
    INVALID = (
        Invalid(
            """
            import torch

            class Model:
                def forward(self, ids):
                    return torch.tensor(ids, device='cuda')  # HTD101
            """,
            fixed="""
            import torch
            from h2dlint.runtime import h2d_tensor

            class Model:
                def forward(self, ids):
                    return h2d_tensor(ids, device='cuda')
            """,
            column=16,
            reason="`Model.forward` runs per step",
        ),
        Invalid(
            """
            import torch as th

            def run(batches, dev):
                for ids in batches:
                    x = th.tensor(ids, dtype=th.int64, device=dev)  # HTD101
            """,
            fixed="""
            import torch as th
            from h2dlint.runtime import h2d_tensor

            def run(batches, dev):
                for ids in batches:
                    x = h2d_tensor(ids, dtype=th.int64, device=dev)
            """,
            column=13,
            reason="in a loop at line 4",
        ),
        Invalid(
            """
            from torch import tensor as t

            def run(batches):
                return [t(b, device='cuda:0') for b in batches]  # HTD101
            """,
            fixed="""
            from h2dlint.runtime import h2d_tensor
            from torch import tensor as t

            def run(batches):
                return [h2d_tensor(b, device='cuda:0') for b in batches]
            """,
            column=13,
            reason="in a comprehension at line 4",
        ),
        Invalid(
            """
            import torch

            class Batch:
                def prepare_for_decode(self):
                    self.ids = self._ids()

                def _ids(self):
                    return torch.tensor(self.tokens, device=self.device)  # HTD101
            """,
            fixed="""
            import torch
            from h2dlint.runtime import h2d_tensor

            class Batch:
                def prepare_for_decode(self):
                    self.ids = self._ids()

                def _ids(self):
                    return h2d_tensor(self.tokens, device=self.device)
            """,
            reason="called from `Batch.prepare_for_decode` (per step)",
        ),
        Invalid(
            """
            import torch

            def build(rows):  # h2dlint: hot
                return torch.tensor(rows, device=torch.device('cuda'))  # HTD101
            """,
            fixed="""
            import torch
            from h2dlint.runtime import h2d_tensor

            def build(rows):  # h2dlint: hot
                return h2d_tensor(rows, device=torch.device('cuda'))
            """,
            reason="`build` is marked `# h2dlint: hot`",
        ),
        Invalid(
            """
            import torch

            def forward(ids, dev):
                with torch.device(dev):
                    return torch.tensor(ids)  # HTD101
            """,
            reason="inside `with torch.device(dev):` at line 4",
        ),
        Invalid(
            """
            import torch

            torch.set_default_device("cuda")

            def forward(ids):
                return torch.tensor(ids)  # HTD101
            """,
            reason="after `torch.set_default_device(...)` at line 3",
        ),
    )

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        names = context.names
        if names.qualify(call.func) != "torch.tensor":
            return None
        if accelerator_device(call, names) is None:
            return built_in_device_context(call, "torch.tensor", context)
        if has_empty_literal_data(call):
            return None
        rewrite, unfixable = constructor_rewrite(call, "h2d_tensor")
        return Match(
            node=call,
            problem="`torch.tensor(..., device=...)` makes a blocking host-to-device copy and a stream sync on every call",
            remedy="Build the data with `pin_memory=True` and copy it with `.to(device, non_blocking=True)`",
            rewrite=rewrite,
            unfixable=unfixable,
        )

"""HTD104: `non_blocking=True` on a copy from a tensor just built in pageable host memory."""

from __future__ import annotations

import ast
from typing import Optional

from h2dlint.facts.constructs import device_copy, host_built_tensor
from h2dlint.facts.placement_values import Place, clause, explanation
from h2dlint.rules.base import Invalid, Match, Rule, Valid
from h2dlint.rules.context import Context
from h2dlint.rules.context_device import copies_to_a_host_tensors_device
from h2dlint.rules.docs import (
    COPY_FIX_SAFETY,
    FIX_BUILT_ELSEWHERE,
    KNOWN_HEAT_LIMITS,
    KNOWN_PLACEMENT_LIMITS,
    PLACEMENT_SOURCES,
)
from h2dlint.rules.rewrites import BUILT_ELSEWHERE, copy_rewrite


class PageableNonBlocking(Rule):
    code = "HTD104"
    name = "pageable-non-blocking-copy"
    summary = "`.to(device, non_blocking=True)` of a tensor in pageable memory: `non_blocking` has no effect."
    # `True` covers the positional form `.to(dev, dtype, True)`.
    triggers = (("non_blocking", "True"),)

    what_it_does = """
        Checks for `.to(<device>, non_blocking=True)` or `.cuda(non_blocking=True)` applied to a tensor just
        built in pageable host memory, such as `torch.tensor(x, dtype=...)` or `torch.from_numpy(a)` without
        `pin_memory=True`, in code that runs per step or per request.

        It also checks such copies of any tensor known to be in pageable memory, wherever it was built
        (`torch.zeros(n)` without a device, `self.positions` built so in `__init__`, the result of `.cpu()` of
        a device tensor). A tensor known to be on the host only by its name (`seq_lens_cpu`) is not reported:
        engines often keep such mirrors pinned. Neither is the output of `.to("cpu", non_blocking=True)` from
        a device tensor, which PyTorch allocates pinned.
        """ + PLACEMENT_SOURCES
    why_bad = """
        `non_blocking` only makes a host-to-device copy asynchronous when the source is pinned. From pageable
        memory the driver stages the data and may synchronise with the stream, so the copy looks async but is
        not. Unlike `torch.tensor(..., device=...)`, `torch.cuda.set_sync_debug_mode` does not catch this, so
        it survives review: sglang's `prepare_for_decode` carried it until PR #28500.

        Building the tensor with `pin_memory=True` makes the copy truly asynchronous. The caching host
        allocator keeps the pinned block alive until the copy has finished, so dropping it at once is safe.
        """
    example = """
        class ScheduleBatch:
            def prepare_for_decode(self):
                last_tokens = [req.output_ids[-1] for req in self.reqs]
                penalties.cumulate(
                    torch.tensor(last_tokens, dtype=torch.int64).to(self.device, non_blocking=True)
                )
        """
    use_instead = """
        class ScheduleBatch:
            def prepare_for_decode(self):
                last_tokens = [req.output_ids[-1] for req in self.reqs]
                penalties.cumulate(
                    torch.tensor(last_tokens, dtype=torch.int64, pin_memory=True).to(
                        self.device, non_blocking=True
                    )
                )
        """

    fix_availability = "sometimes"
    fix_safety = (
        COPY_FIX_SAFETY.format(
            copy="`torch.tensor(d, dtype=x).to(dev, non_blocking=True)` or `.cuda(non_blocking=True)`"
        ),
        FIX_BUILT_ELSEWHERE,
    )
    known_problems = (
        KNOWN_HEAT_LIMITS,
        KNOWN_PLACEMENT_LIMITS,
        """
        Whether a pageable `non_blocking` copy actually stalls depends on the driver and the copy's size: on an H200
        (torch 2.11, CUDA 13) a small one did not stall the host, so there the fix guarantees asynchrony rather than
        speeding the step up. A tensor pinned afterwards with `t.pin_memory()` counts as pinned, though that call
        itself has been seen to stall for milliseconds under load; prefer `pin_memory=True` at construction.
        """,
    )
    options = ("extend-hot-functions", "extend-cold-functions", "helper-module", "sync-allowed-contexts")
    quiet_where_syncs_allowed = True
    references = ("cuda-sync", "pin-memory", "sync-debug-mode", "runtime", "reference", "hotness")

    VALID = (
        # A private method referenced otherwise than by its calls (a callback) may be called from anywhere: its
        # parameter's placement is unknown.
        Valid("""
            import torch

            class Batch:
                def prepare_for_decode(self, ids, dev):
                    self.hooks = [self._to_device]
                    self.input_ids = self._to_device(torch.tensor(ids), dev)

                def _to_device(self, host, dev):
                    return host.to(dev, non_blocking=True)
            """),
        # A host operand of an elementwise function does not place it: `x` may be on the device, the mask 0-dim.
        Valid("""
            import torch

            def step(x, dev):
                keep = torch.tensor(True)
                return torch.where(keep, x, 0).to(dev, non_blocking=True)
            """),
        Valid("""
            import torch

            def step(x, dev):
                return torch.tensor(x, pin_memory=True).to(dev, non_blocking=True)
            """),
        # A cast may give its receiver itself (`long()` of an int64 tensor): pinned or not is not known.
        Valid("""
            import torch

            def step(x, dev):
                pinned = torch.tensor(x, dtype=torch.int64, pin_memory=True)
                return pinned.long().to(dev, non_blocking=True)
            """),
        Valid("""
            import torch

            def step(x):
                return torch.tensor(x).to(torch.float16, non_blocking=True)
            """),
        Valid("""
            import torch

            def step(x):
                return torch.tensor(x).to('cpu', non_blocking=True)
            """),
        Valid("""
            import torch

            def step(x, dev):
                return torch.tensor(x, device=dev).to(dev, non_blocking=True)
            """),
        Valid("""
            import torch

            def step(x, dev):
                return x.to(dev, non_blocking=True)
            """),
        Valid("""
            import torch

            def step(x, dev):
                t = torch.tensor(x)
                t = t.pin_memory()
                return t.to(dev, non_blocking=True)
            """),
        Valid("""
            import torch

            def setup(x, dev):
                return torch.tensor(x).to(dev, non_blocking=True)
            """),
        Valid("""
            import torch

            class B:
                def __init__(self, x, dev):
                    for i in x:
                        self.t = torch.tensor(i).cuda(non_blocking=True)
            """),
        # Pinned sources, a host name that does not say which memory, an unknown tensor.
        Valid("""
            import torch

            class Runner:
                def __init__(self, n, pin):
                    self.lens = torch.zeros(n, dtype=torch.int32, pin_memory=pin)

                def forward(self, logits, batch, ids, dev):
                    staged = logits.argmax(-1).to("cpu", non_blocking=True)  # pinned by PyTorch
                    return (
                        self.lens.to(dev, non_blocking=True),
                        staged.to(dev, non_blocking=True),
                        batch.seq_lens_cpu.to(dev, non_blocking=True),
                        ids.to(dev, non_blocking=True),
                    )
            """),
        # Empty data is never copied; branches that may be pinned leave the memory unknown.
        Valid("""
            import torch

            def forward(dev, flag, staged_cpu):
                empty = torch.zeros(0, dtype=torch.int64)
                either = staged_cpu if flag else torch.zeros(3)
                return empty.to(dev, non_blocking=True), either.to(dev, non_blocking=True)
            """),
    )
    INVALID = (
        # A parameter of a private method lives where every call of it in its module passes it.
        Invalid(
            """
            import torch

            class Batch:
                def prepare_for_decode(self, ids, dev):
                    self.input_ids = self._to_device(torch.tensor(ids), dev)

                def _to_device(self, host, dev):
                    return host.to(dev, non_blocking=True)  # HTD104
            """,
            column=16,
            reason="`host` is, at every call of `self._to_device(...)` in this file (line 5), a tensor that is built",
        ),
        Invalid(
            """
            import torch

            class ScheduleBatch:
                def prepare_for_decode(self):
                    ids = torch.tensor(self.last, dtype=torch.int64).to(self.device, non_blocking=True)  # HTD104
            """,
            fixed="""
            import torch
            from h2dlint.runtime import h2d_tensor

            class ScheduleBatch:
                def prepare_for_decode(self):
                    ids = h2d_tensor(self.last, dtype=torch.int64, device=self.device)
            """,
            column=15,
            reason="`ScheduleBatch.prepare_for_decode` runs per step",
        ),
        Invalid(
            """
            import torch

            def step(x):
                return torch.tensor(x).cuda(non_blocking=True)  # HTD104
            """,
            fixed="""
            import torch
            from h2dlint.runtime import h2d_tensor

            def step(x):
                return h2d_tensor(x, device="cuda")
            """,
            column=12,
        ),
        Invalid(
            """
            import torch

            def feed(arrays, dev):
                for a in arrays:
                    yield torch.from_numpy(a).to(device=dev, dtype=torch.int32, non_blocking=True)  # HTD104
            """,
            reason="in a loop at line 4",
        ),
        Invalid(
            """
            import torch

            def step(ids, dev):
                ids_cpu = torch.tensor(ids, dtype=torch.int64)
                return ids_cpu.to(dev, non_blocking=True)  # HTD104
            """,
            column=12,
            reason="`step` runs per step",
        ),
        # `device=t.device` builds where `t` is: on the host when `t` is known to be there.
        Invalid(
            """
            import torch

            def step(ids, dev):
                ids_t = torch.tensor(ids)
                pos = torch.arange(len(ids), device=ids_t.device)
                return pos.to(dev, non_blocking=True)  # HTD104
            """,
            column=12,
            reason="is built where `ids_t` is (`device=ids_t.device`) at line 5",
        ),
        # A tensor with no elements copies nothing, so the alternative to it decides where the copy comes from.
        Invalid(
            """
            import torch

            def step(lens, dev):
                lens_t = torch.tensor(lens) if lens else torch.empty(0, dtype=torch.int64)
                return lens_t.to(dev, non_blocking=True)  # HTD104
            """,
            column=12,
            reason="is built on the host by `torch.tensor(...)` at line 4",
        ),
        Invalid(
            """
            import torch

            def forward(self, offsets):
                cu = torch.from_numpy(offsets)
                if self.on_gpu:
                    cu = cu.to(self.device, non_blocking=True)  # HTD104
                else:
                    cu = cu.to('cpu')
                return cu
            """,
            column=14,
            reason="`forward` runs per step",
        ),
        Invalid(
            """
            from torch import as_tensor

            def sample(x, dev):
                return as_tensor(x).long().to(dev, non_blocking=True)  # HTD104
            """,
            reason="`sample` runs per step",
        ),
        Invalid(
            """
            import torch

            class Runner:
                def __init__(self, n):
                    self.positions = torch.zeros(n, dtype=torch.int64)

                def forward(self, n, dev):
                    return self.positions[:n].to(dev, non_blocking=True)  # HTD104
            """,
            reason="(`self.positions[:n]` is built on the host by `torch.zeros(...)` at line 5)",
        ),
        Invalid(
            """
            import torch

            def forward(lens, dev):
                host = lens.cpu() + 1
                return host.cuda(non_blocking=True)  # HTD104
            """,
            reason="copied to the host by `.cpu()` at line 4",
        ),
        # What an operation computes from a pinned tensor is a new tensor, which PyTorch does not pin.
        Invalid(
            """
            import torch

            def step(x, dev):
                pinned = torch.tensor(x, pin_memory=True)
                return pinned.cumsum(0).to(dev, non_blocking=True)  # HTD104
            """,
            reason="is a new tensor in pageable memory, computed from one that is built in pinned memory",
        ),
    )

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        names = context.names
        copy = device_copy(call, names)
        if copy is None or not copy.non_blocking or copies_to_a_host_tensors_device(call, context):
            return None
        if not context.device_context and host_built_tensor(copy.receiver, names) is not None:
            source = f"`{copy.receiver.id}`, " if isinstance(copy.receiver, ast.Name) else ""
            rewrite, unfixable = copy_rewrite(call, names)
            return Match(
                node=call,
                problem=f"`.{copy.method}(..., non_blocking=True)` copies {source}a tensor just built in pageable"
                " memory, so the copy is not asynchronous and may sync the stream",
                remedy="Build the tensor with `pin_memory=True` so that `non_blocking=True` takes effect",
                rewrite=rewrite,
                unfixable=unfixable,
            )
        placed = context.placement(copy.receiver)
        if placed.place is not Place.PAGEABLE:
            return None
        return Match(
            node=call,
            problem=f"`.{copy.method}(..., non_blocking=True)` copies a tensor in pageable memory, so the copy is"
            f" not asynchronous and may sync the stream ({clause(copy.receiver, placed)})",
            remedy="Pin the source where it is made (`pin_memory=True`, or copy into a pinned buffer) so that"
            " `non_blocking=True` takes effect",
            unfixable=BUILT_ELSEWHERE,
            placement=explanation(copy.receiver, placed),
        )

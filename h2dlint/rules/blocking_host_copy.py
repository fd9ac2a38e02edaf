"""HTD103: a blocking `.to(<device>)` / `.cuda()` of a tensor just built on the host, in hot code."""

from __future__ import annotations

import ast
from typing import Optional

from h2dlint.facts.constructs import device_copy, host_built_tensor, is_pinned
from h2dlint.facts.placement_values import Place, clause, explanation
from h2dlint.rules.base import Invalid, Match, Rule, Valid
from h2dlint.rules.context import Context
from h2dlint.rules.context_device import copies_to_a_host_tensors_device
from h2dlint.rules.docs import (
    COPY_FIX_SAFETY,
    FIX_BUILT_ELSEWHERE,
    KNOWN_DRAIN_LIMITS,
    KNOWN_HEAT_LIMITS,
    KNOWN_PLACEMENT_LIMITS,
    PLACEMENT_SOURCES,
)
from h2dlint.rules.rewrites import BUILT_ELSEWHERE, copy_rewrite

PINNED_REMEDY = "Pass `non_blocking=True`: the source is already pinned"


class BlockingHostCopy(Rule):
    code = "HTD103"
    name = "blocking-copy-of-host-tensor"
    summary = "A blocking `.to(device)` or `.cuda()` of a host tensor in hot code: a copy and a stream sync every call."
    triggers = ((".to", ".cuda"),)

    what_it_does = """
        Checks for a blocking `.to(<device>)` or `.cuda()` (no `non_blocking=True`) applied to a tensor just
        built on the host by `torch.tensor`, `torch.as_tensor`, `torch.asarray` or `torch.from_numpy` without
        a device, in code that runs per step or per request. This covers the keyword forms
        `.to(device=..., dtype=...)`, host-preserving methods in between (`torch.tensor(x).long().cuda()`) and
        a local variable holding such a tensor: assigned once, or rebound (`x = torch.tensor(d)` then
        `x = x.to(dev)`), where the assignment just before the copy is the one that counts.

        It also checks blocking copies of any tensor known to be on the host, wherever it was built:
        `torch.zeros(n)` or `torch.arange(n)` without a device, the result of `.cpu()`, `self.lens_cpu` built
        in `__init__`, the return value of a function that builds one, `batch.seq_lens_cpu`.
        """ + PLACEMENT_SOURCES
    why_bad = """
        A blocking host-to-device copy is a `cudaMemcpyAsync` followed by `cudaStreamSynchronize`: the host
        waits for all work already queued on the stream, such as the previous forward pass, on every call.
        It is the same stall as `torch.tensor(data, device=...)`, written in two steps.

        Building the tensor with `pin_memory=True` and copying it with `non_blocking=True` removes the sync;
        the caching host allocator keeps the pinned block alive until the copy has finished. Note that the
        original call, by accident, leaves the current stream drained: code that afterwards reads a buffer
        filled by an earlier `non_blocking` device-to-host copy may depend on that.
        """
    example = """
        class LoRAManager:
            def prepare_lora_batch(self, batch):  # h2dlint: hot
                ranks = torch.tensor([self.ranks[uid] for uid in batch.lora_ids], dtype=torch.int32)
                self.batch_ranks = ranks.to(self.device)
        """
    use_instead = """
        class LoRAManager:
            def prepare_lora_batch(self, batch):  # h2dlint: hot
                ranks = torch.tensor(
                    [self.ranks[uid] for uid in batch.lora_ids], dtype=torch.int32, pin_memory=True
                )
                self.batch_ranks = ranks.to(self.device, non_blocking=True)
        """

    fix_availability = "sometimes"
    fix_safety = (
        COPY_FIX_SAFETY.format(copy="`torch.tensor(d, dtype=x).to(dev)` or `.cuda()`"),
        """
        A blocking copy of a source already built with `pin_memory=True` is reported with the remedy "pass
        `non_blocking=True`" and no fix: that would remove the stream drain the blocking copy makes, which the code
        may depend on.
        """,
        FIX_BUILT_ELSEWHERE,
    )
    known_problems = (
        KNOWN_HEAT_LIMITS,
        KNOWN_PLACEMENT_LIMITS,
        KNOWN_DRAIN_LIMITS,
    )
    options = ("extend-hot-functions", "extend-cold-functions", "helper-module", "sync-allowed-contexts")
    quiet_where_syncs_allowed = True
    references = ("cuda-sync", "pin-memory", "runtime", "hotness")

    VALID = (
        Valid("""
            import torch

            def step(x, dev):
                return torch.tensor(x).to(dev, non_blocking=True)
            """),
        Valid("""
            import torch

            def step(x):
                return torch.tensor(x).to(torch.int32)
            """),
        Valid("""
            import torch

            def step(x):
                return torch.tensor(x).to(dtype=torch.int32)
            """),
        Valid("""
            import torch

            def step(x):
                return torch.from_numpy(x).to('cpu')
            """),
        # A local that names the CPU where it is read: a host-to-host copy.
        Valid("""
            import torch

            def step(x):
                device = "cpu"
                return torch.from_numpy(x).to(device)
            """),
        Valid("""
            import torch

            def step(x, *, device="cpu"):
                return torch.from_numpy(x).to(device)
            """),
        Valid("""
            import torch

            class FeatureExtractor:
                def __init__(self, device="cpu"):
                    self._device = torch.device(device)

                def forward(self, x):
                    return torch.from_numpy(x).to(self._device)
            """),
        Valid("""
            import torch

            def step(x, dev):
                return torch.tensor(x, device=dev).to(dev)
            """),
        Valid("""
            import torch

            def step(x, dev):
                return x.to(dev)
            """),
        Valid("""
            import torch

            def setup(x):
                return torch.tensor(x).cuda()
            """),
        Valid("""
            import torch

            def step(x, **kw):
                return torch.tensor(x, **kw).cuda()
            """),
        # Rebound names: what the copy reads is the binding just before it, here already on the device.
        Valid("""
            import torch

            def step(x, dev):
                t = torch.tensor(x)
                t = t.cuda(non_blocking=True)
                return t.to(dev)
            """),
        Valid("""
            import torch

            def step(x, dev, gpu):
                t = torch.tensor(x)
                if gpu is not None:
                    t = gpu
                return t.to(dev)
            """),
        # Built only on one path: the copy may read the caller's tensor, which may already be on the device.
        Valid("""
            import torch

            def step(t, dev):
                if not isinstance(t, torch.Tensor):
                    t = torch.tensor(t)
                t = t.to(dev)
                return t
            """),
        # Placement: device-to-device, unknown, CPU-to-CPU, a device context, conflicting evidence.
        Valid("""
            import torch

            def forward(prefix, lens, dev):
                return torch.cat([prefix, lens]).to(dev)  # no joined tensor is known: unknown
            """),
        Valid("""
            import torch

            class Runner:
                def __init__(self, n, dev):
                    self.lens = torch.zeros(n, device=dev)

                def forward(self, dev, ids):
                    self.lens.to(dev)
                    ids.cuda()
            """),
        Valid("""
            import torch

            def step(n, dev):
                lens = torch.zeros(n)
                with torch.device(dev):
                    ones = torch.ones(n)
                return lens.to("cpu"), ones.cuda()
            """),
        Valid("""
            import torch

            def step(t, n):
                lens_cpu = t.cuda()  # the name says host, the value says device: unknown
                host = torch.arange(n)
                return lens_cpu.to("cuda"), host.to(host.device)
            """),
        # A host tensor without a dimension (`torch.tensor(2.0)`) mixes with a device tensor: unknown.
        Valid("""
            import torch

            def forward(lens, dev):
                scale = torch.tensor(2.0)
                return (scale * lens).to(dev)
            """),
        # `.to(t)` and `.to(t.device)` with `t` on the host stay on the host, as does `.to(device)` after
        # `device = t.device` (a feature extractor's `apply_cmvn`, run on the CPU).
        Valid("""
            import torch

            def forward(lens_cpu):
                host = torch.arange(4)
                return host.to(lens_cpu), host.to(lens_cpu.device)
            """),
        Valid("""
            import torch

            def forward(n):
                inputs = torch.zeros(n, 80)
                device = inputs.device
                return inputs + torch.ones(1, 80).to(device)
            """),
    )
    INVALID = (
        Invalid(
            """
            import torch

            def step(ids, dev):
                if ids.device.type == "cpu":
                    ids = ids.to(dev)  # HTD103
                return ids
            """,
            column=15,
            reason="`ids` is tested to be on the host (`ids.device.type == 'cpu'` at line 4)",
        ),
        Invalid(
            """
            import torch

            def step(x, dev):
                lens = torch.tensor([len(s) for s in x])
                lens = lens.to(dev)  # HTD103
            """,
            column=12,
            reason="`step` runs per step",
        ),
        Invalid(
            """
            import torch

            def step(x, dev):
                t = torch.tensor(x)
                t = t.long()
                return t.to(dev)  # HTD103
            """,
            column=12,
        ),
        Invalid(
            """
            import torch

            def step(x):
                return torch.tensor(x).cuda()  # HTD103
            """,
            fixed="""
            import torch
            from h2dlint.runtime import h2d_tensor

            def step(x):
                return h2d_tensor(x, device="cuda")
            """,
            column=12,
            reason="`step` runs per step",
        ),
        Invalid(
            """
            import torch

            def feed(arrays, dev):
                for a in arrays:
                    yield torch.from_numpy(a).to(device=dev, dtype=torch.int32)  # HTD103
            """,
            column=15,
            reason="in a loop at line 4",
        ),
        Invalid(
            """
            import torch

            def forward(ids, dev):
                t = torch.as_tensor(ids, dtype=torch.int64)
                return t.long().to(dev, torch.int32)  # HTD103
            """,
            column=12,
        ),
        Invalid(
            """
            import torch

            def forward(ids):
                return torch.tensor(ids, pin_memory=True).cuda(non_blocking=False)  # HTD103
            """,
            reason="`forward` runs per step",
        ),
        Invalid(
            """
            import torch

            def step(x, dev):
                t = torch.tensor(x)
                t = t + 1
                return t.to(dev)  # HTD103
            """,
            reason="(`t` is built on the host by `torch.tensor(...)` at line 4)",
        ),
        Invalid(
            """
            import torch

            def forward(n, dev):
                positions = torch.arange(n, dtype=torch.int64)
                return positions.to(dev)  # HTD103
            """,
            reason="(`positions` is built on the host by `torch.arange(...)` at line 4)",
        ),
        Invalid(
            """
            import torch

            def forward(logits, dev):
                ids = logits.argmax(-1).cpu()
                return ids.cuda()  # HTD103
            """,
            reason="copied to the host by `.cpu()` at line 4",
        ),
        Invalid(
            """
            import torch

            class Runner:
                def __init__(self, n):
                    self.seq_lens_host = torch.zeros(n, dtype=torch.int32)

                def forward(self, n, dev):
                    return self.seq_lens_host[:n].to(dev)  # HTD103
            """,
            reason="(`self.seq_lens_host[:n]` is built on the host by `torch.zeros(...)` at line 5)",
        ),
        Invalid(
            """
            import torch

            class Runner:
                def host_positions(self, n):
                    return torch.cat([torch.arange(n), torch.arange(n)])

                def forward(self, n, dev):
                    return self.host_positions(n).to(dev)  # HTD103
            """,
            reason="(`self.host_positions(n)` is built on the host by `torch.arange(...)` at line 5)",
        ),
        # A join's tensors share one device (PyTorch raises otherwise): one built on the host places the rest.
        Invalid(
            """
            import torch

            def forward(lens, dev):
                return torch.cat([torch.zeros(1, dtype=lens.dtype), lens]).to(dev)  # HTD103
            """,
            reason="is built on the host by `torch.zeros(...)` at line 4)",
        ),
        # So does a list whose items are chosen per item: both kinds are in it when it is joined.
        Invalid(
            """
            import torch

            def forward(items, dev):
                deltas = [torch.zeros(1) if item is None else item.delta for item in items]
                return torch.stack(deltas).to(dev)  # HTD103
            """,
            reason="is built on the host by `torch.zeros(...)` at line 4)",
        ),
        # A host tensor with a dimension keeps arithmetic on the host, whatever the other operand: a device one
        # would raise. Names unpacked from `torch.meshgrid` are where its inputs are; an annotated empty list
        # is filled as a plain one.
        Invalid(
            """
            import torch

            def forward(shapes, offsets, dev):
                parts: list[torch.Tensor] = []
                for h, w in shapes:
                    rows, cols = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
                    parts.append(rows.reshape(-1) * w + offsets[None, :])
                return torch.cat(parts).to(dev)  # HTD103
            """,
            column=12,
            reason="is built on the host by `torch.arange(...)` at line 6)",
        ),
        Invalid(
            """
            import torch

            def forward(batch, dev):
                return batch.seq_lens_cpu.to(dev)  # HTD103
            """,
            reason="is named like a host tensor (`*_cpu`)",
        ),
        # A list of slots filled by index holds what is put in each slot.
        Invalid(
            """
            import torch

            def forward(lens, dev):
                parts = [None] * len(lens)
                for i, n in enumerate(lens):
                    parts[i] = torch.full((3, 1), n - 1, dtype=torch.int64)
                return torch.cat(parts, dim=1).to(dev)  # HTD103
            """,
            column=12,
            reason="is built on the host by `torch.full(...)` at line 6)",
        ),
    )

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        names = context.names
        copy = device_copy(call, names)
        if copy is None or copy.non_blocking or copies_to_a_host_tensors_device(call, context):
            return None
        source = None if context.device_context else host_built_tensor(copy.receiver, names, pinned_too=True)
        if source is None:
            return self._copy_of_placed_tensor(call, copy.method, copy.receiver, context)
        built = f"`{names.qualify(source.func)}(...)`"
        if is_pinned(source):
            return Match(
                node=call,
                problem=f"blocking `.{copy.method}(...)` of a pinned tensor just built by {built} makes a stream sync"
                " on every call",
                remedy=PINNED_REMEDY,
            )
        rewrite, unfixable = copy_rewrite(call, names)
        return Match(
            node=call,
            problem=f"`.{copy.method}(...)` of a tensor just built on the host by {built} makes a blocking"
            " host-to-device copy and a stream sync on every call",
            remedy="Build the tensor in pinned memory (`pin_memory=True`) and copy it with"
            " `non_blocking=True`",
            rewrite=rewrite,
            unfixable=unfixable,
        )

    def _copy_of_placed_tensor(
        self, call: ast.Call, method: str, receiver: ast.expr, context: Context
    ) -> Optional[Match]:
        """A blocking copy of a tensor that the placement analysis knows is on the host, built elsewhere."""
        placed = context.placement(receiver)
        if not placed.place.on_host:
            return None
        evidence = clause(receiver, placed)
        if placed.place is Place.PINNED:
            return Match(
                node=call,
                problem=f"blocking `.{method}(...)` of a pinned host tensor makes a stream sync on every call"
                f" ({evidence})",
                remedy=PINNED_REMEDY,
                placement=explanation(receiver, placed),
            )
        return Match(
            node=call,
            problem=f"blocking `.{method}(...)` of a host tensor makes a host-to-device copy and a stream sync on"
            f" every call ({evidence})",
            remedy="Build it in pinned memory where it is made (`pin_memory=True`, or a pinned buffer) and copy"
            " it with `non_blocking=True`",
            unfixable=BUILT_ELSEWHERE,
            placement=explanation(receiver, placed),
        )

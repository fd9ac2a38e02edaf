"""HTD205: a blocking copy of a device tensor to the host (`.cpu()`, `.to("cpu")`, `host.copy_(device)`), in
hot code."""

from __future__ import annotations

import ast
from typing import Optional

from h2dlint.facts.arguments import is_false_literal, keyword_value, positional_args
from h2dlint.facts.constructs import device_type
from h2dlint.rules.base import Invalid, Match, Valid
from h2dlint.rules.context import Context
from h2dlint.rules.device_to_host import (
    DEFER_REMEDY,
    DeviceToHostRule,
    KNOWN_D2H_PLACEMENT,
    KNOWN_D2H_REGIONS,
    device_operand,
    sync_match,
)
from h2dlint.rules.docs import KNOWN_HEAT_LIMITS

COPY_REMEDY = (
    "keep the data on the host where it is made, or " + DEFER_REMEDY.replace("defer the read", "defer it", 1)
)


class DeviceToHostCopy(DeviceToHostRule):
    code = "HTD205"
    name = "device-to-host-copy"
    summary = "`.cpu()` or `.to(\"cpu\")` of a device tensor in hot code: a blocking copy and a stream sync."
    triggers = ((".cpu", ".to", ".copy_"),)

    what_it_does = """
        Checks for a blocking copy of a device tensor to the host, in code that runs per step or per request:
        `t.cpu()` (also as `t.cpu().numpy()` or `t.cpu().tolist()`), `t.to("cpu")` / `t.to(device="cpu")` /
        `t.to(torch.device("cpu"))` without `non_blocking=True`, and `host.copy_(t)` into a host tensor without
        `non_blocking=True`. The tensor must be known to be on the device (see Known problems).

        `t.numpy()` alone is not reported: on a CUDA tensor it raises, so it is never a silent sync. A
        `non_blocking=True` copy into pinned memory does not wait; reading its result before an event says it
        has landed is a race, which this rule does not look for.
        """
    example = """
        def forward(self, batch):
            lens = batch.seq_lens.cpu()
            return lens, batch.seq_lens_cpu.sum()
        """
    use_instead = """
        def forward(self, batch):
            lens = batch.seq_lens_cpu
            return lens, batch.seq_lens_cpu.sum()
        """

    known_problems = (
        KNOWN_HEAT_LIMITS,
        KNOWN_D2H_PLACEMENT,
        """
        A property named like a host mirror (`seq_lens_cpu`) that copies from the device on each access is not
        seen: its reads look like reads of a host tensor.
        """,
        KNOWN_D2H_REGIONS,
    )

    VALID = (
        # A device that a function of this module may return as the CPU leaves the tensor's placement to
        # configuration; a name that says "device copy" (`counts` beside `counts_cpu`) does not overrule that.
        Valid("""
            import torch

            def _device_and_group(cfg):
                device = cfg.group.device
                if cfg.use_cpu_group:
                    device = "cpu"
                return device, cfg.group

            def step(cfg, n, counts_cpu):
                device, group = _device_and_group(cfg)
                counts = torch.zeros(n).to(device)
                return counts.cpu()
            """),
        # A comprehension's own `v` is not the loop's `v`: what it holds is not known.
        Valid("""
            import torch

            def forward(x, dev, lens):
                for v in x.to(dev).split(2):
                    print(v)
                return [v.cpu() for v in lens]
            """),
        # Calling what a property returns (a module moved to the device) is not the property's return: what
        # the module's call gives is not known (vllm transformers_utils/processors/cohere_asr.py:531).
        Valid("""
            import torch

            class Extractor:
                @property
                def bank(self):
                    if self._bank is None:
                        self._bank = Filterbank().to("cuda")
                    return self._bank

                def forward(self, audio):
                    feats = self.bank(audio)
                    return feats.cpu()
            """),
        # `device=t.device` of a host tensor `t` builds on the host.
        Valid("""
            import torch

            def forward(lens):
                lens_t = torch.tensor(lens)
                starts = torch.zeros(len(lens), device=lens_t.device)
                return starts.cpu()
            """),
        # One binding that may reach the use is a parameter, of unknown placement: not reported.
        Valid("""
            import torch

            def forward(ids, greedy):
                if greedy:
                    ids = ids.cuda()
                return ids.cpu()
            """),
        # A guard against a misuse that the name rules out (`*_cpu` tested to be on the device): evidence that
        # conflicts, so unknown. And `None` as one alternative is no tensor: the other decides (the host).
        Valid("""
            import torch

            def forward(ids_cpu, meta, n):
                if ids_cpu.is_cuda:
                    ids_cpu = ids_cpu.cpu()
                lens = meta.lens.cpu() if n > 0 else None
                starts = torch.zeros(n + 1, device=lens.device)
                return ids_cpu, starts.cpu()
            """),
        # A name convention reads a tensor's last name: `device_mesh.mesh` (the ranks, on the CPU) is no `device_*`.
        Valid("""
            import torch

            def forward(device_mesh):
                return device_mesh.mesh.cpu()
            """),
        # `.numpy()` of a CUDA tensor raises: never a silent sync.
        Valid("""
            import torch

            def forward(n, dev):
                return torch.zeros(n, device=dev).numpy()
            """),
        # Non-blocking into pinned memory, unknown placement, a host tensor, a dtype conversion.
        Valid("""
            import torch

            def forward(n, dev, ids, out_host):
                lens = torch.zeros(n, device=dev)
                out_host.copy_(lens, non_blocking=True)
                host = torch.tensor([1, 2])
                return lens.to("cpu", non_blocking=True), ids.cpu(), host.cpu(), lens.to(torch.int32)
            """),
        # An attribute updated from itself and once moved to the host: its assignments disagree, so unknown; and
        # a method returning it, asked while the attribute was being worked out, is asked again afterwards.
        Valid("""
            import torch

            class Batch:
                def __init__(self, n, dev):
                    self.lens = torch.zeros(n, device=dev)
                    self.spare = torch.zeros(n, device=dev)

                def current(self, flag):
                    return self.lens if flag else self.spare

                def filter(self, keep, flag):
                    self.lens = torch.cat([self.lens[keep], self.current(flag)])
                    self.lens = self.lens.cpu()

                def forward(self, flag):
                    return self.lens.cpu(), self.current(flag).cpu()
            """),
        # Capture-only code: a copy inside `torch.cuda.graph(...)` cannot be a per-step sync (it would raise).
        Valid("""
            import torch

            def forward(graph, n, dev):
                lens = torch.zeros(n, device=dev)
                with torch.cuda.graph(graph):
                    lens.cpu()
            """),
    )
    INVALID = (
        # The device side of a host/device pair is named for it: `device_indices` beside `host_indices`.
        Invalid(
            """
            import torch

            def load_step(host_indices, device_indices):
                return host_indices.sort(), device_indices.cpu()  # HTD205
            """,
            column=33,
            reason="is named like a device tensor (`device_*`)",
        ),
        # Names unpacked from a call are where every item of its result is: `topk` gives both on the device.
        Invalid(
            """
            import torch

            def forward(logits, k, dev):
                scores, ids = logits.to(dev).topk(k)
                return ids.cpu()  # HTD205
            """,
            column=12,
            reason="is moved to the device by `.to(...)` at line 4",
        ),
        # A comprehension's variable too: `part` takes the chunks of a device tensor.
        Invalid(
            """
            import torch

            def forward(logits, n, dev):
                return [part.cpu() for part in logits.to(dev).split(n)]  # HTD205
            """,
            column=13,
            reason="is moved to the device by `.to(...)` at line 4",
        ),
        # So is the item `enumerate` (or `zip`) gives, and a field of a tensor operation's result (`.indices`).
        Invalid(
            """
            import torch

            def forward(logits, n, dev):
                parts = logits.to(dev).split(n)
                for i, part in enumerate(parts):
                    yield part.max(-1).indices.cpu()  # HTD205
            """,
            column=15,
            reason="is moved to the device by `.to(...)` at line 4",
        ),
        # A loop target is where the container's items are: chunks of a device tensor are on the device.
        Invalid(
            """
            import torch

            def forward(logits, n, dev):
                for chunk in logits.to(dev).split(n):
                    yield chunk.cpu()  # HTD205
            """,
            column=15,
            reason="is moved to the device by `.to(...)` at line 4",
        ),
        # A name bound in branches is where every binding that may reach the use puts it.
        Invalid(
            """
            import torch

            def forward(logits, greedy, dev):
                if greedy:
                    ids = logits.to(dev).argmax(-1)
                else:
                    ids = torch.zeros(len(logits), dtype=torch.long, device=dev)
                return ids.cpu()  # HTD205
            """,
            column=12,
            reason="is moved to the device by `.to(...)` at line 5",
        ),
        # An attribute updated from itself (`self.ids[keep]`, `torch.cat` with another batch's) stays where its
        # other assignments put it.
        Invalid(
            """
            import torch

            class Batch:
                def __init__(self, n, dev):
                    self.ids = torch.zeros(n, dtype=torch.int64, device=dev)

                def filter(self, keep):
                    self.ids = self.ids[keep]

                def merge(self, other: "Batch"):
                    self.ids = torch.cat([self.ids, other.ids])

                def forward(self):
                    return self.ids.cpu()  # HTD205
            """,
            column=16,
            reason="is built on the device (`device=dev`)",
        ),
        Invalid(
            """
            import torch

            def forward(num_rejected):
                return num_rejected.cpu() if num_rejected.is_cuda else num_rejected  # HTD205
            """,
            column=12,
            reason="`num_rejected` is tested to be on the device (`num_rejected.is_cuda` at line 4)",
        ),
        Invalid(
            """
            import torch

            def forward(logits_gpu):
                return logits_gpu.argmax(-1).cpu().numpy()  # HTD205
            """,
            column=12,
            reason="`.cpu()` of a device tensor",
        ),
        Invalid(
            """
            import torch

            def forward(batch):
                lens = batch.seq_lens.to("cpu")  # HTD205
                return lens, batch.seq_lens_cpu
            """,
            reason="Use the host mirror `batch.seq_lens_cpu` instead",
        ),
        Invalid(
            """
            import torch

            class Runner:
                def __init__(self, n, dev):
                    self.ids = torch.zeros(n, dtype=torch.int64, device=dev)
                    self.ids_host = torch.zeros(n, dtype=torch.int64)

                def forward(self):
                    self.ids_host.copy_(self.ids)  # HTD205
            """,
            reason="a blocking `.copy_(...)` of a device tensor into a host tensor",
        ),
    )

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        func = call.func
        if not isinstance(func, ast.Attribute) or _non_blocking(call):
            return None
        if func.attr == "cpu" and not call.args:
            return self._copy(call, func.value, "`.cpu()` of a device tensor", context)
        if func.attr == "to" and _to_cpu(call, context):
            return self._copy(call, func.value, "a blocking `.to(\"cpu\")` of a device tensor", context)
        if func.attr == "copy_" and call.args and context.placement(func.value).place.on_host:
            return self._copy(call, call.args[0], "a blocking `.copy_(...)` of a device tensor into a host tensor",
                              context)
        return None

    def _copy(self, call: ast.Call, tensor: ast.expr, what: str, context: Context) -> Optional[Match]:
        operand = device_operand(tensor, context)
        return sync_match(call, what, operand, COPY_REMEDY) if operand is not None else None


def _to_cpu(call: ast.Call, context: Context) -> bool:
    device = keyword_value(call, "device") or next(iter(positional_args(call)), None)
    return device is not None and device_type(device, context.names) == "cpu"


def _non_blocking(call: ast.Call) -> bool:
    flag = keyword_value(call, "non_blocking")
    if flag is not None:
        return not is_false_literal(flag)
    positional = positional_args(call)  # `.to("cpu", torch.int32, True)`, `.copy_(src, True)`
    return any(isinstance(a, ast.Constant) and a.value is True for a in positional[1:])

"""HTD107: `buf.copy_(host_tensor)` into a buffer on an accelerator, from a tensor just built in pageable memory."""

from __future__ import annotations

import ast
from typing import Optional, Tuple

from h2dlint.facts.arguments import is_constant, is_false_literal, keyword_arg, keyword_value, positional_args
from h2dlint.facts.constructs import host_built_tensor, on_accelerator
from h2dlint.facts.placement_values import Place, Placement, clause, explanation
from h2dlint.rules.base import Invalid, Match, Rule, Valid
from h2dlint.rules.context import Context
from h2dlint.rules.docs import KNOWN_HEAT_LIMITS, KNOWN_PLACEMENT_LIMITS, PLACEMENT_SOURCES


class CopyIntoDeviceBuffer(Rule):
    code = "HTD107"
    name = "copy-into-device-buffer-from-pageable"
    summary = "`buf.copy_(host_tensor)` into a device buffer in hot code: a blocking copy and a stream sync."
    triggers = (("copy_",),)

    what_it_does = """
        Checks for `buf.copy_(src)` in code that runs per step or per request, where `src` is a tensor just
        built in pageable host memory (`torch.tensor`, `torch.as_tensor`, `torch.asarray` or
        `torch.from_numpy` without a device or `pin_memory=True`, or a local variable holding one) and `buf`
        is known to be on an accelerator. As with HTD105, a linter rarely knows where `buf` lives, so the
        rule reports only when it is known:
        - `buf` (or the tensor it slices, `buf[:n]`) is a local variable whose assignment (the only one, or
          the last before the call) is a torch call with an accelerator `device=` (also passed in a local
          table, `torch.zeros(n, **i32)` with `i32 = dict(dtype=torch.int32, device=device)`), or
          `.cuda()` / `.to(<device>)`, or a view or item of a tensor or collection known as below
          (`mask = self.mask_by_size[bs]`);
        - `buf` or the tensor it slices is `self.x` in a method, and every assignment of `self.x` in the
          class's methods is such a construct (`self.x = torch.zeros(n, device=device)` in `__init__`), or
          `self.x` is a list or dict (`self.x = []`) filled only with such tensors or views of them
          (`self.x.append(self.buf[:n])`);
        - `buf` or the tensor it slices, as written (`self.input_ids`), matches a pattern in the
          `accelerator-tensors` setting of `[tool.h2dlint]`;
        - the placement analysis knows `buf` is on the device, as below.

        The source may also be any tensor the placement analysis knows is on the host (`self.lens_cpu` built
        in `__init__`, the result of `.cpu()`): a blocking copy from it is reported, and a
        `non_blocking=True` one when it is known to be in pageable memory. A copy into a host buffer
        (`self.lens_cpu[:n].copy_(...)`) is host-to-host and never reported.

        Report only: there is no automatic fix.
        """ + PLACEMENT_SOURCES
    why_bad = """
        Copying into a preallocated device buffer is the right way to feed a CUDA graph or a persistent
        kernel, but from a pageable source it does not avoid the stall it is meant to avoid. Without
        `non_blocking=True` the copy is a `cudaMemcpyAsync` followed by `cudaStreamSynchronize`: the host
        waits for all work queued on the stream on every call, as with `torch.tensor(data, device=...)`.
        With `non_blocking=True` from pageable memory, the driver stages the data and may synchronise anyway,
        and `torch.cuda.set_sync_debug_mode` does not catch it.

        Building the source with `pin_memory=True` and passing `non_blocking=True` makes the copy truly
        asynchronous; the caching host allocator keeps the pinned block alive until the copy has finished.
        This is not a drop-in change, which is why there is no automatic fix: the blocking copy leaves the
        stream drained, and code that afterwards reads a buffer filled by an earlier `non_blocking`
        device-to-host copy, or hands `buf` to another stream, may depend on that by accident.
        """
    example = """
        def prepare_for_decode(self, reqs):
            seq_lens = torch.zeros(len(reqs), dtype=torch.int32, device=self.device)
            seq_lens.copy_(torch.tensor([len(r.tokens) for r in reqs], dtype=torch.int32))
        """
    use_instead = """
        def prepare_for_decode(self, reqs):
            seq_lens = torch.zeros(len(reqs), dtype=torch.int32, device=self.device)
            lengths = torch.tensor([len(r.tokens) for r in reqs], dtype=torch.int32, pin_memory=True)
            seq_lens.copy_(lengths, non_blocking=True)
        """

    fix_availability = "never"
    fix_safety = """
        There is no automatic fix: adding `pin_memory=True` and `non_blocking=True` removes the drain that the
        blocking copy makes, and code that reads `buf` from another stream, or reads a buffer filled by an earlier
        `non_blocking` device-to-host copy, may depend on it by accident.
        """
    known_problems = (
        KNOWN_HEAT_LIMITS,
        KNOWN_PLACEMENT_LIMITS,
    )
    options = ("extend-hot-functions", "extend-cold-functions", "accelerator-tensors", "sync-allowed-contexts")
    quiet_where_syncs_allowed = True
    references = ("cuda-sync", "pin-memory", "sync-debug-mode", "hotness")

    VALID = (
        Valid("""
            import torch

            def forward(buf, x):
                buf.copy_(torch.tensor(x))
            """),
        Valid("""
            import torch

            def forward(x, dev):
                buf = torch.zeros(4, device=dev)
                buf.copy_(torch.tensor(x, pin_memory=True), non_blocking=True)
            """),
        Valid("""
            import torch

            def forward(x, dev):
                buf = torch.zeros(4, device=dev)
                buf.copy_(torch.tensor(x, device=dev))
            """),
        Valid("""
            import torch

            def forward(x):
                buf = torch.zeros(4)
                buf.copy_(torch.tensor(x))
            """),
        Valid("""
            import torch

            def load(x, dev):
                buf = torch.zeros(4, device=dev)
                buf.copy_(torch.tensor(x))
            """),
        Valid("""
            import torch

            def forward(x, y, dev):
                buf = torch.zeros(4, device=dev)
                buf.copy_(y)
            """),
        Valid("""
            import torch

            class Runner:
                def __init__(self):
                    self.buf = torch.zeros(4, pin_memory=True)

                def forward(self, x):
                    self.buf.copy_(torch.tensor(x))
            """),
        Valid("""
            import torch

            class Drafter:
                def __init__(self, dev, host):
                    self.mask = torch.empty(64, dtype=torch.bool, device=dev)
                    self.masks = []
                    self.masks.append(self.mask[:8])
                    self.masks.append(host)

                def forward(self, rows):
                    self.masks[0].copy_(torch.tensor(rows))
            """),
        Valid("""
            import torch

            class Runner:
                def __init__(self):
                    i32 = dict(dtype=torch.int32)
                    self.buf = torch.zeros(4, **i32)

                def forward(self, x):
                    self.buf.copy_(torch.tensor(x))
            """),
        # A host destination, a pinned source copied without blocking, a host name that does not say which memory.
        Valid("""
            import torch

            class Runner:
                def __init__(self, n, dev):
                    self.lens_cpu = torch.zeros(n, dtype=torch.int32)
                    self.staging = torch.zeros(n, dtype=torch.int32, pin_memory=True)
                    self.lens = torch.zeros(n, dtype=torch.int32, device=dev)

                def forward(self, batch, n):
                    self.lens_cpu[:n].copy_(batch.seq_lens_cpu)
                    self.lens[:n].copy_(self.staging[:n], non_blocking=True)
                    self.lens[:n].copy_(batch.seq_lens_cpu, non_blocking=True)
            """),
    )
    INVALID = (
        Invalid(
            """
            import torch

            def forward(x, dev):
                buf = torch.zeros(4, device=dev)
                buf.copy_(torch.tensor(x, dtype=torch.int32))  # HTD107
            """,
            column=5,
            reason="`forward` runs per step",
        ),
        Invalid(
            """
            import numpy as np
            import torch

            def step(rows, t):
                buf = t.cuda()
                host = torch.from_numpy(np.asarray(rows))
                buf[: len(rows)].copy_(host, non_blocking=True)  # HTD107
            """,
            column=5,
        ),
        Invalid(
            """
            import torch

            class Runner:
                def __init__(self, dev):
                    self.seq_lens = torch.zeros(8, dtype=torch.int32, device=dev)

                def forward(self, lens):
                    self.seq_lens[: len(lens)].copy_(torch.tensor(lens))  # HTD107
            """,
            column=9,
            reason="`Runner.forward` runs per step",
        ),
        Invalid(
            """
            import torch

            class Residency:
                def __init__(self, dev):
                    i32 = dict(dtype=torch.int32, device=dev)
                    self.lastuse = torch.zeros(8, **i32)

                def forward(self, lens):
                    self.lastuse.copy_(torch.tensor(lens, dtype=torch.int32))  # HTD107
            """,
            reason="`Residency.forward` runs per step",
        ),
        Invalid(
            """
            import torch

            class Drafter:
                def __init__(self, dev, sizes):
                    self.mask = torch.empty(64, dtype=torch.bool, device=dev)
                    self.mask_by_size = []
                    for n in sizes:
                        self.mask_by_size.append(self.mask[:n])

                def prepare_for_decode(self, rows):
                    mask = self.mask_by_size[len(rows)]
                    mask.copy_(torch.tensor(rows))  # HTD107
            """,
            reason="`Drafter.prepare_for_decode` runs per step",
        ),
        Invalid(
            """
            import torch

            def run(batches, dev):
                buf = torch.empty(8, device=dev)
                for b in batches:
                    buf.copy_(src=torch.as_tensor(b))  # HTD107
            """,
            reason="in a loop at line 5",
        ),
        Invalid(
            """
            import torch

            class Runner:
                def __init__(self, dev):
                    self.buf = torch.zeros(4, device=dev)

                def reset(self):
                    self.buf = None

                def forward(self, x):
                    self.buf.copy_(torch.tensor(x))  # HTD107
            """,
        ),
        Invalid(
            """
            import torch

            class Runner:
                def __init__(self, n, dev):
                    self.lens_cpu = torch.zeros(n, dtype=torch.int32)
                    self.lens = torch.zeros(n, dtype=torch.int32, device=dev)

                def forward(self, n):
                    self.lens[:n].copy_(self.lens_cpu[:n])  # HTD107
            """,
            reason="(`self.lens_cpu[:n]` is built on the host by `torch.zeros(...)` at line 5; `self.lens[:n]` is"
            " built on the device",
        ),
        Invalid(
            """
            import torch

            def forward(out_gpu, logits):
                out_gpu.copy_(logits.argmax(-1).cpu())  # HTD107
            """,
            reason="copied to the host by `.cpu()`",
        ),
    )

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        names = context.names
        if not isinstance(call.func, ast.Attribute) or call.func.attr != "copy_":
            return None
        positional = positional_args(call)
        source = positional[0] if positional else keyword_value(call, "src")
        if source is None:
            return None
        non_blocking = _non_blocking(call, positional)
        fresh = not context.device_context and host_built_tensor(source, names) is not None
        placed = None if fresh else context.placement(source)
        if placed is not None and not _stalls(placed.place, non_blocking):
            return None
        destination = self._destination(call.func.value, context)
        if destination is None:
            return None
        evidence = [clause(e, p) for e, p in ((source, placed), destination) if p is not None and p.evidence]
        what = "a tensor just built in pageable memory" if fresh else "a host tensor"
        if non_blocking:
            what = what if fresh else "a tensor in pageable memory"
            problem = f"`.copy_(..., non_blocking=True)` from {what} into a device buffer is not asynchronous and" \
                " may sync the stream"
        else:
            problem = f"`.copy_(...)` from {what} into a device buffer makes a blocking host-to-device copy and a" \
                " stream sync on every call"
        return Match(
            node=call,
            problem=problem + (f" ({'; '.join(evidence)})" if evidence else ""),
            remedy="Build the source with `pin_memory=True` and copy it with `.copy_(..., non_blocking=True)`",
            placement=tuple(
                line for e, p in ((source, placed), destination) if p is not None for line in explanation(e, p)
            ),
        )

    def _destination(self, destination: ast.expr, context: Context) -> Optional[Tuple[ast.expr, Optional[Placement]]]:
        """(`destination`, its placement evidence, None when the older recogniser knew it) when it is known to be
        on an accelerator, else None."""
        placed = context.placement(destination)
        if placed.place is Place.DEVICE:
            return destination, placed
        candidates = [destination]
        while isinstance(candidates[-1], ast.Subscript):
            candidates.append(candidates[-1].value)
        return (destination, None) if any(on_accelerator(c, context.names) for c in candidates) else None


def _stalls(place: Place, non_blocking: bool) -> bool:
    """Whether a copy from a source in `place` makes the host wait: blocking from the host, or non-blocking
    from pageable memory."""
    return place is Place.PAGEABLE or (not non_blocking and place.on_host)


def _non_blocking(call: ast.Call, positional: list) -> bool:
    flag = keyword_arg(call, "non_blocking")
    if flag is not None:
        return not is_false_literal(flag.value)
    return len(positional) > 1 and is_constant(positional[1], "True")

"""HTD105: `x.new_tensor(data)` where `x` is on an accelerator, in hot code."""

from __future__ import annotations

import ast
from typing import Optional

from h2dlint.facts.arguments import keyword_value
from h2dlint.facts.constructs import is_host_device, on_accelerator
from h2dlint.facts.placement_values import Place, clause, explanation
from h2dlint.rules.base import Invalid, Match, Rule, Valid
from h2dlint.rules.context import Context
from h2dlint.rules.docs import KNOWN_HEAT_LIMITS, KNOWN_PLACEMENT_LIMITS, PLACEMENT_SOURCES


PROBLEM = (
    "`.new_tensor(...)` on an accelerator builds the data on the host and makes a blocking host-to-device copy and"
    " a stream sync on every call"
)
REMEDY = "Build the data with `torch.tensor(..., pin_memory=True)` and copy it with `.to(x.device, non_blocking=True)`"


class NewTensorOnDevice(Rule):
    code = "HTD105"
    name = "new-tensor-on-device"
    summary = "`x.new_tensor(data)` with `x` on an accelerator, in hot code: a blocking copy and a stream sync."
    triggers = (("new_tensor",),)

    what_it_does = """
        Checks for `x.new_tensor(data)` in code that runs per step or per request, when the new tensor lands
        on an accelerator. `new_tensor` takes its device from `x`, which a linter rarely knows, so the rule
        reports only when it is known:
        - the call passes an accelerator `device=`;
        - `x` is a local variable whose assignment (the only one, or the last before the call) is a torch
          call with an accelerator `device=` (also passed in a local table: `**dict(device=device)`), or
          `.cuda()` / `.to(<device>)`;
        - `x` is `self.y` in a method, and every assignment of `self.y` in the class's methods is such a
          construct (`self.y = torch.zeros(n, device=device)` in `__init__`);
        - `x`, as written (`input_ids`, `self.seq_lens`) or by its last name, matches a pattern in the
          `accelerator-tensors` setting of `[tool.h2dlint]` (fnmatch globs; `["*"]` treats every receiver as on
          the device);
        - the placement analysis knows `x` is on the device, as below: `ids_gpu`, `batch.seq_lens` when
          `batch.seq_lens_cpu` is in sight, the return value of a function that moves it there.
        """ + PLACEMENT_SOURCES
    why_bad = """
        `x.new_tensor(data)` with `x` on CUDA builds `data` in pageable host memory and copies it with a
        blocking copy followed by `cudaStreamSynchronize`, exactly as `torch.tensor(data, device=x.device)`
        does. The host waits for all work queued on the stream on every call.

        There is no automatic fix: the device is only known at run time.
        """
    example = """
        def forward(self, input_ids, reqs):
            positions = torch.zeros(len(reqs), dtype=torch.int64, device="cuda")
            lengths = positions.new_tensor([len(r.tokens) for r in reqs])
        """
    use_instead = """
        def forward(self, input_ids, reqs):
            positions = torch.zeros(len(reqs), dtype=torch.int64, device="cuda")
            pinned = torch.tensor([len(r.tokens) for r in reqs], dtype=torch.int64, pin_memory=True)
            lengths = pinned.to(positions.device, non_blocking=True)
        """

    fix_availability = "never"
    fix_safety = """
        There is no automatic fix: where the new tensor lands is decided by `x` at run time, and the rewrite needs
        both the device and the dtype `new_tensor` takes from `x`. Write the pinned copy by hand, as in "Use instead".
        """
    known_problems = (
        KNOWN_HEAT_LIMITS,
        KNOWN_PLACEMENT_LIMITS,
        """
        `accelerator-tensors = ["*"]` reports every receiver, including tensors that are on the CPU.
        """,
    )
    options = ("extend-hot-functions", "extend-cold-functions", "accelerator-tensors", "sync-allowed-contexts")
    quiet_where_syncs_allowed = True
    references = ("cuda-sync", "pin-memory", "hotness")

    VALID = (
        Valid("""
            import torch

            def forward(x, data):
                return x.new_tensor(data)
            """),
        Valid("""
            import torch

            def forward(x, data):
                return x.cuda().new_tensor(data, device='cpu')
            """),
        Valid("""
            import torch

            def forward(data):
                x = torch.zeros(3)
                return x.new_tensor(data)
            """),
        Valid("""
            import torch

            def load(data):
                x = torch.zeros(3, device='cuda')
                return x.new_tensor(data)
            """),
        Valid("""
            import torch

            def forward(data):
                x = torch.zeros(3, device='cpu')
                return x.new_tensor(data)
            """),
        Valid("""
            import torch

            class M:
                def __init__(self, dev, host):
                    self.x = torch.zeros(3, device=dev)
                    if host:
                        self.x = torch.zeros(3)

                def forward(self, data):
                    return self.x.new_tensor(data)
            """),
        # Receivers on the host, or not known.
        Valid("""
            import torch

            def forward(seq_lens_cpu, hidden, n):
                host = torch.zeros(n)
                return seq_lens_cpu.new_tensor([1]), host.new_tensor([2]), hidden.new_tensor([3])
            """),
    )
    INVALID = (
        Invalid(
            """
            import torch

            class M:
                def __init__(self, dev):
                    self.lens = torch.zeros(3, device=dev)

                def forward(self, data):
                    return self.lens.new_tensor(data)  # HTD105
            """,
            column=16,
            reason="`M.forward` runs per step",
        ),
        Invalid(
            """
            import torch

            def forward(data, dev):
                x = torch.zeros(3, device=dev)
                return x.new_tensor(data)  # HTD105
            """,
            column=12,
            reason="`forward` runs per step",
        ),
        Invalid(
            """
            import torch

            def step(data, t):
                x = t.cuda()
                return x.new_tensor(data)  # HTD105
            """,
        ),
        Invalid(
            """
            import torch

            def run(batches, t, dev):
                for b in batches:
                    yield t.new_tensor(b, device=dev)  # HTD105
            """,
            reason="in a loop at line 4",
        ),
        Invalid(
            """
            import torch

            def forward(ids_gpu, n):
                return ids_gpu.new_tensor(list(range(n)))  # HTD105
            """,
            reason="(`ids_gpu` is named like a device tensor (`*_gpu`))",
        ),
        Invalid(
            """
            import torch

            def forward(batch, n):
                total = int(batch.seq_lens_cpu.sum())
                return batch.seq_lens.new_tensor([total])  # HTD105
            """,
            reason="has a host mirror `seq_lens_cpu`",
        ),
        Invalid(
            """
            import torch

            class Sampler:
                def __init__(self, dev):
                    self.penalties = torch.zeros(8).cuda()

                def forward(self, ids):
                    return self.penalties.new_tensor(ids)  # HTD105
            """,
            reason="moved to the device by `.cuda(...)` at line 5",
        ),
    )

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        names = context.names
        if not isinstance(call.func, ast.Attribute) or call.func.attr != "new_tensor":
            return None
        device = keyword_value(call, "device")
        if device is not None:
            if is_host_device(device, names):
                return None
            return Match(node=call, problem=PROBLEM, remedy=REMEDY)
        receiver = call.func.value
        placed = context.placement(receiver)
        if placed.place is not Place.DEVICE:
            return Match(node=call, problem=PROBLEM, remedy=REMEDY) if on_accelerator(receiver, names) else None
        return Match(
            node=call,
            problem=f"{PROBLEM} ({clause(receiver, placed)})",
            remedy=REMEDY,
            placement=explanation(receiver, placed),
        )

"""HTD101: `torch.tensor(data, device=<accelerator>)` in hot code."""

from __future__ import annotations

import ast
from typing import Optional

from h2dlint.facts.constructs import accelerator_device, has_empty_literal_data
from h2dlint.rules.base import Invalid, Match, Rule, Valid
from h2dlint.rules.context import Context
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

    VALID = (
        Valid("import torch\n\ndef forward(x):\n    return torch.tensor(x)\n"),
        Valid("import torch\n\ndef forward(x):\n    return torch.tensor(x, device='cpu')\n"),
        Valid("import torch\n\ndef forward(x):\n    return torch.tensor(x, device=torch.device('cpu', 0))\n"),
        Valid("import torch\n\ndef forward(x):\n    return torch.tensor(x, device=None)\n"),
        Valid("import torch\n\ndef forward(x):\n    return torch.tensor([], device='cuda')\n"),
        Valid("import torch\n\nTABLE = torch.tensor([1, 2, 3], device='cuda')\n"),
        # A loop over a table of sizes written in the source walks a fixed grid (autotuning inputs), not data.
        Valid(
            "import torch\n\ndef make_inputs():\n    sizes = [2048, 4096]\n"
            "    for n in [1, 2, 4] + list(range(8, 64, 8)):\n        for s in sizes:\n"
            "            yield torch.tensor([n, s], device='cuda')\n"
        ),
        Valid(
            "import torch\n\nclass M:\n    def __init__(self, device):\n"
            "        self.rows = [torch.tensor([i], device=device) for i in range(8)]\n"
        ),
        Valid(
            "import torch\n\nclass M:\n    def warmup(self, sizes):\n        for bs in sizes:\n"
            "            self.forward(torch.tensor([0] * bs, device=self.device))\n"
        ),
        Valid(
            "import torch\n\ndef build(rows):  # h2dlint: cold\n    for r in rows:\n"
            "        yield torch.tensor(r, device='cuda')\n"
        ),
        Valid("import torch\n\ndef forward(x, torch):\n    return torch.tensor(x, device='cuda')\n"),
        Valid(
            "from torch import tensor\n\ndef forward(x, make):\n    tensor = make\n"
            "    return tensor(x, device='cuda')\n"
        ),
        Valid("import torch\n\ndef load(path):\n    return torch.tensor(read(path), device='cuda')\n"),
        Valid("import mylib as torch\n\ndef forward(x):\n    return torch.tensor(x, device='cuda')\n"),
    )
    INVALID = (
        Invalid(
            "import torch\n\nclass Model:\n    def forward(self, ids):\n"
            "        return torch.tensor(ids, device='cuda')\n",
            line=5,
            column=16,
            reason="`Model.forward` runs per step",
        ),
        Invalid(
            "import torch as th\n\ndef run(batches, dev):\n    for ids in batches:\n"
            "        x = th.tensor(ids, dtype=th.int64, device=dev)\n",
            line=5,
            column=13,
            reason="in a loop at line 4",
        ),
        Invalid(
            "from torch import tensor as t\n\ndef run(batches):\n"
            "    return [t(b, device='cuda:0') for b in batches]\n",
            line=4,
            column=13,
            reason="in a comprehension at line 4",
        ),
        Invalid(
            "import torch\n\nclass Batch:\n    def prepare_for_decode(self):\n        self.ids = self._ids()\n\n"
            "    def _ids(self):\n        return torch.tensor(self.tokens, device=self.device)\n",
            line=8,
            reason="called from `Batch.prepare_for_decode` (per step)",
        ),
        Invalid(
            "import torch\n\ndef build(rows):  # h2dlint: hot\n"
            "    return torch.tensor(rows, device=torch.device('cuda'))\n",
            line=4,
            reason="`build` is marked `# h2dlint: hot`",
        ),
    )

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        names = context.names
        if names.qualify(call.func) != "torch.tensor" or accelerator_device(call, names) is None:
            return None
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

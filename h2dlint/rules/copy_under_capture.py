"""HTD106: a host-to-device copy that runs under CUDA-graph capture."""

from __future__ import annotations

import ast
from typing import Optional, Sequence, Type

from h2dlint.facts.heat import Heat
from h2dlint.facts.settings import Settings
from h2dlint.facts.summary import Site
from h2dlint.rules.as_tensor_with_device import AsTensorWithDevice
from h2dlint.rules.base import Invalid, Match, Rule, Valid
from h2dlint.rules.blocking_host_copy import BlockingHostCopy
from h2dlint.rules.context import Context
from h2dlint.rules.copy_into_device_buffer import CopyIntoDeviceBuffer
from h2dlint.rules.new_tensor_on_device import NewTensorOnDevice
from h2dlint.rules.pageable_non_blocking import PageableNonBlocking
from h2dlint.rules.tensor_with_device import TensorWithDevice

# The constructs this rule looks for under capture: those of every other H2D rule.
COPY_RULES: Sequence[Type[Rule]] = (
    TensorWithDevice, AsTensorWithDevice, BlockingHostCopy, PageableNonBlocking, NewTensorOnDevice, CopyIntoDeviceBuffer
)


class CopyUnderCapture(Rule):
    code = "HTD106"
    name = "copy-under-graph-capture"
    summary = "A host-to-device copy inside `torch.cuda.graph(...)` capture: an error, or a silently wrong graph."
    triggers = (("graph",),)

    what_it_does = """
        Checks for any construct of HTD101-HTD105 and HTD107 (`torch.tensor(..., device=...)`,
        `torch.as_tensor(..., device=...)`, `.to(device)` / `.cuda()` of a fresh host tensor, `x.new_tensor(...)`
        on a device, `buf.copy_(...)` of a fresh host tensor into a device buffer) that
        runs under CUDA-graph capture: inside a `with torch.cuda.graph(...)` block, or in a function of the
        same module that such a block calls, directly or through other calls.

        Such sites are reported here, whether or not the code is hot, and never by the other rules, whose
        fixes would be wrong under capture. There is no automatic fix.
        """
    why_bad = """
        A blocking copy synchronises the stream, which is illegal while it is being captured: capture fails
        with "operation not permitted when stream is capturing". A `non_blocking` copy from pinned memory is
        captured instead, and every replay then reads the same host address, which the graph does not own:
        the caching allocator may have reused it, so replays silently read stale or foreign data.

        Copy the per-replay data into a static device buffer before each replay, outside the captured region,
        and let the graph read that buffer.
        """
    example = """
        def capture(self, graph, bs):
            with torch.cuda.graph(graph):
                positions = torch.tensor(list(range(bs)), device=self.device)
                self.out = self.model(self.input_ids[:bs], positions)
        """
    use_instead = """
        def capture(self, graph, bs):
            self.positions[:bs].copy_(torch.arange(bs, device=self.device))  # static buffer, filled before capture
            with torch.cuda.graph(graph):
                self.out = self.model(self.input_ids[:bs], self.positions[:bs])
        """

    VALID = (
        Valid(
            "import torch\n\ndef capture(g, dev):\n    ids = torch.tensor([0], device=dev)\n"
            "    with torch.cuda.graph(g):\n        out = model(ids)\n"
        ),
        Valid(
            "import torch\n\ndef forward(ids, dev):  # 'graph' in a comment only\n"
            "    return torch.tensor(ids, device=dev)\n"
        ),
        Valid(
            "import torch\n\ndef capture(g, dev, x):\n    with torch.cuda.graph(g):\n        out = x.to(dev)\n"
        ),
        Valid(
            "import torch\n\ndef helper(dev):\n    return torch.tensor([1], device=dev)\n\n"
            "def capture(g, dev):\n    helper(dev)\n    with torch.cuda.graph(g):\n        pass\n"
        ),
    )
    INVALID = (
        Invalid(
            "import torch\n\ndef capture(g, dev, ids):\n    buf = torch.zeros(8, device=dev)\n"
            "    with torch.cuda.graph(g):\n        buf.copy_(torch.tensor(ids))\n",
            line=6,
            reason="HTD107",
        ),
        Invalid(
            "import torch\n\ndef capture(g, dev, bs):\n    with torch.cuda.graph(g):\n"
            "        pos = torch.tensor(list(range(bs)), device=dev)\n",
            line=5,
            column=15,
            reason="inside `with torch.cuda.graph(...)` at line 4",
        ),
        Invalid(
            "import torch\n\nclass Runner:\n    def run_once(self, ids):\n"
            "        return torch.tensor(ids).to(self.device)\n\n"
            "    def capture_one(self, g, ids):\n        with torch.cuda.graph(g):\n            self.run_once(ids)\n",
            line=5,
            reason="`Runner.run_once` is called inside `with torch.cuda.graph(...)` at line 8 of `Runner.capture_one`",
        ),
        Invalid(
            "import torch\nfrom torch.cuda import graph\n\ndef step(g, ids, dev):\n    with graph(g):\n"
            "        return torch.as_tensor(ids, device=dev)\n",
            line=6,
        ),
    )

    def __init__(self, settings: Optional[Settings] = None) -> None:
        super().__init__(settings)
        self._copy_rules = [rule(self.settings) for rule in COPY_RULES]

    @classmethod
    def report_reason(cls, site: Site, owner: Optional[Heat], module: str = "") -> Optional[str]:
        """Under capture, whatever the heat: capture fails or reads stale memory even in one-time code."""
        return site.capture

    @classmethod
    def unreported_reason(cls, site: Site, owner: Optional[Heat]) -> str:
        return "it does not run under CUDA-graph capture"

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        for rule in self._copy_rules:
            found = rule.check_call(call, context)
            if found is not None:
                return Match(
                    node=found.node,
                    problem=f"a host-to-device copy ({rule.code} {rule.name}) runs under CUDA-graph capture, where"
                    " it fails or is captured reading host memory the graph does not own",
                    remedy="Copy the data into a static device buffer before capture and replay, outside the"
                    " captured region",
                )
        return None

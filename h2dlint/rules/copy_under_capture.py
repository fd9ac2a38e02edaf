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
_NOT_CHECKED = object()  # a copy rule with no verdict in `Context.call_matches` at this call


class CopyUnderCapture(Rule):
    code = "HTD106"
    name = "copy-under-graph-capture"
    summary = "A host-to-device copy inside `torch.cuda.graph(...)` capture: an error, or a silently wrong graph."
    triggers = (("graph",),)
    reuses_call_matches = True

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

    fix_availability = "never"
    fix_safety = """
        There is no automatic fix, and the other rules' fixes are never applied under capture: a pinned `non_blocking`
        copy would be captured reading host memory the graph does not own, which is silently wrong on replay. Move the
        copy out of the captured region into a static buffer by hand.
        """
    known_problems = """
        Only `with torch.cuda.graph(...)` blocks count as capture, and only calls to functions of the same module are
        followed from them: code captured through `torch.cuda.make_graphed_callables`, `CUDAGraph.capture_begin()`, an
        engine's own capture wrapper or a function in another module is not recognised. It finds the constructs
        HTD101-HTD105 and HTD107 find, with their blind spots.
        """
    options = ("accelerator-tensors",)
    references = ("cuda-graphs", "cuda-sync")

    VALID = (
        Valid("""
            import torch

            def capture(g, dev):
                ids = torch.tensor([0], device=dev)
                with torch.cuda.graph(g):
                    out = model(ids)
            """),
        Valid("""
            import torch

            def forward(ids, dev):  # 'graph' in a comment only
                return torch.tensor(ids, device=dev)
            """),
        Valid("""
            import torch

            def capture(g, dev, x):
                with torch.cuda.graph(g):
                    out = x.to(dev)
            """),
        Valid("""
            import torch

            def helper(dev):
                return torch.tensor([1], device=dev)

            def capture(g, dev):
                helper(dev)
                with torch.cuda.graph(g):
                    pass
            """),
    )
    INVALID = (
        Invalid(
            """
            import torch

            def capture(g, dev, ids):
                buf = torch.zeros(8, device=dev)
                with torch.cuda.graph(g):
                    buf.copy_(torch.tensor(ids))  # HTD106
            """,
            reason="HTD107",
        ),
        Invalid(
            """
            import torch

            def capture(g, dev, bs):
                with torch.cuda.graph(g):
                    pos = torch.tensor(list(range(bs)), device=dev)  # HTD106
            """,
            column=15,
            reason="inside `with torch.cuda.graph(...)` at line 4",
        ),
        Invalid(
            """
            import torch

            class Runner:
                def run_once(self, ids):
                    return torch.tensor(ids).to(self.device)  # HTD106

                def capture_one(self, g, ids):
                    with torch.cuda.graph(g):
                        self.run_once(ids)
            """,
            reason="`Runner.run_once` is called inside `with torch.cuda.graph(...)` at line 8 of `Runner.capture_one`",
        ),
        Invalid(
            """
            import torch
            from torch.cuda import graph

            def step(g, ids, dev):
                with graph(g):
                    return torch.as_tensor(ids, device=dev)  # HTD106
            """,
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
            known = context.call_matches.get(rule.code, _NOT_CHECKED)  # the rule's own verdict, when it ran first
            found = rule.check_call(call, context) if known is _NOT_CHECKED else known
            if found is not None:
                return Match(
                    node=found.node,
                    problem=f"a host-to-device copy ({rule.code} {rule.name}) runs under CUDA-graph capture, where"
                    " it fails or is captured reading host memory the graph does not own",
                    remedy="Copy the data into a static device buffer before capture and replay, outside the"
                    " captured region",
                )
        return None

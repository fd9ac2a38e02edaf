"""A list filled item by item (`parts.append(x)`, `rows[i] = x`) and joined (`torch.cat(parts)`): PyTorch joins
only tensors of one device, so each item whose placement is known tells where all of them are, as for a list
written out. An item bound in branches (`if mm is None: pos = torch.full(...)` / `else: pos = mm.positions`) takes
one branch for one item and another for the next: each branch is an item of its own (sglang's mrope positions,
copied per decode step from pageable memory)."""

from __future__ import annotations

import textwrap

from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source


def findings(source):
    found = check_source(textwrap.dedent(source), Settings(select=("HTD1", "HTD2")))
    return [(d.code, d.span.row) for d in found]


def test_a_branch_that_builds_on_the_host_places_every_item_of_the_join():
    source = """
        import torch

        def forward(mm_inputs, seq_lens, dev, expand):
            rows = [None] * len(mm_inputs)
            for i, mm in enumerate(mm_inputs):
                if mm is None:
                    pos = torch.full((3, 1), seq_lens[i] - 1)
                else:
                    pos = expand(mm, seq_lens[i])
                rows[i] = pos
            return torch.cat(rows, dim=1).to(dev, non_blocking=True)
    """
    assert findings(source) == [("HTD104", 12)]


def test_an_appended_item_known_on_the_host_places_the_others():
    source = """
        import numpy as np
        import torch

        def forward(items, dev):
            parts = []
            for item in items:
                pv = item.feature
                if isinstance(pv, np.ndarray):
                    pv = torch.from_numpy(pv)
                parts.append(pv)
            shapes = []
            for item in items:
                shapes.append(item.shape)
            pixels = torch.cat(parts)
            return pixels.to(dev), pixels.cpu(), torch.cat(shapes).cpu()
    """
    # `pixels` is on the host: its copy to the device blocks, and `.cpu()` of it waits for nothing
    assert findings(source) == [("HTD103", 16)]


def test_branches_that_disagree_or_say_nothing_place_nothing():
    source = """
        import torch

        def forward(items, dev):
            rows = []
            for item in items:
                if item.on_host:
                    t = torch.zeros(4)
                else:
                    t = torch.zeros(4, device=dev)
                rows.append(t)
            unknown = []
            for item in items:
                u = item.a if item.flag else item.b
                unknown.append(u)
            return torch.cat(rows).to(dev), torch.cat(unknown).to(dev), torch.cat(unknown).tolist()
    """
    assert findings(source) == []

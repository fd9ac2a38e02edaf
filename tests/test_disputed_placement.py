"""Evidence that disagrees gives unknown, and so does what is computed from it: a name convention (a
`<name>_cpu` sibling makes `<name>` the device copy) does not overrule it further down the chain."""

from __future__ import annotations

import textwrap

from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source

SOURCE = """
import torch

def forward_step(buffers, prefix_lens_cpu, n):
    prefix_lens = torch.tensor(prefix_lens_cpu, dtype=torch.int32)
    seq_lens = (prefix_lens - buffers.starts_cpu[:n]).clamp(min=0)
    buffers.seq_lens_cpu[:n].copy_(seq_lens)
    return seq_lens.tolist()


def forward_pick(buffers, ids_cpu, c):
    ids = ids_cpu if c else ids_cpu.cuda()
    buffers.ids_cpu.copy_(ids)
    return ids.tolist()


def forward_plain(buffers, lens):
    seq_lens = lens + 1
    buffers.seq_lens_cpu.copy_(lens)
    return seq_lens.tolist()
"""


def findings():
    found = check_source(textwrap.dedent(SOURCE), Settings(select=("HTD2",)))
    return [(d.code, d.span.row) for d in found]


def row(text, nth=0):
    """The line of the `nth` occurrence of `text`."""
    lines = textwrap.dedent(SOURCE).splitlines()
    return [i for i, line in enumerate(lines) if line == text][nth] + 1


def test_a_tensor_computed_from_disputed_evidence_is_not_placed_by_its_name():
    assert ("HTD201", row("    return seq_lens.tolist()", 0)) not in findings()


def test_alternatives_that_disagree_are_not_placed_by_a_name():
    assert ("HTD201", row("    return ids.tolist()")) not in findings()


def test_a_name_with_no_evidence_against_it_still_decides():
    assert findings() == [("HTD201", row("    return seq_lens.tolist()", 1))]

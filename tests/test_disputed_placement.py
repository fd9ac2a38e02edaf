"""Evidence that disagrees gives unknown, and so does what is computed from it: a name convention (a
`<name>_cpu` sibling makes `<name>` the device copy) does not overrule it further down the chain. The
sibling convention only guesses where nothing else tells: a tensor built on the host in sight is on the host."""

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


BUILT_BESIDE_ITS_MIRROR = """
import torch

def forward_layout(spec, bs, idx, verify):
    if verify:
        lens = torch.full((bs,), 3, dtype=torch.int32)
    else:
        lens_cpu = getattr(spec, "lens_cpu", None)
        if lens_cpu is not None:
            lens = torch.as_tensor(lens_cpu[:bs], dtype=torch.int32)
            if lens.numel() < bs:
                lens = torch.cat([lens, torch.zeros(bs - lens.numel(), dtype=torch.int32)])
        else:
            lens = torch.full((bs,), 2, dtype=torch.int32)
    return lens.to(idx.device)


def forward_guess(lens, lens_cpu, dev):
    on_device = lens.to(dev)
    return on_device, lens_cpu.to(dev)
"""


def test_a_tensor_built_on_the_host_is_on_the_host_though_a_mirror_sibling_is_in_sight():
    found = check_source(textwrap.dedent(BUILT_BESIDE_ITS_MIRROR), Settings(select=("HTD1",)))
    lines = textwrap.dedent(BUILT_BESIDE_ITS_MIRROR).splitlines()
    rows = {d.span.row: d.code for d in found}
    assert rows.get(lines.index("    return lens.to(idx.device)") + 1) == "HTD103"  # four bindings, all on the host
    # With nothing built in sight the sibling still decides: `lens` is the device copy, `lens_cpu` the host data.
    assert lines.index("    on_device = lens.to(dev)") + 1 not in rows
    assert rows.get(lines.index("    return on_device, lens_cpu.to(dev)") + 1) == "HTD103"

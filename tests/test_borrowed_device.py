"""A tensor built with another's device (`device=ids.device`) lives where that tensor does: on a device that may
be the CPU when that tensor was built so, and on the accelerator when it is known to be there."""

from __future__ import annotations

import json

from conftest import write

SOURCE = """\
import torch


class Buffers:
    def __init__(self, n, use_gpu):
        device = "cpu"
        if use_gpu:
            device = "cuda"
        self.room = torch.zeros((n,), device=device)
        self.checksum = torch.zeros((n, 8), device=self.room.device)
        self.lens = torch.zeros((n,), device="cuda")
        self.counts = torch.zeros((n,), device=self.lens.device)

    def forward_step(self, idx):
        return self.checksum[idx].tolist(), self.counts[idx].tolist()
"""


def test_a_device_borrowed_from_a_tensor_that_may_be_on_the_cpu_says_nothing(tmp_path, run_cli):
    write(tmp_path, "buffers.py", SOURCE)
    code, out, err = run_cli("check", "--select", "HTD2", "--output-format", "json", "--no-cache", "buffers.py",
                             cwd=tmp_path)
    assert code == 1, err
    found = [(d["location"]["row"], d["location"]["column"], d["code"]) for d in json.loads(out)]
    row = SOURCE.splitlines().index("        return self.checksum[idx].tolist(), self.counts[idx].tolist()") + 1
    column = SOURCE.splitlines()[row - 1].index("self.counts") + 1
    assert found == [(row, column, "HTD201")]  # `counts` is where `lens` is; `checksum` may be on the CPU

"""benchmarks/level_claims.py: the level each finding claims, against the blind label of its line."""

from __future__ import annotations

from conftest import ROOT, run_benchmark, write

SCRIPT = ROOT / "benchmarks" / "level_claims.py"

ENGINE = """
import torch

class SiglipVisionModel:
    def forward(self, grid, dev):
        return torch.tensor(grid, device=dev)

def forward(ids, dev):
    return torch.tensor(ids, device=dev)

def decode_step(ids, dev):
    return torch.tensor(ids, device=dev)
"""


def test_it_counts_truthful_over_and_under_claimed_levels(tmp_path):
    tree = tmp_path / "engine"
    write(tree, "model.py", ENGINE)
    first = write(
        tmp_path,
        "first.tsv",
        "# engine\tpath:line\tlabel\tnote\n"
        "eng\tmodel.py:6\tper-request\tencoder: claimed per request, truthful\n"
        "eng\tmodel.py:9\tper-request\tclaimed per step: over-claimed\n"
        "eng\tmodel.py:12\tone-time\tnot judged here\n",
    )
    second = write(tmp_path, "second.tsv", "eng\tmodel.py:9\tper-step\tthe first file wins\n")
    stdout = run_benchmark(SCRIPT, f"eng={tree}", "--labels", str(first), "--labels", str(second))
    assert "## eng\n  HTD1: labelled hot findings 2, truthful 1 (50%), over-claimed (per step, runs per request) 1, " \
        "under-claimed (per request, runs per step) 0" in stdout

"""On CUDA, `h2dlint check --fix` removes the reference's per-step syncs and pageable copies, and nothing else.

A copy of fixtures/reference/ is fixed with the real command line. Each copy is probed in its own process (the
reference modules import each other by plain name): one decode step's `prepare_for_decode` is run while every
host-to-device `Tensor.to` is recorded (pinned or pageable source), and one under
`torch.cuda.set_sync_debug_mode("error")`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import PYTHON, REFERENCE
from test_reference import _digest, _fixed_copy

pytestmark = pytest.mark.cuda
TESTS = Path(__file__).resolve().parent

PROBE = r"""
import json
import sys

import torch

sys.path.append(sys.argv[1])  # the tests folder, for cuda_sync
from cuda_sync import first_sync_error
from model import TinyModel
from run_decode import forward_and_sample, make_reqs
from schedule_batch import ScheduleBatch

device = torch.device("cuda")
original_to = torch.Tensor.to


def host_to_device_sources(call):
    sources = []

    def recording_to(self, *args, **kwargs):
        result = original_to(self, *args, **kwargs)
        if self.device.type == "cpu" and result.device.type == "cuda":
            sources.append("pinned" if self.is_pinned() else "pageable")
        return result

    torch.Tensor.to = recording_to
    try:
        call()
    finally:
        torch.Tensor.to = original_to
    return sources


def probe(speculative, offset):
    model = TinyModel(device, seed=0)
    reqs = make_reqs(4, offset, model.vocab_size)
    batch = ScheduleBatch.init_new(reqs, device, model.vocab_size, speculative)
    orchestrator = batch.sampling_info.penalizer_orchestrator
    prefill_ids = torch.tensor([r.origin_input_ids[-1] for r in reqs], dtype=torch.int64)
    batch.prepare_for_extend(prefill_ids.to(device))
    forward_and_sample(model, batch, orchestrator)
    sources = host_to_device_sources(batch.prepare_for_decode)
    forward_and_sample(model, batch, orchestrator)
    # Last: the original raises half-way through the step.
    return {"sources": sources, "sync_error": first_sync_error(batch.prepare_for_decode)}


print(json.dumps({"normal": probe(False, 0), "eagle": probe(True, 11)}))
"""


@pytest.fixture(scope="module")
def fixed_reference(tmp_path_factory):
    """A copy of the reference after `h2dlint check --fix` (which leaves nothing unfixed)."""
    copy, _ = _fixed_copy(tmp_path_factory.mktemp("reference"))
    return copy


def _probe(folder):
    done = subprocess.run([PYTHON, "-c", PROBE, str(TESTS)], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def probes(fixed_reference):
    return {"original": _probe(REFERENCE), "fixed": _probe(fixed_reference)}


def test_the_fixed_prepare_for_decode_makes_no_sync_where_the_original_does(probes):
    # The HTD101 site: torch.tensor(..., device=cuda) ends in cudaStreamSynchronize. (Sync debug mode cannot
    # see the HTD104 site's pageable copy; the next test covers that one.)
    assert probes["original"]["eagle"]["sync_error"] is not None
    assert probes["fixed"]["eagle"]["sync_error"] is None
    assert probes["fixed"]["normal"]["sync_error"] is None


def test_the_fixed_prepare_for_decode_copies_from_pinned_memory(probes):
    # The HTD104 site: non_blocking=True from pageable memory, so non_blocking has no effect.
    assert probes["original"]["normal"]["sources"] == ["pageable"]
    assert probes["fixed"]["normal"]["sources"] == ["pinned"]
    assert probes["fixed"]["eagle"]["sources"] == ["pinned"]


def test_the_fixed_reference_prints_the_same_digest_on_cuda(fixed_reference):
    for steps in ("24", "3"):
        expected = _digest(REFERENCE, "--device", "cuda", "--steps", steps)
        assert _digest(fixed_reference, "--device", "cuda", "--steps", steps) == expected

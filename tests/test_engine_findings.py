"""benchmarks/engine_findings.py: recall (exact from a census, or estimated with an interval from a sample), and
the by-design exclusions."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from conftest import PYTHON, ROOT, write

SCRIPT = ROOT / "benchmarks" / "engine_findings.py"

ENGINE = """
    import torch

    class Model:
        def __init__(self, dev):
            self.table = torch.tensor([1, 2], device=dev)

        def forward(self, ids, dev):
            return torch.tensor(ids, device=dev)

        def rescale(self, x, n):
            return x.new_tensor([n])

        def load_weights(self, w, dev):
            return torch.tensor(w, device=dev)

        def forward_legacy(self, ids, dev):
            return torch.tensor(ids, device=dev)
"""
LABELS = """\
toy\tmodel.py:9\tper-step\tflagged
toy\tmodel.py:6\tper-request\tconstructor
toy\tmodel.py:12\tper-step\tnew_tensor on an unknown receiver
toy\tmodel.py:15\tone-time\tloading
toy\tmodel.py:18\tnever-runs\tno caller
"""


def _estimates(tmp_path, labels=LABELS):
    write(tmp_path / "tree", "model.py", ENGINE)
    (tmp_path / "labels.tsv").write_text(labels, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [PYTHON, str(SCRIPT), f"toy={tmp_path / 'tree'}", "--labels", str(tmp_path / "labels.tsv")],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if "recall" in line or "share" in line]


def test_precision_separates_setup_code_from_code_that_never_runs(tmp_path):
    # Two findings: forward (per-step) and forward_legacy (never-runs).
    share = _estimates(tmp_path)[0]
    assert share == (
        "  one-time share of findings: 0.0% (setup code); never-runs 50.0%; "
        "not hot at all (one-time, never-runs, not-h2d): 50.0%"
    )


def test_a_census_gives_exact_recall_and_a_figure_without_the_by_design_exclusions(tmp_path):
    _, overall, by_design = _estimates(tmp_path)
    # Every site labelled. One flagged hot site; three unflagged, two of them hot: recall 1 / (1 + 2).
    assert overall == "  recall: 33.3%, exact: every site labelled (hot sites: flagged 1, missed 2)"
    # Left out: the constructor and the new_tensor on an unknown receiver; the one-time site remains.
    assert "(2 unflagged sites:" in by_design and ": 100.0%, exact: every site labelled" in by_design


def test_a_sample_gives_an_estimate_with_an_interval(tmp_path):
    # The one-time unflagged site is left unlabelled: two of the two labelled unflagged sites are hot, so the
    # three unflagged sites hold about 3 hot ones, and recall is about 1 / (1 + 3).
    overall = _estimates(tmp_path, LABELS.replace("toy\tmodel.py:15\tone-time\tloading\n", ""))[1]
    assert overall.startswith("  estimated recall: 25.0%, 95% Wilson interval ")
    low, high = (float(x) for x in re.findall(r"interval (\S+)% to (\S+)%", overall)[0])
    # All labelled unflagged sites are hot, so the rate's upper bound is 1 and the low end is the estimate itself.
    assert low == 25.0 < high


def test_the_wilson_interval_matches_its_closed_form_at_zero_successes():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import engine_findings
    finally:
        sys.path.remove(str(SCRIPT.parent))
    low, high = engine_findings._wilson(0, 10)
    assert low == 0.0 and abs(high - 1.96**2 / (10 + 1.96**2)) < 1e-12

"""benchmarks/engine_findings.py: the recall estimate, its interval, and the by-design exclusions."""

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
"""
LABELS = """\
toy\tmodel.py:9\tper-step\tflagged
toy\tmodel.py:6\tper-request\tconstructor
toy\tmodel.py:12\tper-step\tnew_tensor on an unknown receiver
toy\tmodel.py:15\tone-time\tloading
"""


def _estimates(tmp_path):
    write(tmp_path / "tree", "model.py", ENGINE)
    (tmp_path / "labels.tsv").write_text(LABELS, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [PYTHON, str(SCRIPT), f"toy={tmp_path / 'tree'}", "--labels", str(tmp_path / "labels.tsv")],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if "estimated recall" in line]


def test_recall_has_an_interval_and_a_figure_without_the_by_design_exclusions(tmp_path):
    overall, by_design = _estimates(tmp_path)
    # One flagged hot site; three unflagged, two of them hot: recall 1 / (1 + 2).
    assert overall.startswith("  estimated recall: 33.3%, 95% Wilson interval ")
    low, high = (float(x) for x in re.findall(r"interval (\S+)% to (\S+)%", overall)[0])
    assert low < 33.3 < high
    # Left out: the constructor and the new_tensor on an unknown receiver; the one-time site remains.
    assert "(2 unflagged sites:" in by_design and ": 100.0%, 95% Wilson interval" in by_design


def test_the_wilson_interval_matches_its_closed_form_at_zero_successes():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import engine_findings
    finally:
        sys.path.remove(str(SCRIPT.parent))
    low, high = engine_findings._wilson(0, 10)
    assert low == 0.0 and abs(high - 1.96**2 / (10 + 1.96**2)) < 1e-12

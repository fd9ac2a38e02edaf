"""benchmarks/reference_cuda.py runs end to end where CUDA is absent (--dry-run) and refuses to time without it."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import PYTHON, ROOT, cuda_available

SCRIPT = ROOT / "benchmarks" / "reference_cuda.py"


def _run(*args):
    return subprocess.run([PYTHON, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(cuda_available(), reason="CUDA is present")
def test_without_cuda_it_exits_2_with_one_line():
    done = _run()
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert "CUDA is not available" in done.stderr and "--dry-run" in done.stderr


def test_a_dry_run_fixes_the_reference_and_measures_both_decode_paths(tmp_path):
    report = tmp_path / "report.json"
    done = _run("--device", "cpu", "--dry-run", "--steps", "2", "--batch-sizes", "2", "--json", str(report))
    assert done.returncode == 0, done.stderr
    assert "the fixed copy has no findings left" in done.stderr
    rows = json.loads(report.read_text())["rows"]
    assert sorted((row["path"], row["batch_size"]) for row in rows) == [("eagle", 2), ("normal", 2)]
    for row in rows:
        for variant in ("original", "fixed"):
            assert row[variant]["overlapped_step_ms"] > 0
            assert row[variant]["syncs_debug_mode"] is None  # no sync debug mode without CUDA
    assert done.stdout.count("overlapped decode step ms") == len(rows)

"""The bundled miniature of sglang's decode path: exactly the two seed sites, and a stable digest."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess

import pytest
from conftest import PYTHON, REFERENCE

from h2dlint.checker.analyzer import enabled_rules
from h2dlint.checker.collector import summarize
from h2dlint.facts.positions import source_lines
from h2dlint.facts.settings import Settings
from h2dlint.project.files import discover
from h2dlint.project.findings import check_file


def _line_of(filename, needle):
    lines = (REFERENCE / filename).read_text(encoding="utf-8").splitlines()
    [row] = [i for i, line in enumerate(lines, 1) if needle in line]
    return row


def _reference_findings():
    settings = Settings()
    results = [check_file(c.path, settings) for c in discover([str(REFERENCE)])]
    assert all(r.error is None for r in results)
    return [(r.path.rsplit("/", 1)[-1], d) for r in results for d in r.diagnostics]


def test_reports_exactly_the_two_seed_sites_with_their_reasons():
    found = {(name, d.span.row, d.code): d.message for name, d in _reference_findings()}
    eagle = ("eagle_info.py", _line_of("eagle_info.py", "torch.tensor("), "HTD101")
    schedule = ("schedule_batch.py", _line_of("schedule_batch.py", "torch.tensor(last_tokens"), "HTD104")
    assert set(found) == {eagle, schedule}
    assert "`EagleDraftInput.prepare_for_decode` runs per step" in found[eagle]
    assert "`ScheduleBatch.prepare_for_decode` runs per step" in found[schedule]


def test_setup_code_matches_the_rules_but_is_not_reported():
    rules = enabled_rules(Settings())
    matched = []
    for path in sorted(REFERENCE.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        summary = summarize(ast.parse(text), source_lines(text), rules)
        matched += [(path.name, site.function) for site in summary.sites]
    cold = {function for _, function in matched} - {
        "EagleDraftInput.prepare_for_decode",
        "ScheduleBatch.prepare_for_decode",
    }
    # The reference really contains one-time H2D constructs, in these setup functions, and none is reported.
    assert {"TinyModel.__init__", "TinyModel.warmup", "TinyModel.load_weights"} <= cold
    assert len(_reference_findings()) == 2


def _digest(folder, *args):
    done = subprocess.run(
        [PYTHON, "run_decode.py", *args], cwd=folder, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"[0-9a-f]{64}", last), last
    return last


def test_run_decode_prints_the_same_digest_every_run(tmp_path):
    first = _digest(REFERENCE, "--device", "cpu", "--steps", "24")
    assert _digest(REFERENCE, "--device", "cpu", "--steps", "24") == first
    assert _digest(REFERENCE, "--device", "cpu", "--steps", "8") != first
    copy = tmp_path / "reference"
    shutil.copytree(REFERENCE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert _digest(copy, "--device", "cpu", "--steps", "24") == first


def test_run_decode_refuses_an_unavailable_device():
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is present")
    done = subprocess.run(
        [PYTHON, "run_decode.py", "--device", "cuda"], cwd=REFERENCE, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.cuda
def test_run_decode_on_cuda_is_deterministic():
    first = _digest(REFERENCE, "--device", "cuda", "--steps", "24")
    assert _digest(REFERENCE, "--device", "cuda", "--steps", "24") == first


def _fixed_copy(tmp_path):
    copy = tmp_path / "fixed"
    shutil.copytree(REFERENCE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([PYTHON, "-m", "h2dlint", "check", "--fix", "--unsafe-fixes", str(copy)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr  # nothing is left unfixed
    return copy, done.stdout


def test_fix_removes_every_finding_and_keeps_the_output(tmp_path):
    copy, report = _fixed_copy(tmp_path)
    assert "Found 2 findings (2 fixed, 0 remaining)." in report
    settings = Settings()
    assert [d for c in discover([str(copy)]) for d in check_file(c.path, settings).diagnostics] == []
    changed = {p.name for p in copy.glob("*.py") if p.read_bytes() != (REFERENCE / p.name).read_bytes()}
    assert changed == {"eagle_info.py", "schedule_batch.py"}
    for args in (("--steps", "24"), ("--steps", "5", "--batch-size", "3")):
        assert _digest(copy, "--device", "cpu", *args) == _digest(REFERENCE, "--device", "cpu", *args)


def test_a_second_fix_changes_nothing(tmp_path):
    copy, _ = _fixed_copy(tmp_path)
    once = {p.name: p.read_bytes() for p in copy.glob("*.py")}
    done = subprocess.run([PYTHON, "-m", "h2dlint", "check", "--diff", str(copy)], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "")
    subprocess.run([PYTHON, "-m", "h2dlint", "check", "--fix", "--unsafe-fixes", str(copy)], capture_output=True, check=True)
    assert {p.name: p.read_bytes() for p in copy.glob("*.py")} == once

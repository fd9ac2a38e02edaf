"""Runtime confirmation: sync records of a traced CUDA run confirm findings, and HTD301 reports the rest.

CPU tests feed synthetic records; the `cuda` test traces the reference on a GPU."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import PYTHON, REFERENCE, write

from h2dlint.facts.observations import digest
from h2dlint.trace_syncs import is_pageable_non_blocking

PROGRAM = """\
import torch


def decode_step(ids, dev, logits):
    batch = torch.tensor(ids, device=dev)
    chosen = logits.argmax(-1).tolist()
    return batch, chosen
"""


def synthetic_profile(folder, program, syncs):
    document = {
        "format": "h2dlint-trace", "version": 1, "root": str(folder),
        "files": {program.name: digest(program.read_bytes())},
        "functions": [[program.name, "decode_step", 4, 24]],
        "syncs": syncs,
    }
    return write(folder, "trace.json", json.dumps(document))


def test_syncs_confirm_a_finding_and_unexplained_ones_are_htd301(tmp_path, run_cli):
    program = write(tmp_path, "prog.py", PROGRAM)
    profile = synthetic_profile(tmp_path, program, [
        {"path": "prog.py", "line": 5, "kind": "sync", "count": 24, "stack": ["prog.py:5", "run.py:9"]},
        {"path": "prog.py", "line": 6, "kind": "sync", "count": 24, "stack": ["prog.py:6", "run.py:9"]},
    ])
    code, out, _ = run_cli("check", str(program), "--profile", str(profile), "--output-format", "json")
    found = {(e["code"], e["location"]["row"]): e for e in json.loads(out)}
    assert set(found) == {("HTD101", 5), ("HTD301", 6)} and code == 1
    assert "Confirmed (24 syncs observed in the traced run)" in found[("HTD101", 5)]["message"]
    assert found[("HTD101", 5)]["confirmed"] == 24
    assert "saw 24 synchronising CUDA calls at this line" in found[("HTD301", 6)]["message"]
    _, out, _ = run_cli("check", str(program), "--profile", str(profile), "--output-format", "sarif")
    assert "HTD301" in [rule["id"] for rule in json.loads(out)["runs"][0]["tool"]["driver"]["rules"]]
    _, out, _ = run_cli("check", str(program), "--profile", str(profile), "--ignore", "HTD301", "--output-format", "concise")
    assert "HTD301" not in out and "Confirmed" in out


SETUP_AND_DRIVER = """\
import torch


class Model:
    def __init__(self, dev):
        self.table = torch.randn(4, device=dev).tolist()

    def warmup(self, sizes):
        for size in sizes:
            torch.zeros(size).sum().item()


def decode_step(logits):
    return logits.argmax(-1).tolist()


def main(model, logits):
    first = logits.sum().item()
    for _ in range(30):
        logits.max().item()
    return first
"""


def test_htd301_stays_quiet_on_one_time_syncs_and_claims_what_the_run_showed(tmp_path, run_cli):
    program = write(tmp_path, "prog.py", SETUP_AND_DRIVER)
    document = {
        "format": "h2dlint-trace", "version": 1, "root": str(tmp_path),
        "files": {program.name: digest(program.read_bytes())},
        "functions": [["prog.py", "Model.__init__", 5, 1], ["prog.py", "Model.warmup", 8, 1],
                      ["prog.py", "decode_step", 13, 30], ["prog.py", "main", 17, 1]],
        "syncs": [{"path": "prog.py", "line": line, "kind": "sync", "count": count}
                  for line, count in ((6, 1), (10, 12), (14, 30), (18, 1), (20, 30))],
    }
    profile = write(tmp_path, "trace.json", json.dumps(document))
    _, out, _ = run_cli("check", str(program), "--profile", str(profile), "--output-format", "json")
    levels = {e["location"]["row"]: e["level"] for e in json.loads(out) if e["code"] == "HTD301"}
    # the constructor and the warmup (cold by name, whatever its loop) are one-time; `main` ran once, so only
    # its loop repeats, at a frequency the run alone tells
    assert levels == {14: "per-step", 20: "observed-hot"}
    _, out, _ = run_cli("check", str(program), "--profile", str(profile), "--min-level", "per-step",
                        "--output-format", "json")
    assert {e["location"]["row"] for e in json.loads(out) if e["code"] == "HTD301"} == {14}


def test_without_a_profile_nothing_is_confirmed_and_htd301_never_fires(tmp_path, run_cli):
    program = write(tmp_path, "prog.py", PROGRAM)
    _, out, _ = run_cli("check", str(program), "--output-format", "json")
    assert [(e["code"], e["confirmed"]) for e in json.loads(out)] == [("HTD101", None)]


def test_a_changed_file_takes_no_sync_records(tmp_path, run_cli):
    program = write(tmp_path, "prog.py", PROGRAM)
    profile = synthetic_profile(tmp_path, program, [{"path": "prog.py", "line": 6, "kind": "sync", "count": 3}])
    program.write_text(PROGRAM + "# edited\n")
    _, out, _ = run_cli("check", str(program), "--profile", str(profile), "--output-format", "concise")
    assert "HTD301" not in out and "Confirmed" not in out


@pytest.mark.parametrize(
    "source, pinned, target, non_blocking, expected",
    [("cpu", False, "cuda", True, True), ("cpu", True, "cuda", True, False), ("cpu", False, "cuda", False, False),
     ("cuda", False, "cuda", True, False), ("cpu", False, "cpu", True, False)],
)
def test_the_pageable_copy_predicate(source, pinned, target, non_blocking, expected):
    assert is_pageable_non_blocking(source, pinned, target, non_blocking) is expected


@pytest.mark.cuda
def test_a_cuda_trace_of_the_reference_confirms_both_seeds(tmp_path, run_cli):
    folder = tmp_path / "reference"
    shutil.copytree(REFERENCE, folder)
    profile = folder / "trace.json"
    command = ("trace", "--root", str(folder), "-o", str(profile), "--", PYTHON, "run_decode.py", "--device", "cuda",
               "--steps", "24")
    code, _, err = run_cli(*command, cwd=folder)
    assert code == 0, err
    _, out, _ = run_cli("check", str(folder), "--profile", str(profile), "--output-format", "json", "--no-cache")
    confirmed = {f"{e['filename'].rsplit('/', 1)[1]}:{e['location']['row']}": e["confirmed"] for e in json.loads(out)}
    assert confirmed.get("eagle_info.py:19") and confirmed.get("schedule_batch.py:58")

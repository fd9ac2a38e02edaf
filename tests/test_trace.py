"""`h2dlint trace` and `check --profile`: heat observed in a real run decides the functions it reached."""

from __future__ import annotations

import cProfile
import glob
import json
import os
import shutil
import subprocess

import pytest
from conftest import PYTHON, REFERENCE, write

from h2dlint.facts.settings import Settings
from h2dlint.project.one_file import project_of, shared_index

# A per-step site hidden behind a dispatch the static model cannot follow, and a per-step name that runs once.
PROGRAM = """\
import torch


class Server:
    def serve(self, kinds, dev):
        for kind in kinds:
            getattr(self, "handle_" + kind)([1, 2], dev)

    def handle_pack(self, ids, dev):
        return _pack(ids, dev)


def _pack(ids, dev):
    return torch.tensor(ids, device=dev)


def decode_step(ids, dev):
    return torch.tensor(ids, device=dev)


def main():
    decode_step([0], "cpu")
    Server().serve(["pack"] * 30, "cpu")


if __name__ == "__main__":
    main()
"""


# The traced programs need not run real torch (importing it costs seconds); the analysis only reads them.
FAKE_TORCH = "def tensor(data, **options):\n    return data\n"


def trace(run_cli, folder, *command):
    if not (folder / "torch.py").exists() and "run_decode.py" not in command:
        write(folder, "torch.py", FAKE_TORCH)
    out = folder / "trace.json"
    code, _, err = run_cli("trace", "-o", str(out), "--root", str(folder), "--", *command, cwd=folder)
    assert code == 0, err
    return out


def rows(out):
    return {int(line.split(":")[1]): line for line in out.splitlines() if ": HTD" in line}


def test_a_traced_run_reports_what_a_dispatch_hides_and_drops_a_per_step_name_that_ran_once(tmp_path, run_cli):
    program = write(tmp_path, "prog.py", PROGRAM)
    _, static, _ = run_cli("check", str(program), "--output-format", "concise")
    assert set(rows(static)) == {18}  # decode_step by its name; _pack is out of sight
    profile = trace(run_cli, tmp_path, PYTHON, "prog.py")
    code, out, err = run_cli("check", str(program), "--profile", str(profile), "--output-format", "concise")
    assert (code, err) == (1, "")
    found = rows(out)
    assert set(found) == {14}
    assert "`_pack` ran 30 times in the traced run" in found[14]


def test_the_trace_keys_functions_by_path_qualname_line_and_file_hash(tmp_path, run_cli):
    write(tmp_path, "prog.py", PROGRAM)
    document = json.loads(trace(run_cli, tmp_path, PYTHON, "prog.py").read_text())
    assert document["format"] == "h2dlint-trace" and document["root"] == str(tmp_path)
    counts = {(path, qualname): (line, calls) for path, qualname, line, calls, *_ in document["functions"]}
    assert counts[("prog.py", "Server.handle_pack")] == (9, 30)
    assert counts[("prog.py", "decode_step")] == (17, 1)
    assert set(document["files"]) == {"prog.py", "torch.py"} and len(document["files"]["prog.py"]) == 32


def test_python_m_and_child_processes_are_traced(tmp_path, run_cli):
    write(tmp_path, "prog.py", PROGRAM)
    write(tmp_path, "parent.py", f"import subprocess\nsubprocess.run([{PYTHON!r}, '-m', 'prog'], check=True)\n")
    document = json.loads(trace(run_cli, tmp_path, PYTHON, "parent.py").read_text())
    counts = {qualname: calls for _, qualname, _, calls, *_ in document["functions"]}
    assert counts["_pack"] == 30  # counted in the child, `python -m prog`


def test_a_file_changed_since_the_trace_keeps_the_static_model_with_one_note(tmp_path, run_cli):
    program = write(tmp_path, "prog.py", PROGRAM)
    profile = trace(run_cli, tmp_path, PYTHON, "prog.py")
    program.write_text(PROGRAM + "\n# edited\n")
    _, out, err = run_cli("check", str(program), "--profile", str(profile), "--output-format", "concise")
    assert set(rows(out)) == {18}
    assert err.count("\n") == 1 and "changed since" in err and "prog.py" in err and "static model" in err


def test_the_level_of_observed_code_comes_from_its_ratio_to_the_steps(tmp_path, run_cli):
    source = """\
    import torch

    def forward(x, dev):
        return x

    def admit(ids, dev):
        return torch.tensor(ids, device=dev)

    def pack(ids, dev):
        return torch.tensor(ids, device=dev)

    for request in range(4):
        admit([request], "cpu")
        for step in range(40):
            forward(step, "cpu")
            pack([step], "cpu")
    """
    program = write(tmp_path, "serve.py", source)
    profile = trace(run_cli, tmp_path, PYTHON, "serve.py")
    write(tmp_path, "pyproject.toml", f'[tool.h2dlint]\nprofile = "{profile.name}"\nprofile-min-calls = 4\n')
    _, out, _ = run_cli("check", str(program), "--output-format", "json")
    levels = {e["location"]["row"]: (e["level"], e["message"]) for e in json.loads(out)}
    assert levels[7][0] == "per-request" and "`admit` ran 4 times in the traced run" in levels[7][1]
    assert levels[10][0] == "per-step" and "`pack` ran 160 times" in levels[10][1]


def test_without_a_per_step_root_observed_code_is_observed_hot(tmp_path, run_cli):
    source = "import sys\nimport torch\n\ndef pack(i, dev):\n    return torch.tensor([i], device=dev)\n\n"
    loop = "for i in range(10):\n    getattr(sys.modules[__name__], 'pack')(i, 'cuda')\n"
    program = write(tmp_path, "job.py", source + loop)
    profile = trace(run_cli, tmp_path, PYTHON, "job.py")
    _, out, _ = run_cli("check", str(program), "--profile", str(profile), "--output-format", "json")
    (entry,) = json.loads(out)
    assert entry["level"] == "observed-hot" and "`pack` ran 10 times" in entry["message"]


def test_a_cprofile_file_converts(tmp_path, run_cli):
    program = write(tmp_path, "prog.py", PROGRAM)
    stats = tmp_path / "prof.pstats"
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        namespace: dict = {"__name__": "prog_under_profile"}
        code = compile(program.read_text(), str(program), "exec")
        profiler = cProfile.Profile()
        profiler.runctx("exec(code, namespace); namespace['main']()", {"code": code, "namespace": namespace}, {})
        profiler.dump_stats(str(stats))
    finally:
        os.chdir(old)
    out = tmp_path / "trace.json"
    code, _, err = run_cli("trace", "--import", str(stats), "-o", str(out), "--root", str(tmp_path))
    assert code == 0, err
    _, found, _ = run_cli("check", str(program), "--profile", str(out), "--output-format", "concise")
    assert set(rows(found)) == {14}  # matched by name and first line: cProfile has no qualname


def test_flake8_and_explain_use_the_profile_of_the_configuration(tmp_path, run_cli):
    program = write(tmp_path, "prog.py", PROGRAM)
    profile = trace(run_cli, tmp_path, PYTHON, "prog.py")
    write(tmp_path, "pyproject.toml", f'[tool.h2dlint]\nprofile = "{profile.name}"\n')
    from h2dlint.project.config import settings_for_path

    settings = settings_for_path(str(program))
    # What the flake8 plugin asks: the file's verdict from its project's index, which the face builds itself.
    found = shared_index(project_of(str(program)), settings).verdict(program.read_text(), str(program), settings)
    assert [d.span.row for d in found] == [14]
    _, out, _ = run_cli("explain", f"{program}:14", str(tmp_path), "--no-cache")
    assert "ran 30 times in the traced run" in out and "is reported" in out


@pytest.mark.parametrize(
    "content, reason", [("{not json", "not JSON"), ('{"format": "other"}', "not an `h2dlint trace` file")]
)
def test_an_unusable_profile_is_one_line_naming_it(tmp_path, run_cli, content, reason):
    program = write(tmp_path, "prog.py", PROGRAM)
    bad = write(tmp_path, "bad.json", content)
    code, out, err = run_cli("check", str(program), "--profile", str(bad))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and str(bad) in err and reason in err and "Traceback" not in err


def test_the_reference_trace_gives_the_two_seed_findings_citing_the_run(tmp_path, run_cli):
    folder = tmp_path / "reference"
    shutil.copytree(REFERENCE, folder)
    profile = trace(run_cli, folder, PYTHON, "run_decode.py", "--device", "cpu", "--steps", "24")
    code, out, _ = run_cli("check", str(folder), "--profile", str(profile), "--output-format", "concise")
    found = {line.split(":")[0].rsplit("/", 1)[1] + ":" + line.split(":")[1]: line for line in out.splitlines()}
    assert set(found) == {"eagle_info.py:19", "schedule_batch.py:58"}
    assert "`EagleDraftInput.prepare_for_decode` ran 24 times in the traced run" in found["eagle_info.py:19"]
    assert "`ScheduleBatch.prepare_for_decode` ran 48 times in the traced run" in found["schedule_batch.py:58"]


def test_markers_win_over_the_run(tmp_path, run_cli):
    source = PROGRAM.replace("def _pack(ids, dev):", "def _pack(ids, dev):  # h2dlint: cold")
    program = write(tmp_path, "prog.py", source)
    profile = trace(run_cli, tmp_path, PYTHON, "prog.py")
    _, out, _ = run_cli("check", str(program), "--profile", str(profile), "--output-format", "concise")
    assert rows(out) == {}
    assert Settings().profile is None


@pytest.mark.parametrize("version", ["3.10", "3.12", "3.13"])
def test_both_counting_mechanisms_agree(tmp_path, run_cli, version):
    """`sys.setprofile` before Python 3.12, `sys.monitoring` from 3.12 on: the same counts either way."""
    python = _working_python(version)
    if python is None:
        pytest.skip(f"no python{version} here")
    write(tmp_path, "prog.py", PROGRAM)
    document = json.loads(trace(run_cli, tmp_path, python, "prog.py").read_text())
    # Before 3.11 code objects have no qualname: the record keeps the name, which `check` matches by line.
    counts = {(path, (rest or [qualname])[0].rpartition(".")[2], line): calls
              for path, qualname, line, calls, *rest in document["functions"]}
    assert counts[("prog.py", "_pack", 13)] == 30 and counts[("prog.py", "serve", 5)] == 1
    assert counts[("torch.py", "tensor", 1)] == 31
    _, out, _ = run_cli("check", str(tmp_path / "prog.py"), "--profile", str(tmp_path / "trace.json"))
    assert "`_pack` ran 30 times in the traced run" in out


def _working_python(version):
    """A Python of `version` on PATH, or one pyenv installed, that runs."""
    found = [shutil.which(f"python{version}"), *glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python"))]
    for python in filter(None, found):
        if subprocess.run([python, "-c", "pass"], capture_output=True).returncode == 0:
            return python
    return None

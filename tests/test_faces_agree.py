"""Every face gives a file the verdict of its whole project, whatever subset of files it was handed.

The project of issue 17: `pkg/loop.py` calls `batching.pack_ids` in a loop, and `pack_ids` builds
`torch.tensor(list(ids), device=device)`, so `pkg/batching.py:5` is reported by `check .`, `check pkg/batching.py`,
flake8 with an empty cache, pre-commit with only that file staged, and stdin (the language server:
tests/test_server.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap

import pytest
import yaml
from conftest import PYTHON, ROOT, demo_package, write

LOOP = """\
    from pkg.batching import pack_ids


    def generate(batches, device):
        for ids in batches:
            yield pack_ids(ids, device)
    """
BATCHING = """\
    import torch


    def pack_ids(ids, device):
        return torch.tensor(list(ids), device=device)
    """
WHERE = "called in a loop at line 5 of `pkg.loop.generate`"


@pytest.fixture
def project(tmp_path):
    return demo_package(tmp_path, {"loop": LOOP, "batching": BATCHING})


def rows(out):
    """`file:row` of each finding in concise or text output."""
    return [line.split(": HTD")[0].rsplit(":", 1)[0] for line in out.splitlines() if ": HTD" in line]


def test_check_of_the_whole_project_and_of_one_file_agree(project, run_cli):
    code, whole, _ = run_cli("check", ".", cwd=project)
    assert code == 1 and rows(whole) == ["./pkg/batching.py:5"] and WHERE in whole
    code, one, _ = run_cli("check", "pkg/batching.py", cwd=project)
    assert code == 1 and rows(one) == ["pkg/batching.py:5"] and WHERE in one
    assert run_cli("check", "pkg/loop.py", cwd=project)[:2] == (0, "All checks passed!\n")  # only what was given


def test_a_folder_inside_the_project_is_reported_with_the_projects_heat(project, run_cli):
    code, out, _ = run_cli("check", "--output-format", "concise", str(project / "pkg"))
    assert code == 1 and rows(out) == [f"{project / 'pkg' / 'batching.py'}:5"]


def test_isolated_files_keep_the_per_file_reasoning(project, run_cli):
    assert run_cli("check", "--isolated-files", "pkg/batching.py", cwd=project)[0] == 0


def test_project_names_the_root_and_a_file_outside_any_root_is_alone(project, run_cli, tmp_path):
    (project / "pyproject.toml").unlink()
    assert run_cli("check", "pkg/batching.py", cwd=project)[0] == 0  # no root: the given file alone
    code, out, _ = run_cli("check", "--project", ".", "pkg/batching.py", cwd=project)
    assert code == 1 and rows(out) == ["pkg/batching.py:5"]


def test_the_project_root_key_names_a_root_above_the_configuration(project, run_cli):
    (project / "pyproject.toml").unlink()
    write(project, "pkg/pyproject.toml", "[tool.h2dlint]\nproject-root = \"..\"\n")
    code, out, _ = run_cli("check", "pkg/batching.py", cwd=project)
    assert code == 1 and rows(out) == ["pkg/batching.py:5"]


def test_flake8_with_an_empty_cache(project, isolated_cache):
    assert not isolated_cache.exists()  # no `check` ran before: the plugin builds the index it needs
    done = subprocess.run(
        [PYTHON, "-m", "flake8", "--isolated", "--select", "HTD", "pkg/batching.py"],
        capture_output=True, text=True, cwd=project,
    )
    assert done.stdout.startswith("pkg/batching.py:5:12: HTD101 ") and WHERE in done.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_pre_commit_with_only_that_file_staged(project, tmp_path):
    """pre-commit itself, running the lint hook's entry as a local hook (no registry needed): it hands the
    hook only the staged file, as it does on every commit."""
    [lint] = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()) if h["id"] == "h2dlint"]
    hook = {**lint, "entry": f"{PYTHON} -m {lint['entry']}", "language": "system"}
    hook.pop("minimum_pre_commit_version", None)
    write(project, ".pre-commit-config.yaml", yaml.safe_dump({"repos": [{"repo": "local", "hooks": [hook]}]}))
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    git = lambda *args: subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("add", "pkg/batching.py", ".pre-commit-config.yaml")
    done = subprocess.run(
        [PYTHON, "-m", "pre_commit", "run", "--color", "never"], cwd=project, env=env, capture_output=True, text=True
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pkg/batching.py:5:12: HTD101" in done.stdout and "pkg/loop.py" not in done.stdout


@pytest.mark.parametrize("output_format", ["text", "full", "concise", "json", "sarif", "github"])
def test_stdin_gives_the_file_its_projects_verdict_in_every_format(project, output_format):
    batching = project / "pkg" / "batching.py"
    args = ["check", "--output-format", output_format, "--stdin-filename", "pkg/batching.py", "-"]
    piped = _h2dlint(*args, stdin=batching.read_text(), cwd=project)
    on_disk = _h2dlint("check", "--output-format", output_format, "pkg/batching.py", cwd=project)
    assert piped.returncode == on_disk.returncode == 1
    assert piped.stdout == on_disk.stdout and "HTD101" in piped.stdout


def test_stdin_checks_an_unsaved_buffer_with_the_projects_heat(project):
    buffer = (project / "pkg" / "batching.py").read_text().replace("    return", "    ids = list(ids)\n    return")
    done = _h2dlint("check", "--output-format", "json", "--stdin-filename", "pkg/batching.py", "-", stdin=buffer,
                    cwd=project)
    [finding] = json.loads(done.stdout)
    assert finding["location"]["row"] == 6 and finding["reason"] == WHERE


def test_stdin_fix_writes_the_fixed_text_and_leaves_the_file_alone(project):
    batching = project / "pkg" / "batching.py"
    before = batching.read_text()
    done = _h2dlint("check", "--fix", "--stdin-filename", "pkg/batching.py", "-", stdin=before, cwd=project)
    assert done.returncode == 0 and "h2d_tensor(list(ids), device=device)" in done.stdout
    assert batching.read_text() == before
    assert _h2dlint("check", "--stdin-filename", "pkg/batching.py", "-", stdin=done.stdout, cwd=project).returncode == 0


def test_stdin_that_does_not_parse_is_one_line_and_fix_gives_it_back(project):
    broken = "import torch\ndef f(:\n    torch.tensor(x, device=d)\n"
    done = _h2dlint("check", "--fix", "--stdin-filename", "pkg/batching.py", "-", stdin=broken, cwd=project)
    assert done.returncode == 1 and done.stdout == broken
    assert done.stderr.startswith("pkg/batching.py: error: syntax error") and done.stderr.count("\n") == 1


def test_fix_on_a_subset_fixes_only_those_files_with_the_whole_projects_heat(project, run_cli):
    write(project, "pkg/other.py", BATCHING.replace("pack_ids", "other_ids"))
    more = "def more(batches, device):\n    from pkg.other import other_ids\n\n    for ids in batches:\n"
    write(project, "pkg/loop.py", textwrap.dedent(LOOP) + "\n\n" + more + "        yield other_ids(ids, device)\n")
    other = (project / "pkg" / "other.py").read_text()
    code, out, _ = run_cli("check", "--fix", "pkg/batching.py", cwd=project)
    assert code == 0 and out.splitlines()[0] == "Found 1 finding (1 fixed, 0 remaining)."
    assert "vendor-helper" in out  # fixed code now depends on h2dlint.runtime: the note says how not to
    assert "h2d_tensor" in (project / "pkg" / "batching.py").read_text()
    assert (project / "pkg" / "other.py").read_text() == other  # not given: not touched
    assert rows(run_cli("check", ".", cwd=project)[1]) == ["./pkg/other.py:5"]


def test_the_cache_lives_in_the_project_root(project, run_cli, monkeypatch, tmp_path):
    monkeypatch.delenv("H2DLINT_CACHE_DIR")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run_cli("check", str(project / "pkg" / "batching.py"), cwd=elsewhere)
    assert (project / ".h2dlint_cache").is_dir() and not (elsewhere / ".h2dlint_cache").exists()


def _h2dlint(*args, stdin=None, cwd=None):
    return subprocess.run([PYTHON, "-m", "h2dlint", *args], input=stdin, capture_output=True, text=True, cwd=cwd)

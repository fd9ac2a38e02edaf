"""The pre-commit hooks of `.pre-commit-hooks.yaml`, run for real with `pre-commit try-repo`.

try-repo installs this checkout (its git HEAD plus uncommitted changes to tracked files) into a fresh
virtualenv, which needs the package registry, so these tests are marked `network`. They skip only when
pre-commit is not installed or the registry cannot be reached.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess

import pytest
from conftest import PYTHON, REFERENCE, ROOT

pytestmark = pytest.mark.network

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "h2dlint tests",
    "GIT_AUTHOR_EMAIL": "tests@h2dlint.invalid",
    "GIT_COMMITTER_NAME": "h2dlint tests",
    "GIT_COMMITTER_EMAIL": "tests@h2dlint.invalid",
}


@pytest.fixture(scope="module")
def pre_commit_env(tmp_path_factory):
    """The environment for pre-commit: its own PRE_COMMIT_HOME, shared by this module's tests so that the
    hook environment is built once when the checkout has no uncommitted changes."""
    if importlib.util.find_spec("pre_commit") is None:
        pytest.skip("pre-commit is not installed")
    _require_registry(tmp_path_factory.mktemp("registry-check"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "GIT_"))}
    env.update(GIT_IDENTITY, PRE_COMMIT_HOME=str(tmp_path_factory.mktemp("pre-commit-home")))
    return env


def _require_registry(scratch):
    """Skip unless pip can fetch what the hook environment installs (as pre-commit's pip will)."""
    done = subprocess.run(
        [PYTHON, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--quiet", "-d", str(scratch),
         "pathspec", "tqdm"],
        capture_output=True, text=True, timeout=300,
    )
    if done.returncode != 0:
        pytest.skip(f"the package registry is unreachable: {done.stderr.strip().splitlines()[-1:]}")


def make_repo(folder, files_from=None):
    """A git repository holding a copy of `files_from` (or only a README), all committed."""
    if files_from is not None:
        shutil.copytree(files_from, folder)
    else:
        folder.mkdir()
    (folder / "README.md").write_text("A repository for testing h2dlint's hooks.\n", encoding="utf-8")
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", *command], cwd=folder, check=True, env={**os.environ, **GIT_IDENTITY})
    return folder


def try_repo(repo, env, *hook):
    """`pre-commit try-repo <this checkout> [HOOK] --all-files` inside `repo`: (exit code, output)."""
    done = subprocess.run(
        [PYTHON, "-m", "pre_commit", "try-repo", str(ROOT), *hook, "--all-files", "--color", "never"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=900,
    )
    return done.returncode, done.stdout + done.stderr


def _snapshot(folder):
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.py"))}


def test_lint_hook_fails_and_prints_the_findings(tmp_path, pre_commit_env):
    repo = make_repo(tmp_path / "repo", REFERENCE)
    code, output = try_repo(repo, pre_commit_env, "h2dlint")
    assert code == 1, output
    assert "h2dlint" in output and "Failed" in output
    assert "eagle_info.py:19:17: HTD101" in output
    assert "schedule_batch.py:" in output and "HTD104" in output


def test_both_hooks_pass_when_given_no_files(tmp_path, pre_commit_env):
    repo = make_repo(tmp_path / "empty")
    code, output = try_repo(repo, pre_commit_env)  # every hook of the manifest
    assert code == 0, output
    assert "h2dlint (fix)" in output
    assert output.count("(no files to check)Skipped") == 2


def test_fix_hook_rewrites_the_files_fails_then_passes(tmp_path, pre_commit_env):
    repo = make_repo(tmp_path / "repo", REFERENCE)
    before = _snapshot(repo)
    code, output = try_repo(repo, pre_commit_env, "h2dlint-fix")
    assert code == 1, output
    assert "files were modified by this hook" in output
    after = _snapshot(repo)
    # The fix hook makes safe fixes only: the HTD104 seed's data could be an array, so its fix is unsafe.
    assert {name for name in before if before[name] != after[name]} == {"eagle_info.py"}
    code, output = try_repo(repo, pre_commit_env, "h2dlint-fix")
    assert code == 1 and "--unsafe-fixes" in output, output  # what is left is reported, and how to fix it
    assert _snapshot(repo) == after
    code, output = try_repo(repo, pre_commit_env, "h2dlint")
    assert code == 1 and "HTD104" in output and "HTD101" not in output, output


def test_hooks_name_a_broken_file_and_still_check_the_others(tmp_path, pre_commit_env):
    source = tmp_path / "source"
    shutil.copytree(REFERENCE, source)
    (source / "a_broken.py").write_text("import torch\ndef f(:\n    torch.tensor(x, device=d)\n", encoding="utf-8")
    (source / "a_latin1.py").write_bytes(b"import torch\nname = 'caf\xe9'\n")
    repo = make_repo(tmp_path / "repo", source)
    for hook in ("h2dlint", "h2dlint-fix"):
        code, output = try_repo(repo, pre_commit_env, hook)
        assert code == 1 and "Traceback" not in output, output
        assert "a_broken.py: error: syntax error at 2:7: invalid syntax" in output
        assert "a_latin1.py: error: not valid utf-8 text: byte 0xe9 at offset 24" in output
    assert "h2d_tensor" in (repo / "eagle_info.py").read_text(encoding="utf-8")  # the fix hook fixed the rest

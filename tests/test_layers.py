"""The layers contract in pyproject.toml holds, and an upward import would break it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINT_IMPORTS = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")

pytestmark = pytest.mark.skipif(LINT_IMPORTS is None, reason="import-linter is not installed")


def _lint_imports(folder: str) -> subprocess.CompletedProcess:
    # grimp reads the package from sys.path; the folder's own copy comes first.
    env = {**os.environ, "PYTHONPATH": folder}
    return subprocess.run(
        [LINT_IMPORTS, "--config", os.path.join(folder, "pyproject.toml"), "--no-cache"],
        cwd=folder, env=env, capture_output=True, text=True,
    )


def test_the_layers_contract_is_kept():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    "module, upward",
    [
        ("h2dlint/facts/positions.py", "from h2dlint.rules import ALL_RULES"),
        ("h2dlint/checker/collector.py", "from h2dlint.project import hotness"),
        ("h2dlint/project/run.py", "from h2dlint.fixing.autofix import fix_file"),
        ("h2dlint/rules/base.py", "import torch"),
    ],
)
def test_an_upward_import_breaks_the_contract(tmp_path, module, upward):
    copy = tmp_path / "tree"
    shutil.copytree(os.path.join(ROOT, "h2dlint"), copy / "h2dlint", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), copy / "pyproject.toml")
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{upward}\n", encoding="utf-8")
    result = _lint_imports(str(copy))
    assert result.returncode != 0
    assert "BROKEN" in result.stdout, result.stdout

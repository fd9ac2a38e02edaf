from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
REFERENCE = FIXTURES / "reference"

# Small modules with one finding each: HTD101 and HTD104 in a per-step function.
HOT = "import torch\n\ndef forward(ids, dev):\n    return torch.tensor(ids, device=dev)\n"
HOT_104 = "import torch\n\ndef step(ids, dev):\n    return torch.tensor(ids).to(dev, non_blocking=True)\n"


def write(folder: Path, name: str, text: str) -> Path:
    """Write `text` (dedented) to `folder/name`, creating folders as needed."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Each test gets its own h2dlint cache, so no test sees another's (or writes into the checkout)."""
    folder = tmp_path / "h2dlint-cache"
    monkeypatch.setenv("H2DLINT_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def _no_colour_settings(monkeypatch):
    """Output does not depend on whether the person running the tests asked for colour."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


@pytest.fixture
def run_cli(capsys):
    """Run `h2dlint ARGS...` in-process; returns (exit code, stdout, stderr)."""
    from h2dlint.faces.cli import main

    def run(*args: str, cwd: "os.PathLike[str] | None" = None):
        old = os.getcwd()
        if cwd is not None:
            os.chdir(cwd)
        try:
            code = main(list(args))
        finally:
            os.chdir(old)
        out, err = capsys.readouterr()
        return code, out, err

    return run


PYTHON = sys.executable

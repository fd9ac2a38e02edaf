"""Killing `h2dlint check --fix` part-way leaves every file either as it was or fully fixed (issue 7).

The run is killed for real, as soon as its first file has been rewritten, so it dies among its writes.
Files differ in line endings, BOM, encoding and mode, since each must come back whole in its own form.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path
from typing import Dict

import pytest
from conftest import PYTHON

FILES = 120
BODY = "import torch\n\n\ndef forward(ids, dev):\n    # file {i}\n    return torch.tensor(ids, device=dev)\n"


def _tree(folder: Path) -> Dict[Path, bytes]:
    folder.mkdir()
    for i in range(FILES):
        text = BODY.format(i=i)
        if i % 3 == 1:
            data = ("\ufeff" + text.replace("\n", "\r\n")).encode("utf-8")  # BOM and CRLF
        elif i % 3 == 2:
            data = ("# -*- coding: latin-1 -*-\n" + text.replace("# file", "# caf\xe9")).encode("latin-1")
        else:
            data = text.encode("utf-8")
        path = folder / f"m{i:03}.py"
        path.write_bytes(data)
        os.chmod(path, 0o640 if i % 2 else 0o755)
    return _contents(folder)


def _contents(folder: Path) -> Dict[Path, bytes]:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.glob("*.py"))}


def _modes(folder: Path) -> Dict[Path, int]:
    return {p.relative_to(folder): stat.S_IMODE(p.stat().st_mode) for p in sorted(folder.glob("*.py"))}


def _fix_command(folder: Path):
    return [PYTHON, "-m", "h2dlint", "check", "--fix", "--unsafe-fixes", "--no-cache", "-q", "-j", "1", str(folder)]


@pytest.fixture(scope="module")
def fixed_tree(tmp_path_factory):
    """The tree before, and after a run that was not interrupted."""
    base = tmp_path_factory.mktemp("interrupted")
    before = _tree(base / "before")
    done = base / "done"
    shutil.copytree(base / "before", done)
    result = subprocess.run(_fix_command(done), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    after = _contents(done)
    assert all(after[name] != before[name] for name in before)  # every file has a fix to write
    return base / "before", before, after


def _interruptible() -> None:
    """In the child, before it runs: SIGINT as a terminal gives it. A shell starts a background job (`.ci/run &`)
    with SIGINT ignored, and Python then installs no KeyboardInterrupt handler: the signal would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run_and_kill_after_first_write(folder: Path, first: bytes, sig: int) -> subprocess.CompletedProcess:
    process = subprocess.Popen(
        _fix_command(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_interruptible
    )
    watched = folder / "m000.py"
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if watched.read_bytes() != first:
            process.send_signal(sig)
            break
        time.sleep(0.0005)
    out, err = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=["KILL", "TERM", "INT"])
def test_a_killed_fix_leaves_each_file_old_or_new(tmp_path, fixed_tree, sig):
    source, before, after = fixed_tree
    for attempt in range(5):  # on a loaded machine the watcher may wake after the run has written every file
        folder = tmp_path / f"tree{attempt}"
        shutil.copytree(source, folder)
        modes = _modes(folder)
        result = _run_and_kill_after_first_write(folder, before[Path("m000.py")], sig)
        if not (result.returncode == 0 and _contents(folder) == after):
            break
    assert result.returncode == (-signal.SIGKILL if sig == signal.SIGKILL else 130), result.stderr
    now = _contents(folder)
    assert set(now) == set(before)
    torn = [name for name in now if now[name] not in (before[name], after[name])]
    assert torn == []
    fixed = sum(now[name] == after[name] for name in now)
    assert 0 < fixed < FILES, "the run was not killed among its writes"
    assert _modes(folder) == modes
    leftovers = sorted(p.name for p in folder.iterdir() if p.suffix != ".py")
    if sig != signal.SIGKILL:  # a signal Python can catch unwinds and removes the temporary file
        assert leftovers == [] and "Traceback" not in result.stderr
        assert result.stderr.strip().endswith("h2dlint: interrupted (no file is ever left half-written)")
    else:  # SIGKILL cannot be caught: at most one temporary file, never a user's file, may be left
        assert len(leftovers) <= 1 and all(n.startswith(".h2dlint-") and n.endswith(".tmp") for n in leftovers)
    rerun = subprocess.run(_fix_command(folder), capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0 and _contents(folder) == after  # the next run finishes the job

"""What a run shows at a terminal, and only there: progress on stderr (not with --quiet), colour on stdout."""

from __future__ import annotations

import os
import select
import struct
import subprocess

import pytest
from conftest import PYTHON

pty = pytest.importorskip("pty")  # these three are POSIX only
fcntl = pytest.importorskip("fcntl")
termios = pytest.importorskip("termios")

HOT = "import torch\n\ndef forward(ids, dev):\n    return torch.tensor(ids, device=dev)\n"


@pytest.fixture
def many_files(tmp_path):
    for index in range(40):
        (tmp_path / f"m{index:02}.py").write_text(HOT if index == 7 else "import torch\n", encoding="utf-8")
    return tmp_path


def run_with_terminal_stderr(*args, stdout_too=False):
    """Run `python -m h2dlint ARGS` with stderr on a pseudo-terminal, and stdout on a pipe unless
    `stdout_too`. Returns (exit code, what went to the pipe, what went to the terminal)."""
    leader, follower = pty.openpty()
    # A new pseudo-terminal is 0 columns wide, and nothing fits in that; give it a usual size.
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    try:
        process = subprocess.Popen(
            [PYTHON, "-m", "h2dlint", *args],
            stdout=follower if stdout_too else subprocess.PIPE, stderr=follower, text=True,
            env={k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")},
        )
        os.close(follower)
        terminal = _read_until_closed(leader)
        out = "" if stdout_too else process.stdout.read()
        process.wait(timeout=60)
    finally:
        os.close(leader)
    return process.returncode, out, terminal


def _read_until_closed(fd):
    chunks = []
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def test_progress_is_drawn_on_a_terminal(many_files):
    code, out, terminal = run_with_terminal_stderr("check", str(many_files))
    assert code == 1
    assert "h2dlint:" in terminal and "/40" in terminal  # tqdm's bar: "h2dlint: 100%|...| 40/40 [...]"
    assert "m07.py:4:12: HTD101" in out and "\r" not in out


def test_text_is_coloured_on_a_terminal(many_files):
    code, _, terminal = run_with_terminal_stderr("check", "--quiet", str(many_files), stdout_too=True)
    assert code == 1
    assert "\033[31m\033[1mHTD101\033[0m" in terminal


def test_quiet_keeps_the_terminal_silent(many_files):
    code, out, terminal = run_with_terminal_stderr("check", "--quiet", str(many_files))
    assert code == 1
    assert terminal == ""
    assert "m07.py:4:12: HTD101" in out


def test_no_progress_off_a_terminal(many_files):
    done = subprocess.run([PYTHON, "-m", "h2dlint", "check", str(many_files)], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == ""
    assert "m07.py:4:12: HTD101" in done.stdout

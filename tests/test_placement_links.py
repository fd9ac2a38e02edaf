"""Placements across files: a copy whose tensor another file builds (an imported function's return value, an
attribute or a method inherited from a base class elsewhere) is reported with that file's evidence, the same on
every face; a file checked alone, which cannot ask, reports nothing of the kind."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import PYTHON, demo_package, write

from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source

IDS = """\
    import torch


    def make_ids(n):
        ids = torch.zeros(n, dtype=torch.long)
        return ids


    def make_on_device(n):
        return torch.zeros(n, device="cuda")


    class Base:
        def __init__(self):
            self.lens = torch.ones(4)

        def positions(self):
            return torch.arange(8)
    """
RUNNER = """\
    import torch
    from pkg import ids as ids_mod
    from pkg.ids import Base, make_ids, make_on_device


    class Runner(Base):
        def forward(self, n):
            ids = make_ids(n)
            a = ids.cuda()
            b = ids_mod.make_ids(n).cuda()
            c = make_on_device(n).cuda()
            d = self.lens.cuda()
            e = self.positions().cuda()
            return a, b, c, d, e
    """


@pytest.fixture
def project(tmp_path):
    return demo_package(tmp_path, {"ids": IDS, "runner": RUNNER})


def findings(run_cli, *args, cwd):
    code, out, err = run_cli("check", "--output-format", "json", *args, cwd=cwd)
    assert code in (0, 1), err
    return [(d["location"]["row"], d["code"], d["message"]) for d in json.loads(out)]


def test_host_tensors_from_another_file_are_reported_with_its_evidence(project, run_cli):
    found = findings(run_cli, "--no-cache", ".", cwd=project)
    assert [(row, code) for row, code, _ in found] == [(9, "HTD103"), (10, "HTD103"), (12, "HTD103"), (13, "HTD103")]
    messages = {row: message for row, _, message in found}
    assert "`ids` is returned by `make_ids()` (ids.py), where it is built on the host by `torch.zeros(...)` at" \
        " line 5" in messages[9]
    assert "is returned by `ids_mod.make_ids()` (ids.py)" in messages[10]
    assert "`self.lens` is assigned by `Base` (ids.py), where it is built on the host by `torch.ones(...)` at" \
        " line 15" in messages[12]
    assert "is returned by `self.positions()` of `Base` (ids.py)" in messages[13]


def test_a_device_tensor_from_another_file_is_not_reported(project, run_cli):
    rows = [row for row, _, _ in findings(run_cli, "--no-cache", ".", cwd=project)]
    assert 11 not in rows  # `make_on_device(n).cuda()`: device to device


def test_explain_prints_the_chain_into_the_other_file(project, run_cli):
    code, out, _ = run_cli("explain", "pkg/runner.py:9", cwd=project)
    assert code == 0
    assert "from line 8: `ids = make_ids(n)`" in out
    assert "from ids.py: line 5: `ids = torch.zeros(n, dtype=torch.long)`" in out
    code, out, _ = run_cli("explain", "pkg/runner.py:11", cwd=project)
    assert "is not reported: where its tensor lives depends on what `make_on_device()` returns" in out


def test_a_file_checked_alone_reports_none_of_them(project, run_cli):
    assert findings(run_cli, "--isolated-files", "--no-cache", "pkg/runner.py", cwd=project) == []
    assert check_source((project / "pkg" / "runner.py").read_text(), Settings()) == []


def test_flake8_on_one_file_gives_the_projects_verdict(project, run_cli):
    expected = [row for row, _, _ in findings(run_cli, "pkg/runner.py", cwd=project)]
    done = subprocess.run(
        [PYTHON, "-m", "flake8", "--isolated", "--select", "HTD", "pkg/runner.py"],
        capture_output=True, text=True, cwd=project,
    )
    assert [int(line.split(":")[1]) for line in done.stdout.splitlines()] == expected == [9, 10, 12, 13]


def test_returns_are_followed_through_a_third_file_and_a_cycle_stays_quiet(tmp_path, run_cli):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/c.py", "import torch\n\ndef build():\n    return torch.zeros(3)\n")
    # b.py relays: a file that names no torch exports nothing (the cost of summarising every file's returns)
    write(tmp_path, "pkg/b.py", "import torch\nfrom pkg.c import build\n\ndef relay():\n    return build()\n\n"
                                "def loop_b():\n    from pkg.a import loop_a\n    return loop_a()\n")
    write(tmp_path, "pkg/a.py", "import torch\nfrom pkg.b import loop_b, relay\n\ndef loop_a():\n"
                                "    return loop_b()\n\ndef forward(x):\n    return relay().cuda(), loop_a().cuda()\n")
    found = findings(run_cli, "--no-cache", "pkg", cwd=tmp_path)
    assert [(row, code) for row, code, _ in found] == [(8, "HTD103")]  # `loop_a().cuda()` is not
    assert "is returned by `relay()` (b.py), where it is returned by `build()` (c.py), where it is built on the" \
        " host by `torch.zeros(...)` at line 4" in found[0][2]


def edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    stat = os.stat(path)  # a later mtime even on coarse clocks
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_editing_the_other_file_updates_the_finding_with_the_cache(project, run_cli):
    rows = lambda: [row for row, _, _ in findings(run_cli, ".", cwd=project)]  # noqa: E731
    assert rows() == [9, 10, 12, 13]
    edit(project / "pkg" / "ids.py", "torch.zeros(n, dtype=torch.long)", "torch.zeros(n, device='cuda')")
    assert rows() == [12, 13]  # runner.py did not change, but `make_ids` now builds on the device
    edit(project / "pkg" / "ids.py", "torch.zeros(n, device='cuda')", "torch.zeros(n, dtype=torch.long)")
    edit(project / "pkg" / "runner.py", "return a, b, c, d, e", "return (a, b, c, d, e)")  # a body edit
    assert rows() == [9, 10, 12, 13]
    assert rows() == [9, 10, 12, 13]  # nothing changed: the last run's results


def test_stdin_of_the_saved_file_gives_the_projects_verdict(project, run_cli):
    runner = project / "pkg" / "runner.py"
    args = ["-m", "h2dlint", "check", "--output-format", "concise"]
    piped = subprocess.run([PYTHON, *args, "--stdin-filename", "pkg/runner.py", "-"], input=runner.read_text(),
                           capture_output=True, text=True, cwd=project)
    on_disk = subprocess.run([PYTHON, *args, "pkg/runner.py"], capture_output=True, text=True, cwd=project)
    assert piped.stdout == on_disk.stdout and piped.stdout.count("HTD103") == 4


def test_a_join_or_a_choice_of_another_files_tensors_waits_for_its_answer(tmp_path, run_cli):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/c.py", "import torch\n\ndef build(n):\n    return torch.zeros(n)\n\n"
                                "def build_on(n):\n    return torch.zeros(n, device='cuda')\n")
    write(tmp_path, "pkg/a.py", "import torch\nfrom pkg.c import build, build_on\n\ndef forward(ns, flag):\n"
                                "    parts = [build(n) for n in ns]\n"
                                "    one = build(1) if flag else build(2)\n"
                                "    mixed = build(1) if flag else build_on(2)\n"
                                "    on = torch.cat([build_on(n) for n in ns])\n"
                                "    return torch.cat(parts).cuda(), one.cuda(), mixed.cuda(), on.cuda()\n")
    _, out, _ = run_cli("check", "--output-format", "json", "--no-cache", "pkg", cwd=tmp_path)
    found = [(d["location"]["row"], d["location"]["column"], d["code"], d["message"]) for d in json.loads(out)]
    # `torch.cat(parts)` and `one` are host tensors; `mixed` may live on either side, and `on` is on the device
    assert [(row, column, code) for row, column, code, _ in found] == [(9, 12, "HTD103"), (9, 37, "HTD103")]
    assert all("is returned by `build()` (c.py)" in message for *_, message in found)


POOL = """\
    import torch
    from kernels_elsewhere import unbind


    class Pool:
        def __init__(self):
            self.free_pages = torch.arange(8, device="cuda")

        def free(self, pages):
            self.free_pages = torch.cat([self.free_pages, unbind(pages)])

        def forward(self):
            return self.free_pages.tolist()
    """


def test_a_question_no_file_answers_leaves_the_verdict_of_the_other_evidence(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", "[project]\nname = 'demo'\n\n[tool.h2dlint]\nselect = ['HTD']\n")
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/pool.py", POOL)
    # `unbind()` lies outside the project: the join is the pool's own device pages plus pages of unknown place
    in_project = findings(run_cli, "--no-cache", ".", cwd=tmp_path)
    alone = findings(run_cli, "--isolated-files", "--no-cache", "pkg/pool.py", cwd=tmp_path)
    assert [(row, code) for row, code, _ in in_project] == [(13, "HTD201")]
    assert alone == in_project
    assert "built on the device" in in_project[0][2]
    code, out, _ = run_cli("explain", "pkg/pool.py:13", cwd=tmp_path)
    assert code == 0 and "HTD201 is reported" in out, out




MROPE_MODEL = """\
    import torch
    from pkg.rope import mrope_positions


    class Model:
        def forward(self, x, grid, input_ids):
            positions = mrope_positions(grid)
            if x.is_cuda:
                positions = positions.to(x.device, non_blocking=True)
            else:
                positions = positions.to("cpu")
            text_positions = mrope_positions(grid)
            return positions, text_positions.tolist(), input_ids.tolist()
    """
ROPE = """\
    import numpy as np
    import torch


    def mrope_positions(grid):
        return torch.from_numpy(np.cumsum(grid))
    """


def test_a_name_guesses_only_where_another_files_return_says_nothing(tmp_path, run_cli):
    # `placement-name-model-input` guesses that a model's `positions` and `input_ids` are on the device. What a
    # function of another file returns is a provenance, asked first: its host tensor is copied with a pageable
    # non-blocking copy (row 9), and `.to("cpu")` (row 11) and `.tolist()` (row 13) of it wait for nothing. No
    # file places the parameter `input_ids`: the guess stands (row 13).
    project = demo_package(tmp_path, {"model": MROPE_MODEL, "rope": ROPE}, "select = ['HTD1', 'HTD2']\n")
    found = findings(run_cli, "--no-cache", ".", cwd=project)
    assert [(row, code) for row, code, _ in found] == [(9, "HTD104"), (13, "HTD201")]
    assert "returned by `mrope_positions()` (rope.py)" in found[0][2]
    assert "`input_ids` is named like a device tensor" in found[1][2]

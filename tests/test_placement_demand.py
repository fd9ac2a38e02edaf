"""Placement exports are worked out only for the files another file's question reaches, cached by content, and
a later run where only other files changed does not work them out again (`project.placement_demand`)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import demo_package, write
from test_placement_links import IDS, RUNNER, edit

from h2dlint.facts.settings import Settings
from h2dlint.project.cache import ENVIRONMENT_VARIABLE, Cache, content_key
from h2dlint.project import placement_demand
from h2dlint.project import run as run_module
from h2dlint.project.placement_demand import DemandedExports, exports_of_file
from h2dlint.project.run import analyse_paths

IDLE = """\
    import torch


    def make_more(n):
        return torch.zeros(n)


    class Holder:
        def __init__(self):
            self.buffer = torch.ones(4)
    """


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = demo_package(tmp_path, {"ids": IDS, "runner": RUNNER, "idle": IDLE})  # no file imports `idle`
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, str(tmp_path / "cache"))
    return root


def stored_exports(cache):
    return sorted(name for _, _, names in os.walk(cache) for name in names if name.endswith("-placements"))


def rows(run_cli, root):
    code, out, err = run_cli("check", "--output-format", "json", ".", cwd=root)
    assert code in (0, 1), err
    return [d["location"]["row"] for d in json.loads(out)]


def test_only_the_file_a_question_reaches_is_placed(project):
    run = analyse_paths([str(project / "pkg")], Settings(), use_cache=False)
    assert run.asked == {os.path.abspath(project / "pkg" / "ids.py")}
    assert sum(len(r.diagnostics) for r in run.results) == 4  # the four copies of `ids.py`'s host tensors


def test_the_cache_keeps_the_exports_of_the_asked_file_alone(project, run_cli):
    cache = project.parent / "cache"
    assert rows(run_cli, project) == [9, 10, 12, 13]
    key = content_key((project / "pkg" / "ids.py").read_bytes())
    assert stored_exports(cache) == [key + "-placements"]


def test_an_edit_of_a_file_no_question_reaches_places_nothing_again(project, run_cli):
    cache = project.parent / "cache"
    assert rows(run_cli, project) == [9, 10, 12, 13]
    before = stored_exports(cache)
    edit(project / "pkg" / "idle.py", "torch.zeros(n)", "torch.zeros(n, device='cuda')")
    assert rows(run_cli, project) == [9, 10, 12, 13]
    assert stored_exports(cache) == before


def test_an_edit_of_the_asked_file_is_placed_again(project, run_cli):
    cache = project.parent / "cache"
    assert rows(run_cli, project) == [9, 10, 12, 13]
    edit(project / "pkg" / "ids.py", "self.lens = torch.ones(4)", "self.lens = torch.ones(4, device='cuda')")
    assert rows(run_cli, project) == [9, 10, 13]  # `self.lens` is now built on the device
    assert len(stored_exports(cache)) == 2  # before the edit and after


def test_a_file_changed_since_it_was_summarised_exports_nothing(tmp_path):
    path = write(tmp_path, "ids.py", IDS)
    key = content_key(path.read_bytes())
    found = exports_of_file(str(path), key, Settings())
    assert found is not None and set(found.returns) == {"make_ids", "make_on_device", "Base.positions"}
    path.write_text(path.read_text() + "\n# edited\n")
    assert exports_of_file(str(path), key, Settings()) is None


MORE_IDS = """\
    import torch


    def make_rows(n):
        return torch.arange(n)
    """
SECOND_RUNNER = """\
    import torch
    from pkg.more_ids import make_rows


    class Rows:
        def forward(self, n):
            return make_rows(n).cuda()
    """


@pytest.fixture
def two_asked(project, monkeypatch):
    write(project, "pkg/more_ids.py", MORE_IDS)
    write(project, "pkg/second.py", SECOND_RUNNER)
    monkeypatch.setattr(run_module, "SERIAL_BELOW", 1)  # a project this small is otherwise worked out serially
    return project


def findings_of(run):
    return sorted((r.path, d.code, d.span.row, d.message) for r in run.results for d in r.diagnostics)


def test_the_first_files_asked_are_worked_out_by_a_worker_beside_propagation(two_asked, monkeypatch):
    prefetched = []
    original = DemandedExports.prefetch

    def spy(self, modules, workers):
        modules = list(modules)
        prefetched.append((sorted(modules), workers))
        return original(self, modules, workers)

    def not_here(*args):
        raise AssertionError("worked out in the main process")

    monkeypatch.setattr(DemandedExports, "prefetch", spy)
    monkeypatch.setattr(placement_demand, "worked_out", not_here)
    run = analyse_paths([str(two_asked / "pkg")], Settings(), jobs=2, use_cache=False)
    assert prefetched == [(["pkg.ids", "pkg.more_ids"], 1)]
    assert run.asked == {os.path.abspath(two_asked / "pkg" / name) for name in ("ids.py", "more_ids.py")}


def test_prefetched_exports_give_what_exports_worked_out_when_asked_give(two_asked):
    parallel = analyse_paths([str(two_asked / "pkg")], Settings(), jobs=2, use_cache=False)
    serial = analyse_paths([str(two_asked / "pkg")], Settings(), jobs=1, use_cache=False)
    assert findings_of(parallel) == findings_of(serial)
    assert any(row == 7 and "more_ids.py" in message for _, _, row, message in findings_of(parallel))
    assert parallel.asked == serial.asked


def test_a_run_that_cannot_start_a_worker_works_every_export_out_when_asked(two_asked, monkeypatch):
    import concurrent.futures

    class NoProcesses(concurrent.futures.ProcessPoolExecutor):
        def submit(self, *args, **kwargs):
            raise AssertionError("daemonic processes are not allowed to have children")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", NoProcesses)
    parallel = analyse_paths([str(two_asked / "pkg")], Settings(), jobs=2, use_cache=False)
    serial = analyse_paths([str(two_asked / "pkg")], Settings(), jobs=1, use_cache=False)
    assert findings_of(parallel) == findings_of(serial)


def test_prefetch_reads_each_cached_export_once(two_asked, monkeypatch):
    analyse_paths([str(two_asked / "pkg")], Settings(), jobs=2)  # works them out and stores them
    loads = []
    original = Cache.load_exports

    def counted(self, key):
        loads.append(key)
        return original(self, key)

    monkeypatch.setattr(Cache, "load_exports", counted)
    again = analyse_paths([str(two_asked / "pkg")], Settings(), jobs=2)
    assert len(again.asked) == 2
    assert sorted(loads) == sorted(set(loads)) and len(loads) == 2

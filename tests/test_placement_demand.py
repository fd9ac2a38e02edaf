"""Placement exports are worked out only for the files another file's question reaches, cached by content, and
a later run where only other files changed does not work them out again (`project.placement_demand`)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import write
from test_placement_links import IDS, RUNNER, edit

from h2dlint.facts.settings import Settings
from h2dlint.project.cache import ENVIRONMENT_VARIABLE, content_key
from h2dlint.project.placement_demand import exports_of_file
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
    root = tmp_path / "demo"
    write(root, "pyproject.toml", "[project]\nname = 'demo'\n")
    write(root, "pkg/__init__.py", "")
    write(root, "pkg/ids.py", IDS)
    write(root, "pkg/runner.py", RUNNER)
    write(root, "pkg/idle.py", IDLE)  # no file imports it
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

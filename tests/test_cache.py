"""The cache and the worker processes change how fast a run is, never what it finds."""

from __future__ import annotations

import os

import pytest

import h2dlint
import h2dlint.project
from h2dlint.cache import Cache, run_key
from h2dlint.settings import Settings

HOT_CALLER = "from .lib import build\n\ndef forward(ids, dev):\n    return build(ids, dev)\n"
LIB = "import torch\n\ndef build(ids, dev):\n    return torch.tensor(ids, device=dev)\n"


@pytest.fixture
def project(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "caller.py").write_text(HOT_CALLER)
    (package / "lib.py").write_text(LIB)
    return package


@pytest.fixture
def parses(monkeypatch):
    """How many files the next runs parse (rather than take from the cache)."""
    count = {"files": 0}
    real = h2dlint.project.summarize_source

    def counting(text, settings, rules):
        count["files"] += 1
        return real(text, settings, rules)

    monkeypatch.setattr(h2dlint.project, "summarize_source", counting)
    return count


def edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    stat = os.stat(path)  # a later mtime even on coarse clocks, so the test never depends on timing
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_a_second_run_parses_nothing_and_finds_the_same(project, run_cli, parses):
    first = run_cli("check", str(project))
    assert parses["files"] == 3 and first[0] == 1
    assert run_cli("check", str(project)) == first
    assert parses["files"] == 3
    assert run_cli("check", "--no-cache", str(project)) == first


def test_content_change_invalidates_that_file(project, run_cli, parses):
    run_cli("check", str(project))
    edit(project / "lib.py", "device=dev", "device='cpu'")
    code, out, _ = run_cli("check", str(project))
    assert code == 0, out
    assert parses["files"] == 4  # lib.py again, nothing else


def test_a_change_in_another_file_changes_hotness(project, run_cli, parses):
    assert run_cli("check", str(project))[0] == 1
    edit(project / "caller.py", "def forward(", "def setup(")
    code, out, _ = run_cli("check", str(project))
    assert code == 0, out  # lib.py itself did not change, but nothing hot calls `build` any more
    assert parses["files"] == 4


def test_configuration_change_invalidates(project, run_cli, parses):
    assert run_cli("check", str(project))[0] == 1
    code, out, _ = run_cli("check", "--extend-cold-functions", "build", str(project))
    assert code == 0, out
    assert parses["files"] == 6
    assert run_key(Settings()) != run_key(Settings(extend_cold_functions=("build",)))
    assert run_key(Settings()) != run_key(Settings(select=("HTD101",)))


def test_version_change_invalidates(project, run_cli, parses, monkeypatch):
    run_cli("check", str(project))
    monkeypatch.setattr(h2dlint, "__version__", h2dlint.__version__ + ".post1")
    run_cli("check", str(project))
    assert parses["files"] == 6


def test_a_corrupt_entry_is_recomputed_not_fatal(project, run_cli, parses):
    first = run_cli("check", str(project))
    folder = Cache(Settings()).folder
    for base, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(base, name), "wb") as handle:
                handle.write(b"not a pickle")
    assert run_cli("check", str(project)) == first
    assert parses["files"] == 6


def test_the_cache_folder_ignores_itself_and_no_cache_writes_nothing(project, run_cli, isolated_cache):
    run_cli("check", "--no-cache", str(project))
    assert not isolated_cache.exists()
    run_cli("check", str(project))
    assert (isolated_cache / ".gitignore").read_text().splitlines()[-1] == "*"


def test_one_and_many_workers_give_identical_results(tmp_path, run_cli, monkeypatch):
    monkeypatch.setattr(h2dlint.project, "SERIAL_BELOW", 2)  # use worker processes even for a small tree
    package = tmp_path / "many"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for index in range(12):
        (package / f"m{index}.py").write_text(
            f"import torch\nfrom .m{(index + 1) % 12} import f{(index + 1) % 12}\n\n"
            f"def f{index}(x, d):\n    return torch.tensor(x, device=d), f{(index + 1) % 12}(x, d)\n\n"
            + ("from .m0 import f0\n\ndef step(x, d):\n    return f0(x, d)\n" if index == 5 else "")
        )
    serial = run_cli("check", "--no-cache", "-j", "1", str(package))
    parallel = run_cli("check", "--no-cache", "-j", "3", str(package))
    assert serial == parallel
    assert serial[1].count("HTD101") == 12  # every f is reached from `step`, across files


def test_jobs_must_be_positive(run_cli, tmp_path):
    with pytest.raises(SystemExit) as raised:
        run_cli("check", "-j", "0", str(tmp_path))
    assert raised.value.code == 2

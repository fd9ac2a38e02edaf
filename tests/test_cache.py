"""The cache and the worker processes change how fast a run is, never what it finds."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

import h2dlint
import h2dlint.project.run
import h2dlint.project.summaries
from h2dlint.facts.settings import Settings
from h2dlint.project.cache import Cache, run_key
from h2dlint.project.hotness import propagate
from h2dlint.project.index import ProjectGraph

HOT_CALLER = "from .lib import build\n\ndef forward(ids, dev):\n    return build(ids, dev)\n"
LOOP_CALLER = "from lib import build\n\ndef main(dev):\n    for i in range(9):\n        build([i], dev)\n"
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
    real = h2dlint.project.summaries.summarize_source

    def counting(text, settings, rules):
        count["files"] += 1
        return real(text, settings, rules)

    monkeypatch.setattr(h2dlint.project.summaries, "summarize_source", counting)
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
    for module in (h2dlint.project.summaries, h2dlint.project.run):  # workers for parsing and for placement
        monkeypatch.setattr(module, "SERIAL_BELOW", 2)  # even for a small tree
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


# --- a run after some files changed recomputes hotness only when a change can alter it ------------------------


@pytest.fixture
def propagations(monkeypatch):
    """How many times the next runs propagate heat across the project (rather than reuse the last run's)."""
    count = {"runs": 0}
    real = h2dlint.project.run.propagate

    def counting(graph, settings):
        count["runs"] += 1
        return real(graph, settings)

    monkeypatch.setattr(h2dlint.project.run, "propagate", counting)
    return count


def same_as_without_cache(run_cli, project, *flags):
    """Check `project` with the cache, and assert that a run without it says exactly the same."""
    found = run_cli("check", *flags, str(project))
    assert run_cli("check", "--no-cache", *flags, str(project)) == found
    return found


def test_an_edit_inside_a_function_body_reuses_the_heat(project, run_cli, parses, propagations):
    assert run_cli("check", str(project))[1].count("HTD101") == 1
    # New lines and new calls, none of which can reach a function of the project: propagation is unchanged.
    body = "offset = torch.tensor([0], device=dev)\n    return torch.tensor(ids, device=dev), offset"
    edit(project / "lib.py", "return torch.tensor(ids, device=dev)", body)
    code, out, _ = run_cli("check", str(project))
    assert propagations["runs"] == 1 and parses["files"] == 4  # lib.py parsed again, its heat taken as it was
    assert code == 1 and out.count("HTD101") == 2 and "called from `pkg.caller.forward`" in out
    assert same_as_without_cache(run_cli, project) == (code, out, "")


def test_an_added_call_makes_another_files_function_hot(project, run_cli, propagations):
    edit(project / "caller.py", "return build(ids, dev)", "return ids")
    assert run_cli("check", str(project))[0] == 0
    edit(project / "caller.py", "return ids", "return build(ids, dev)")
    code, out, _ = run_cli("check", str(project))
    assert propagations["runs"] == 2  # the new call changes what propagation sees: it runs again
    assert code == 1 and "lib.py" in out and "called from `pkg.caller.forward`" in out
    assert same_as_without_cache(run_cli, project) == (code, out, "")


def test_a_moved_loop_gets_its_new_line_in_another_files_message(tmp_path, run_cli, parses, propagations):
    package = tmp_path / "loop"
    package.mkdir()
    (package / "lib.py").write_text(LIB)
    (package / "main.py").write_text(LOOP_CALLER)
    assert "line 4 of `loop.main.main`" in run_cli("check", str(package))[1]
    edit(package / "main.py", "def main(dev):\n", "def main(dev):\n    dev = dev\n")
    code, out, _ = run_cli("check", str(package))
    assert propagations["runs"] == 1 and parses["files"] == 3  # only main.py parsed again
    assert code == 1 and "lib.py" in out and "line 5 of `loop.main.main`" in out
    assert same_as_without_cache(run_cli, package) == (code, out, "")


def test_a_moved_loop_of_per_request_code_keeps_its_level(tmp_path, run_cli, propagations):
    package = tmp_path / "loop"
    package.mkdir()
    looping = LIB.replace("    return torch.tensor(ids, device=dev)", "    for i in ids:\n        torch.tensor([i], device=dev)")
    (package / "lib.py").write_text(looping)  # a loop in code a per-request loop calls: per request too
    (package / "main.py").write_text(LOOP_CALLER.replace("def main(dev)", "def get_image_feature(dev)"))
    assert run_cli("check", "--min-level", "per-step", str(package))[0] == 0  # per request: not shown
    edit(package / "main.py", "(dev):\n", "(dev):\n    dev = dev\n")
    code, out, _ = run_cli("check", "--min-level", "per-step", str(package))
    assert propagations["runs"] == 1 and code == 0, out  # the heat reused, the loop still per request
    code, out, _ = run_cli("check", "--output-format", "concise", str(package))
    assert code == 1 and "line 5 of `loop.main.get_image_feature`" in out
    assert same_as_without_cache(run_cli, package, "--output-format", "concise") == (code, out, "")


def test_a_moved_loop_keeps_saying_it_repeats_per_request(tmp_path, run_cli, propagations):
    package = tmp_path / "loop"
    package.mkdir()
    (package / "lib.py").write_text(LIB)
    # `main` runs only because the per-request `get_image_feature` calls it: its loop repeats per request
    caller = LOOP_CALLER + "\n\ndef get_image_feature(dev):\n    return main(dev)\n"
    (package / "main.py").write_text(caller)
    concise = ("check", "--output-format", "concise", str(package))
    assert "line 4 of `loop.main.main` (per request)" in run_cli(*concise)[1]
    edit(package / "main.py", "def main(dev):\n", "def main(dev):\n    dev = dev\n")
    code, out, _ = run_cli(*concise)
    assert propagations["runs"] == 1 and code == 1, out  # the heat reused, the loop moved
    assert "line 5 of `loop.main.main` (per request)" in out
    assert same_as_without_cache(run_cli, package, *concise[1:3]) == (code, out, "")


def test_a_deleted_file_takes_its_heat_with_it(project, run_cli):
    assert run_cli("check", str(project))[0] == 1
    (project / "caller.py").unlink()
    code, out, _ = run_cli("check", str(project))
    assert code == 0, out
    assert same_as_without_cache(run_cli, project) == (code, out, "")


def test_a_new_file_brings_its_heat(project, run_cli):
    (project / "caller.py").unlink()
    assert run_cli("check", str(project))[0] == 0
    (project / "caller.py").write_text(HOT_CALLER)
    code, out, _ = run_cli("check", str(project))
    assert code == 1 and "lib.py" in out
    assert same_as_without_cache(run_cli, project) == (code, out, "")


def test_propagation_reads_nothing_that_moved_loops_ignores():
    """What lets a run reuse the heat when a changed file differs only in what `moved_loops.moved_loops` ignores:
    sites, lines other than a loop call's, and calls that name no function of the project."""
    folder = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")
    run = h2dlint.project.run.analyse_paths([folder], Settings(), jobs=1, use_cache=False)
    names = {f.name for file in run.summaries.values() for f in file.summary.functions.values()}
    stripped = {run.modules[p]: _stripped(file.summary, names) for p, file in run.summaries.items()}
    graph = ProjectGraph(stripped, {m: p for p, m in run.modules.items()})
    assert any(h.hot for h in run.heat.values()) and propagate(graph, Settings()) == run.heat


def _stripped(summary, names):
    functions = {q: replace(f, line=0, end_line=0) for q, f in summary.functions.items()}
    calls = [c._replace(line=0, capture_line=None) for c in summary.calls if c.name in names]
    return replace(summary, functions=functions, calls=calls, sites=[])


def test_a_call_taken_out_of_its_loop_is_recomputed(tmp_path, run_cli, propagations):
    package = tmp_path / "loop"
    package.mkdir()
    (package / "lib.py").write_text(LIB)
    (package / "main.py").write_text(LOOP_CALLER)
    assert run_cli("check", str(package))[0] == 1
    edit(package / "main.py", "    for i in range(9):\n        build([i], dev)", "    build([0], dev)")
    code, out, _ = run_cli("check", str(package))
    assert propagations["runs"] == 2 and code == 0, out
    assert same_as_without_cache(run_cli, package) == (code, out, "")


def test_alternating_between_projects_keeps_each_one_warm(tmp_path, run_cli, parses, propagations):
    trees = []
    for name in ("one", "two"):
        package = tmp_path / name / "pkg"
        package.mkdir(parents=True)
        (package / "caller.py").write_text(HOT_CALLER.replace(".lib", "lib") + f"# {name}\n")
        (package / "lib.py").write_text(LIB + f"# {name}\n")  # contents differ: no summary is shared
        trees.append(package)
    first = [run_cli("check", str(tree)) for tree in trees]
    assert (parses["files"], propagations["runs"]) == (4, 2)
    assert [run_cli("check", str(tree)) for tree in trees] == first
    assert [run_cli("check", str(tree)) for tree in reversed(trees)] == first[::-1]
    assert (parses["files"], propagations["runs"]) == (4, 2)  # each project's last run was kept, and reused


def test_the_cache_keeps_a_bounded_number_of_runs(tmp_path, run_cli, monkeypatch, isolated_cache):
    import h2dlint.project.cache

    monkeypatch.setattr(h2dlint.project.cache, "KEPT_RUNS", 2)
    for n in range(4):
        tree = tmp_path / f"tree{n}"
        tree.mkdir()
        (tree / "lib.py").write_text(LIB)
        run_cli("check", str(tree))
    [folder] = [p for p in isolated_cache.iterdir() if p.is_dir()]
    assert len([p for p in (folder / "runs").iterdir() if not p.name.endswith(".lock")]) == 2

"""The flake8 face, tested through flake8 itself: same findings, rows and columns as `h2dlint check`."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import FIXTURES, PYTHON, REFERENCE

pytest.importorskip("flake8")

# One finding per line, fields separated by a tab, so messages may hold anything else.
FORMAT = "%(path)s\t%(row)d\t%(col)d\t%(code)s\t%(text)s"
HOT = "import torch\n\ndef forward(ids, dev):\n    return torch.tensor(ids, device=dev)\n"
HOT_104 = "import torch\n\ndef step(ids, dev):\n    return torch.tensor(ids).to(dev, non_blocking=True)\n"


def flake8(*args, cwd=None):
    """`flake8 --isolated` (no user or project configuration) in a subprocess: (exit code, findings, stderr)."""
    done = subprocess.run(
        [PYTHON, "-m", "flake8", "--isolated", f"--format={FORMAT}", *map(str, args)],
        capture_output=True, text=True, cwd=cwd,
    )
    findings = []
    for line in done.stdout.splitlines():
        path, row, col, code, text = line.split("\t")
        findings.append((os.path.abspath(os.path.join(cwd or ".", path)), int(row), int(col), code, text))
    return done.returncode, sorted(findings), done.stderr


def h2dlint_json(*paths):
    done = subprocess.run(
        [PYTHON, "-m", "h2dlint", "check", "--output-format", "json", *map(str, paths)],
        capture_output=True, text=True,
    )
    entries = json.loads(done.stdout)
    return sorted(
        (e["filename"], e["location"]["row"], e["location"]["column"], e["code"], e["message"])
        for e in entries
    )


@pytest.mark.parametrize("folder", [REFERENCE, FIXTURES], ids=["reference", "all-fixtures"])
def test_flake8_reports_what_the_cli_reports(folder):
    code, findings, stderr = flake8("--select", "HTD", folder)
    expected = h2dlint_json(folder)
    assert len(expected) >= 2
    assert stderr == ""
    assert code == 1
    assert findings == expected


def test_flake8_select_and_extend_ignore_pick_codes(tmp_path):
    (tmp_path / "a.py").write_text(HOT, encoding="utf-8")
    (tmp_path / "b.py").write_text(HOT_104, encoding="utf-8")

    def codes(*flags):
        return [finding[3] for finding in flake8(*flags, tmp_path)[1]]

    assert codes("--select", "HTD") == ["HTD101", "HTD104"]
    assert codes("--select", "HTD104") == ["HTD104"]
    assert codes("--select", "HTD", "--extend-ignore", "HTD101") == ["HTD104"]
    assert codes("--select", "F") == []
    assert {"HTD101", "HTD104"} <= set(codes())  # on by default, beside flake8's own checks


def test_noqa_comments_work_under_flake8(tmp_path):
    source = (
        "import torch\n\ndef forward(ids, dev):\n"
        "    a = torch.tensor(ids, device=dev)  # noqa: HTD101\n"
        "    b = torch.tensor(ids, device=dev)  # noqa: HTD104\n"
        "    c = torch.tensor(ids, device=dev)  # noqa\n"
        "    return a, b, c\n"
    )
    (tmp_path / "m.py").write_text(source, encoding="utf-8")
    assert [(f[1], f[3]) for f in flake8("--select", "HTD", tmp_path)[1]] == [(5, "HTD101")]


def test_flake8_reads_stdin_like_a_file(tmp_path):
    done = subprocess.run(
        [PYTHON, "-m", "flake8", "--isolated", "--select", "HTD", "-"], input=HOT, capture_output=True, text=True
    )
    assert done.stdout.startswith("stdin:4:12: HTD101 ")


def test_syntax_errors_are_left_to_flake8(tmp_path):
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n    torch.tensor(x, device=d)\n", encoding="utf-8")
    _, findings, _ = flake8("--select", "HTD,E999", tmp_path)
    assert [f[3] for f in findings] == ["E999"]


def test_a_deeply_nested_file_gives_under_flake8_what_it_gives_the_cli(tmp_path):
    # Valid Python near the nesting depth that the analysis copes with: if the CLI cannot analyse it, flake8
    # says so once (HTD001); if it can, flake8 reports the same. Much deeper, pyflakes (which flake8 also
    # runs) fails first, so HTD001 itself is pinned down by the next test.
    path = tmp_path / "deep.py"
    path.write_text("import torch\nx = torch.tensor(1, device=d)" + ".a" * 400 + "\n", encoding="utf-8")
    cli = subprocess.run([PYTHON, "-m", "h2dlint", "check", str(path)], capture_output=True, text=True)
    code, findings, stderr = flake8("--select", "HTD", path)
    assert stderr == ""
    if cli.stderr:  # the CLI names the file and the reason; flake8 says the same, once, at 1:1
        reason = cli.stderr.split(": error: ", 1)[1].strip()
        assert findings == [
            (str(path), 1, 1, "HTD001", f"h2dlint could not analyse this file: {reason}")
        ]
    else:  # an analysis that copes with the nesting finds what the CLI finds
        assert findings == h2dlint_json(path)


def flake8_here(folder, select):
    """flake8's own application, in this process (so that the core can be patched), on `folder/m.py` holding
    HOT, with one job: its exit code."""
    from flake8.main.application import Application

    (folder / "m.py").write_text(HOT, encoding="utf-8")
    app = Application()
    app.run(["--isolated", "--jobs", "1", "--select", select, f"--format={FORMAT}", str(folder / "m.py")])
    return app.exit_code()


def test_an_internal_failure_is_one_htd001_finding_not_a_crash(tmp_path, monkeypatch, capsys):
    """Driven through flake8's own application, in this process, so that the core can be made to fail."""
    import h2dlint.faces.flake8_plugin

    def broken(*args):
        raise KeyError("boom")

    monkeypatch.setattr(h2dlint.faces.flake8_plugin, "_check", broken)
    assert flake8_here(tmp_path, "HTD") == 1
    [line] = capsys.readouterr().out.splitlines()
    assert line.split("\t")[1:] == [
        "1", "1", "HTD001", "h2dlint could not analyse this file: internal error (KeyError: 'boom'); please report it"
    ]


def test_files_without_torch_are_not_parsed(monkeypatch):
    import h2dlint.checker.analyzer
    from h2dlint.faces.flake8_plugin import Flake8Checker

    def must_not_analyse(*args, **kwargs):
        raise AssertionError("a file without torch was analysed")

    monkeypatch.setattr(h2dlint.checker.analyzer, "summarize", must_not_analyse)
    lines = ["import numpy as np\n", "def forward(x):\n", "    return np.array(x, device='cuda')\n"]
    assert list(Flake8Checker(None, lines, "m.py").run()) == []


def _two_file_project(folder, marker="pyproject.toml"):
    (folder / marker).write_text("[project]\nname = 'demo'\n" if marker.endswith(".toml") else "", encoding="utf-8")
    (folder / "scheduler.py").write_text(
        "from batch import make_ids\n\n\ndef forward(reqs, device):\n    return make_ids(reqs, device)\n",
        encoding="utf-8",
    )
    (folder / "batch.py").write_text(
        "import torch\n\n\ndef make_ids(reqs, device):\n    return torch.tensor(reqs, device=device)\n",
        encoding="utf-8",
    )


@pytest.mark.parametrize("marker", ["pyproject.toml", "setup.cfg", "setup.py"])
def test_flake8_on_one_file_gets_the_projects_heat_with_an_empty_cache(tmp_path, isolated_cache, marker):
    _two_file_project(tmp_path, marker)
    assert not isolated_cache.exists()
    [(_, row, col, code, text)] = flake8("--select", "HTD", "batch.py", cwd=tmp_path)[1]
    assert (row, col, code) == (5, 12, "HTD101") and "scheduler.forward" in text
    warm = flake8("--select", "HTD", "batch.py", cwd=tmp_path)[1]  # now with the index the first run built
    assert warm == [(str(tmp_path / "batch.py"), row, col, code, text)] == h2dlint_json(tmp_path / "batch.py")


def test_flake8_sees_an_edit_in_another_file_of_the_project(tmp_path):
    _two_file_project(tmp_path)
    assert len(flake8("--select", "HTD", "batch.py", cwd=tmp_path)[1]) == 1
    (tmp_path / "scheduler.py").write_text("def forward(reqs, device):\n    return None\n", encoding="utf-8")
    assert flake8("--select", "HTD", "batch.py", cwd=tmp_path)[1] == []


def test_without_a_project_root_flake8_reasons_about_the_paths_it_was_given(tmp_path):
    _two_file_project(tmp_path)
    (tmp_path / "pyproject.toml").unlink()
    assert flake8("--select", "HTD", "batch.py", cwd=tmp_path)[1] == []  # batch.py alone: nothing is hot
    assert len(flake8("--select", "HTD", ".", cwd=tmp_path)[1]) == 1  # both files, as `h2dlint check .`


def test_many_workers_and_an_empty_cache_give_what_the_cli_gives(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    _two_file_project(tmp_path)
    for n in range(12):  # enough files for flake8 to hand them to several workers
        (package / f"m{n}.py").write_text(HOT, encoding="utf-8")
    code, findings, stderr = flake8("--select", "HTD", "--jobs", "3", ".", cwd=tmp_path)
    assert stderr == "" and len(findings) == 13
    assert findings == h2dlint_json(tmp_path)


def test_the_plugin_does_nothing_when_no_htd_code_is_selected(tmp_path, monkeypatch, capsys):
    import h2dlint.faces.flake8_plugin

    def must_not_run(*args):
        raise AssertionError("the plugin analysed a file though no HTD code is selected")

    monkeypatch.setattr(h2dlint.faces.flake8_plugin, "_check", must_not_run)
    assert flake8_here(tmp_path, "F") == 0 and capsys.readouterr().out == ""
    h2dlint.faces.flake8_plugin._RUN["selected"] = True  # as the next flake8 run in this process would set it

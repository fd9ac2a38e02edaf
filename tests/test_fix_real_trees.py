"""benchmarks/fix_real_trees.py: end to end on a small tree, and its checks on changes that must fail them."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys

import pytest
from conftest import FIXTURES, PYTHON, REFERENCE, ROOT

SCRIPT = ROOT / "benchmarks" / "fix_real_trees.py"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _load_script():
    spec = importlib.util.spec_from_file_location("fix_real_trees", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


fix_real_trees = _load_script()


@pytest.fixture
def small_tree(tmp_path):
    """The reference, the fix fixtures' inputs, and a file that does not parse."""
    tree = tmp_path / "tree"
    shutil.copytree(REFERENCE, tree)
    (tree / "cases").mkdir()
    for case in (FIXTURES / "fix").glob("*.in.py"):
        shutil.copy(case, tree / "cases" / case.name.replace(".in.py", ".py"))
    (tree / "broken.py").write_text("import torch\ntorch.tensor(x, device=d\n", encoding="utf-8")
    return tree


def _snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _findings(tree):
    done = subprocess.run([PYTHON, "-m", "h2dlint", "check", "--no-cache", "--output-format", "json", str(tree)],
                          capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout)


@needs_git
def test_it_fixes_a_copy_and_finds_nothing_wrong(small_tree, tmp_path):
    original = _snapshot(small_tree)
    scratch, numbers = tmp_path / "scratch", tmp_path / "numbers.json"
    done = subprocess.run(
        [PYTHON, str(SCRIPT), f"small={small_tree}", "--scratch", str(scratch), "--json", str(numbers)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [report] = json.loads(numbers.read_text())
    findings = _findings(small_tree)
    assert report["findings"] == len(findings)
    assert report["fixable"] == sum(f["fix"] is not None for f in findings)
    assert 0 < report["fixed"] and report["fixed"] + report["left"] == report["findings"]
    assert report["hunks"] >= report["files_changed"] > 0
    assert report["failures"] == 0 and report["crashes"] == [] and report["not_compiling"] == []
    assert [line.split(": error: ")[0].endswith("broken.py") for line in report["file_errors"]] == [True]
    assert _snapshot(small_tree) == original  # the tree itself is only read
    assert report["findings_in_original"] == report["findings"]
    copy = scratch / "small" / small_tree.name  # the tree's own folder name: module names come from it
    assert _findings(copy) == [f for f in _findings(copy) if f["fix"] is None]
    assert "| small | " in done.stdout


def _edits(old, *spans, imports=()):
    """FileEdits for the given (text before, text) spans of `old`: each edit covers `text` after `before`."""
    edits = fix_real_trees.FileEdits()
    for before, text in spans:
        start = old.index(before) + len(before)
        edits.regions.append((start, start + len(text)))
    for line in imports:
        edits.regions.append((0, 0))
        edits.imports.append((0, 0))
        edits.import_lines.add(line)
    return edits


OLD = "import torch\nx = torch.tensor(a, device=d)  # keep\n"
IMPORT = "from h2dlint.runtime import h2d_tensor"


def _within(new, edits, old=OLD):
    return fix_real_trees.hunk_within_edits(old, (0, len(old)), new, edits)


def test_a_change_inside_the_recorded_edits_passes():
    edits = _edits(OLD, ("x = ", "torch.tensor"), imports=[IMPORT])
    assert _within(f"{IMPORT}\nimport torch\nx = h2d_tensor(a, device=d)  # keep\n", edits)


@pytest.mark.parametrize("new", [
    "import torch\nx = h2d_tensor(a, device=d)  # kept\n",  # a comment changed
    "import torch\nx = h2d_tensor(b, device=d)  # keep\n",  # an argument changed
    "import torch\ny = h2d_tensor(a, device=d)  # keep\n",  # the target changed
])
def test_a_change_outside_the_recorded_edits_fails(new):
    assert not _within(new, _edits(OLD, ("x = ", "torch.tensor")))


def test_an_import_gap_holds_only_helper_imports():
    edits = _edits(OLD, ("x = ", "torch.tensor"), imports=[IMPORT])
    assert not _within(f"{IMPORT}\nimport os\nimport torch\nx = h2d_tensor(a, device=d)  # keep\n", edits)


def test_a_hunk_with_no_recorded_edit_fails():
    assert not _within("import torch\nx = 1\n", fix_real_trees.FileEdits())


def _run(returncode, stderr):
    return fix_real_trees.Run(["--fix"], returncode, "", stderr, 0.0, 0.0)


def test_documented_file_errors_are_not_crashes():
    run = _run(1, "a.py: error: syntax error at 2:7: invalid syntax\nWould fix 0 findings.\n")
    assert fix_real_trees.classify_stderr(run) == (["a.py: error: syntax error at 2:7: invalid syntax"], [])


@pytest.mark.parametrize("returncode, stderr", [
    (1, "Traceback (most recent call last):\n  File \"x\", line 1\nKeyError: 'a'\n"),
    (1, "a.py: error: internal error (KeyError: 'a'); please report it\n"),
    (2, ""),
    (-9, ""),
])
def test_anything_else_is_a_crash(returncode, stderr):
    _, crashes = fix_real_trees.classify_stderr(_run(returncode, stderr))
    assert crashes

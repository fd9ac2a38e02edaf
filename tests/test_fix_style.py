"""Fixed code a reviewer would merge: the fix adds no isort or pycodestyle E30x (blank lines) complaint, and fixed
modules still import with torch installed (TorchScript code is left alone; guards stay guards)."""

from __future__ import annotations

import importlib.util
import warnings

import pytest
from conftest import FIXTURES

from h2dlint.facts.settings import Settings
from h2dlint.fixing.autofix import fix_source

isort = pytest.importorskip("isort")
pycodestyle = pytest.importorskip("pycodestyle")

CASES = sorted((FIXTURES / "fix").glob("*.in.py"))
# The fixtures' imports as a project sees them: its own package first-party, the libraries third-party.
ISORT_SETTINGS = dict(known_first_party=["mypkg"], known_third_party=["h2dlint", "torch", "numpy"])


def _blank_line_problems(text):
    report = []

    class Collect(pycodestyle.StandardReport):
        def error(self, line_number, offset, text, check):
            if text.startswith("E30"):
                report.append(f"{line_number}: {text}")

    style = pycodestyle.StyleGuide(quiet=True, reporter=Collect, select=["E30"])
    checker = pycodestyle.Checker(lines=text.splitlines(keepends=True), options=style.options)
    checker.check_all()
    return report


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name[: -len(".in.py")])
def test_the_fix_adds_no_isort_or_blank_line_complaint(case):
    before = case.read_text(encoding="utf-8")
    after, _, _ = fix_source(before, Settings(), unsafe=True)
    if isort.check_code(before, **ISORT_SETTINGS):
        assert isort.check_code(after, **ISORT_SETTINGS, show_diff=True)
    assert len(_blank_line_problems(after)) <= len(_blank_line_problems(before)), _blank_line_problems(after)


def test_the_style_fixtures_are_clean_before_the_fix():
    """The import fixtures are written the way isort and pycodestyle want, so the test above has teeth."""
    for name in ("torch_guard", "try_guard", "merge_import", "import_sections", "jit"):
        text = (FIXTURES / "fix" / f"{name}.in.py").read_text(encoding="utf-8")
        assert isort.check_code(text, **ISORT_SETTINGS), name
        assert _blank_line_problems(text) == [], name


@pytest.mark.parametrize("name", ["jit", "try_guard", "constants", "safe_only"])
def test_the_fixed_module_still_imports_with_torch(name, tmp_path):
    pytest.importorskip("torch")
    fixed, count, _ = fix_source((FIXTURES / "fix" / f"{name}.in.py").read_text(encoding="utf-8"), Settings(), unsafe=True)
    assert count > 0
    path = tmp_path / f"fixed_{name}.py"  # TorchScript reads the source of what it compiles
    path.write_text(fixed, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"fixed_{name}", path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.script is deprecated, not gone
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_torch_guard_keeps_the_module_importable_without_torch():
    fixed, _, _ = fix_source((FIXTURES / "fix" / "torch_guard.in.py").read_text(encoding="utf-8"), Settings())
    guard = fixed.index("if is_torch_available():")
    assert fixed.index("from h2dlint.runtime import h2d_tensor") > guard
    assert "\n    from h2dlint.runtime import h2d_tensor\n" in fixed  # inside the guard's block

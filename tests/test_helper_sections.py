"""The helper's import in the isort section isort wants it in, which depends on whose module the helper is.

A helper installed apart from the project (`h2dlint.runtime`) is third-party: it joins torch's section. A helper
of the project's own (vendored with `vendor-helper`, or h2dlint's own code) is first-party: isort, run at the
project's root, puts it in the first-party section after torch's. Placing it beside `import torch` made isort
fail on sglang files whenever isort saw the helper as first-party (run from h2dlint's checkout), and on every
file of a project with a vendored helper that has no first-party import of the helper's package yet."""

from __future__ import annotations

import pytest
from conftest import HOT
from test_fix_style import _blank_line_problems

from h2dlint.facts.settings import Settings
from h2dlint.fixing.autofix import fix_source
from h2dlint.project.config import settings_for_path
from h2dlint.project.helper_module import is_first_party

isort = pytest.importorskip("isort")

VENDORED = Settings(helper_module="mypkg.h2d_runtime", helper_first_party=True)
# isort run at the root of a project whose own packages are `mypkg` and `otherpkg`.
ISORT_SETTINGS = dict(known_first_party=["mypkg", "otherpkg"], known_third_party=["torch", "numpy", "h2dlint"])
CALL = "\n\ndef forward(ids, device):\n    return torch.tensor(list(ids), device=device)\n"

FIRST_PARTY_CASES = {
    # sglang's layers/moe/expert_pack.py: stdlib and torch, then code. The helper opens a section of its own.
    "no first-party section": ("import logging\n\nimport torch\n\nlogger = logging.getLogger(__name__)\n" + CALL),
    "torch section ends the imports": "import os\n\nimport numpy as np\nimport torch\n" + CALL,
    # Another first-party package's section follows torch's: the helper joins it, in isort's order.
    "another first-party section": "import torch\n\nfrom otherpkg.batch import Batch\n" + CALL,
    "an earlier first-party import": "import torch\n\nfrom mypkg.a import b\nfrom otherpkg.c import d\n" + CALL,
    # Relative imports make the local section, which comes after the first-party one.
    "a local section": "import torch\n\nfrom .utils import helper\n" + CALL,
    "inside a guard": (
        "from .utils import is_torch_available\n\nif is_torch_available():\n    import torch\n\n    x = 1\n" + CALL
    ),
}


@pytest.mark.parametrize("source", FIRST_PARTY_CASES.values(), ids=FIRST_PARTY_CASES.keys())
def test_a_first_party_helper_goes_where_isort_wants_it(source):
    assert isort.check_code(source, **ISORT_SETTINGS), "the fixture must be isort-clean before the fix"
    fixed, count, _ = fix_source(source, VENDORED, unsafe=True)
    assert count == 1 and "from mypkg.h2d_runtime import h2d_tensor\n" in fixed
    assert isort.check_code(fixed, **ISORT_SETTINGS, show_diff=True)
    assert len(_blank_line_problems(fixed)) <= len(_blank_line_problems(source)), _blank_line_problems(fixed)


def test_the_same_file_with_a_third_party_helper_keeps_it_beside_torch():
    source = FIRST_PARTY_CASES["no first-party section"]
    fixed, _, _ = fix_source(source, Settings(), unsafe=True)
    assert "import torch\nfrom h2dlint.runtime import h2d_tensor\n" in fixed
    assert isort.check_code(fixed, **ISORT_SETTINGS, show_diff=True)


def test_a_vendored_helper_is_first_party_in_flat_and_src_layouts_and_from_any_folder(tmp_path, monkeypatch):
    for layout in ("flat", "src"):
        root = tmp_path / layout
        package = root / "src" / "mypkg" if layout == "src" else root / "mypkg"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("", encoding="utf-8")
        (package / "h2d_runtime.py").write_text("", encoding="utf-8")
        (root / "pyproject.toml").write_text('[tool.h2dlint]\nhelper-module = "mypkg.h2d_runtime"\n', encoding="utf-8")
        model = package / "model.py"
        model.write_text(HOT, encoding="utf-8")
        monkeypatch.chdir(tmp_path)  # not the project's folder: the project is found from the file
        assert settings_for_path(str(model)).helper_first_party, layout


def test_the_current_folder_does_not_make_the_helper_first_party(tmp_path, monkeypatch):
    """Run from h2dlint's own checkout (which holds `h2dlint/`), a user's file still imports a third-party helper,
    as isort run at that user's project root sees it."""
    model = tmp_path / "model.py"
    model.write_text(HOT, encoding="utf-8")
    (tmp_path / "elsewhere" / "h2dlint").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert not settings_for_path(str(model)).helper_first_party


def test_code_of_the_helpers_own_package_imports_it_as_first_party(tmp_path):
    package = tmp_path / "h2dlint"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "ops.py").write_text(HOT, encoding="utf-8")
    assert is_first_party("h2dlint.runtime", None, str(package / "ops.py"))
    assert not is_first_party("otherpkg.runtime", None, str(package / "ops.py"))

"""The helper dependency, decided up front: `vendor-helper` names the module from the package root (src and flat
layouts) and refuses bad paths in one line; `--fix` refuses a `helper-module` nobody can import; libcst's tool
lists h2dlint's codemod without running h2dlint."""

from __future__ import annotations

import subprocess

import pytest
from conftest import HOT, PYTHON

from h2dlint.project.helper_module import helper_module_problem, module_name_for


@pytest.mark.parametrize(
    "layout, folder, module",
    [("src", "src/mypkg/ops", "mypkg.ops.h2d_runtime"), ("flat", "mypkg", "mypkg.h2d_runtime"),
     ("no package", "scripts", "h2d_runtime")],
)
def test_vendor_helper_names_the_module_from_the_package_root(tmp_path, run_cli, layout, folder, module):
    target = tmp_path / folder
    target.mkdir(parents=True)
    parts = folder.split("/")
    for depth in range(1, len(parts) + 1):
        if parts[depth - 1] not in ("src", "scripts"):
            (tmp_path.joinpath(*parts[:depth]) / "__init__.py").write_text("", encoding="utf-8")
    code, out, err = run_cli("vendor-helper", str(target), cwd=tmp_path / parts[0])  # from another folder
    assert (code, err) == (0, "")
    assert f'helper-module = "{module}"' in out
    assert module_name_for(str(target / "h2d_runtime.py")) == module


@pytest.mark.parametrize("path", ["missing/h2d.py", "h2d_runtime", "notes.txt"])
def test_vendor_helper_refuses_a_path_it_cannot_write_in_one_line(tmp_path, run_cli, path):
    code, out, err = run_cli("vendor-helper", str(tmp_path / path))
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("h2dlint: error: ") and "Traceback" not in err
    assert not (tmp_path / path).exists()


def test_helper_module_must_be_a_project_module_or_importable(tmp_path):
    (tmp_path / "src" / "mypkg").mkdir(parents=True)
    (tmp_path / "src" / "mypkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "src" / "mypkg" / "h2d.py").write_text("", encoding="utf-8")
    roots = [str(tmp_path), str(tmp_path / "src")]
    assert helper_module_problem("mypkg.h2d", roots) is None
    assert helper_module_problem("h2dlint.runtime", roots) is None  # importable
    assert "neither a module of the project nor importable" in helper_module_problem("mypkg.missing", roots)
    assert helper_module_problem("no_such_package_anywhere.h2d", roots) is not None


def test_fix_refuses_a_helper_module_that_does_not_exist(tmp_path, run_cli):
    (tmp_path / "pyproject.toml").write_text('[tool.h2dlint]\nhelper-module = "mypkg.gone"\n', encoding="utf-8")
    (tmp_path / "hot.py").write_text(HOT, encoding="utf-8")
    code, out, err = run_cli("check", "--fix", "--unsafe-fixes", str(tmp_path))
    assert code == 2 and "helper-module `mypkg.gone`" in err and len(err.splitlines()) == 1
    assert (tmp_path / "hot.py").read_text(encoding="utf-8") == HOT


def test_fix_names_vendor_helper_when_it_used_the_default_helper(tmp_path, run_cli):
    (tmp_path / "hot.py").write_text(HOT, encoding="utf-8")
    code, out, _ = run_cli("check", "--fix", "--unsafe-fixes", str(tmp_path))
    assert code == 0 and out.splitlines()[-1].startswith("Fixed code imports `h2dlint.runtime`")
    assert "h2dlint vendor-helper PATH" in out.splitlines()[-1]


def test_libcst_tool_lists_the_codemod_with_h2dlint_in_its_modules(tmp_path):
    (tmp_path / ".libcst.codemod.yaml").write_text("modules:\n- 'h2dlint'\n", encoding="utf-8")
    done = subprocess.run([PYTHON, "-m", "libcst.tool", "list"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "FixHostToDeviceCopies" in done.stdout
    assert "usage: h2dlint" not in done.stdout + done.stderr  # `h2dlint.__main__` did not run the CLI

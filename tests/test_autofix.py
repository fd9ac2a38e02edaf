"""Fixing files: what is written, what is kept byte for byte, and what the command line reports."""

from __future__ import annotations

import os
import stat
import subprocess

import pytest
from conftest import PYTHON, ROOT

from h2dlint.facts.settings import Settings
from h2dlint.facts.sources import SourceError
from h2dlint.fixing.autofix import fix_file, write_atomically

HOT = "import torch\n\n\ndef forward(ids, device):\n    return torch.tensor(ids, device=device)  # keep me\n"
FIXED = (
    "import torch\nfrom h2dlint.runtime import h2d_tensor\n\n\n"
    "def forward(ids, device):\n    return h2d_tensor(ids, device=device)  # keep me\n"
)


def test_fixes_a_file_and_keeps_everything_else(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(HOT, encoding="utf-8")
    outcome = fix_file(str(path), Settings(), unsafe=True)
    assert (outcome.fixed, outcome.remaining, outcome.error) == (1, [], None)
    assert path.read_text(encoding="utf-8") == FIXED


@pytest.mark.parametrize(
    "encoding, prefix, newline",
    [("utf-8", b"", "\r\n"), ("utf-8-sig", b"", "\n"), ("latin-1", b"# -*- coding: latin-1 -*-\n", "\n")],
    ids=["crlf", "bom", "latin-1-cookie"],
)
def test_keeps_line_endings_bom_and_encoding(tmp_path, encoding, prefix, newline):
    path = tmp_path / "model.py"
    original = prefix + (HOT.replace("keep me", "gardé") ).replace("\n", newline).encode(encoding)
    path.write_bytes(original)
    fix_file(str(path), Settings(), unsafe=True)
    expected = prefix + FIXED.replace("keep me", "gardé").replace("\n", newline).encode(encoding)
    assert path.read_bytes() == expected


def test_keeps_mixed_line_endings_of_untouched_lines(tmp_path):
    path = tmp_path / "model.py"
    path.write_bytes(HOT.replace("\n", "\r\n", 1).encode())  # only the first line ends in CRLF
    fix_file(str(path), Settings(), unsafe=True)
    assert path.read_bytes() == FIXED.replace("\n", "\r\n", 2).encode()  # the import takes the file's first


def test_keeps_the_file_mode_and_writes_through_a_symlink(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(HOT, encoding="utf-8")
    os.chmod(path, 0o751)
    link = tmp_path / "link.py"
    link.symlink_to(path)
    fix_file(str(link), Settings(), unsafe=True)
    assert link.is_symlink() and path.read_text(encoding="utf-8") == FIXED
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".h2dlint-")] == []


def test_refuses_to_overwrite_a_file_that_changed_since_it_was_read(tmp_path):
    path = tmp_path / "model.py"
    path.write_text("new contents\n", encoding="utf-8")
    with pytest.raises(SourceError, match="changed on disk"):
        write_atomically(str(path), b"fixed\n", expected=b"old contents\n")
    assert path.read_text(encoding="utf-8") == "new contents\n"


def test_check_fix_reports_a_file_edited_while_it_was_being_fixed_and_keeps_the_edit(tmp_path, run_cli, monkeypatch):
    """An editor saves the file after `--fix` read it and before it writes: the edit wins, the run says so."""
    import h2dlint.fixing.autofix as autofix

    edited, other = tmp_path / "a.py", tmp_path / "b.py"
    edited.write_text(HOT, encoding="utf-8")
    other.write_text(HOT, encoding="utf-8")
    saved = HOT + "# saved by the editor\n"
    real_fix_source = autofix.fix_source

    def fix_source_while_an_editor_saves(text, *args, **kwargs):
        if edited.read_text(encoding="utf-8") == HOT:
            edited.write_text(saved, encoding="utf-8")
        return real_fix_source(text, *args, **kwargs)

    monkeypatch.setattr(autofix, "fix_source", fix_source_while_an_editor_saves)
    code, _, err = run_cli("check", "--fix", "--unsafe-fixes", "--no-cache", "-j", "1", str(tmp_path))
    assert (code, err) == (1, f"{edited}: error: changed on disk while it was being fixed; not written\n")
    assert edited.read_text(encoding="utf-8") == saved
    assert other.read_text(encoding="utf-8") == FIXED


def test_check_fix_reports_what_is_left_and_exits_by_it(tmp_path, run_cli):
    fixable = tmp_path / "a.py"
    fixable.write_text(HOT, encoding="utf-8")
    unfixable = tmp_path / "b.py"
    unfixable.write_text(HOT.replace("device=device)", "device=device, **kw)"), encoding="utf-8")
    code, out, err = run_cli("check", "--fix", "--unsafe-fixes", "--show-reasons", str(tmp_path))
    assert code == 1 and err == ""
    assert fixable.read_text(encoding="utf-8") == FIXED
    assert "b.py:5:12: HTD101" in out and "Not fixed automatically" in out
    assert "Found 2 findings (1 fixed, 1 remaining)." in out
    unfixable.write_text("x = 1\n", encoding="utf-8")
    assert run_cli("check", "--fix", "--unsafe-fixes", str(tmp_path))[0] == 0


def test_diff_prints_the_change_writes_nothing_and_exits_1(tmp_path, run_cli):
    path = tmp_path / "a.py"
    path.write_text(HOT, encoding="utf-8")
    code, out, err = run_cli("check", "--diff", "--unsafe-fixes", str(path))
    assert code == 1 and "Would fix 1 finding." in err
    assert "-    return torch.tensor(ids, device=device)  # keep me" in out
    assert "+    return h2d_tensor(ids, device=device)  # keep me" in out
    assert "+from h2dlint.runtime import h2d_tensor" in out
    assert path.read_text(encoding="utf-8") == HOT
    path.write_text(FIXED, encoding="utf-8")
    assert run_cli("check", "--diff", "--unsafe-fixes", str(path))[:2] == (0, "")


def test_fix_and_diff_are_mutually_exclusive(run_cli):
    with pytest.raises(SystemExit) as exited:
        run_cli("check", "--fix", "--unsafe-fixes", "--diff", ".")
    assert exited.value.code == 2


def test_helper_module_setting_changes_the_import():
    from h2dlint.fixing.autofix import fix_source

    fixed, _, _ = fix_source(HOT, Settings(helper_module="mypkg._h2d"), unsafe=True)
    assert "from mypkg._h2d import h2d_tensor\n" in fixed


def test_vendor_helper_writes_the_runtime_source_once(tmp_path, run_cli):
    code, out, _ = run_cli("vendor-helper", str(tmp_path))
    written = tmp_path / "h2d_runtime.py"
    assert code == 0 and written.read_bytes() == (ROOT / "h2dlint" / "runtime.py").read_bytes()
    assert "helper-module" in out
    assert "import h2dlint" not in written.read_text(encoding="utf-8")  # it must stand alone
    written.write_text("mine\n", encoding="utf-8")
    assert run_cli("vendor-helper", str(written))[0] == 2
    assert run_cli("vendor-helper", str(written), "--force")[0] == 0


def _codemod(path, *args):
    return subprocess.run(
        [PYTHON, "-m", "libcst.tool", "codemod", "-x", "--no-format", "h2dlint.codemod.FixHostToDeviceCopies", "--unsafe-fixes",
         *args, str(path)],
        cwd=path.parent, capture_output=True, text=True, timeout=120,
    )


def test_the_fix_runs_as_a_libcst_codemod(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(HOT, encoding="utf-8")
    done = _codemod(path)
    assert done.returncode == 0, done.stderr
    assert path.read_text(encoding="utf-8") == FIXED


def test_check_fix_keeps_classic_mac_line_endings_that_the_codemod_skips(tmp_path, run_cli):
    source = HOT.replace("\n", "\r") + "\r\r"  # libcst's own parse drops the blank lines at the end
    path = tmp_path / "model.py"
    path.write_bytes(source.encode())
    done = _codemod(path)
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == source.encode()  # skipped, not rewritten without its blank lines
    assert run_cli("check", "--fix", "--unsafe-fixes", str(path))[0] == 0
    assert path.read_bytes() == (FIXED.replace("\n", "\r") + "\r\r").encode()


def test_the_codemod_reads_the_helper_module_from_pyproject_or_its_flag(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.h2dlint]\nhelper-module = "mypkg._h2d"\n', encoding="utf-8")
    path = tmp_path / "model.py"
    path.write_text(HOT, encoding="utf-8")
    assert _codemod(path).returncode == 0
    assert "from mypkg._h2d import h2d_tensor\n" in path.read_text(encoding="utf-8")
    path.write_text(HOT, encoding="utf-8")
    assert _codemod(path, "--helper-module", "other.h2d").returncode == 0
    assert "from other.h2d import h2d_tensor\n" in path.read_text(encoding="utf-8")


def test_fix_fixes_what_the_project_check_reports_across_files(tmp_path, run_cli):
    (tmp_path / "scheduler.py").write_text(
        "from batch import make_ids\n\n\ndef forward(reqs, device):\n    return make_ids(reqs, device)\n",
        encoding="utf-8",
    )
    helper = tmp_path / "batch.py"
    helper.write_text(
        "import torch\n\n\ndef make_ids(reqs, device):\n    return torch.tensor(reqs, device=device)\n",
        encoding="utf-8",
    )
    code, out, _ = run_cli("check", "--no-cache", str(tmp_path))
    assert code == 1 and "batch.py:5:12: HTD101" in out  # hot only through scheduler.forward, in another file
    code, out, _ = run_cli("check", "--fix", "--unsafe-fixes", "--no-cache", str(tmp_path))
    assert code == 0 and "Found 1 finding (1 fixed, 0 remaining)." in out
    assert "return h2d_tensor(reqs, device=device)" in helper.read_text(encoding="utf-8")


def test_check_fix_imports_from_the_configured_helper_module(tmp_path, run_cli):
    (tmp_path / "pyproject.toml").write_text('[tool.h2dlint]\nhelper-module = "mypkg._h2d"\n', encoding="utf-8")
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "mypkg" / "_h2d.py").write_text("", encoding="utf-8")  # the vendored helper
    path = tmp_path / "model.py"
    path.write_text(HOT, encoding="utf-8")
    assert run_cli("check", "--fix", "--unsafe-fixes", "--no-cache", str(tmp_path))[0] == 0
    # The vendored helper is the project's own: isort wants it in a first-party section of its own.
    first_party = FIXED.replace("import torch\nfrom h2dlint.runtime", "import torch\n\nfrom mypkg._h2d")
    assert path.read_text(encoding="utf-8") == first_party


def test_a_fix_whose_file_would_not_compile_is_reported_not_written(tmp_path, run_cli):
    """Python parses `return` at module level but refuses to compile it; the fixer checks with the compiler."""
    path = tmp_path / "model.py"
    path.write_text(HOT + "return 5\n", encoding="utf-8")
    code, _, err = run_cli("check", "--fix", "--unsafe-fixes", "--no-cache", str(path))
    assert (code, err) == (1, f"{path}: error: Python does not compile this file ('return' outside function); not fixed\n")
    assert path.read_text(encoding="utf-8") == HOT + "return 5\n"


def test_a_device_literal_in_an_f_string_takes_the_quote_the_f_string_does_not_use():
    from h2dlint.fixing.transform import rewrite_source
    from h2dlint.project.findings import check_source

    def rewritten(expression):
        text = f"import torch\n\ndef forward(ids):\n    return {expression}\n"
        fixes = [d.fix for d in check_source(text, Settings()) if d.fix is not None]
        return rewrite_source(text, fixes, "h2dlint.runtime")

    double = rewritten('f"{torch.tensor(ids).cuda()}"')
    assert "f\"{h2d_tensor(ids, device='cuda')}\"" in double.code
    single = rewritten("f'{torch.tensor(ids).cuda()}'")
    assert "f'{h2d_tensor(ids, device=\"cuda\")}'" in single.code
    both = rewritten("f\"{f'{torch.tensor(ids).cuda()}'}\"")  # no quote left before Python 3.12: not fixed
    assert not both.applied and "both quotes" in both.rejected[0][1]


def test_a_fix_the_rewrite_refuses_is_left_unfixable_and_says_why():
    from h2dlint.fixing.autofix import fix_source

    text = "import torch\n\ndef forward(ids):\n    return f\"{f'{torch.tensor(ids).cuda()}'}\"\n"
    after, fixed, remaining = fix_source(text, Settings(), unsafe=True)
    assert (after, fixed) == (text, 0)
    [left] = remaining
    assert left.fix is None and "The fix was not made: inside f-strings that use both quotes" in left.remedy

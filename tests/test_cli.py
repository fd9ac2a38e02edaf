"""The `h2dlint` command: paths, selection, output formats, rule docs and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest
from conftest import HOT, HOT_104, PYTHON, REFERENCE, ROOT, write

from h2dlint.rules import ALL_RULES, OBSERVED_RULES

CLEAN = "import torch\n\ndef __init__(ids, dev):\n    return torch.tensor(ids, device=dev)\n"


def test_clean_file_exits_0(tmp_path, run_cli):
    write(tmp_path, "ok.py", CLEAN)
    code, out, err = run_cli("check", str(tmp_path))
    assert (code, err) == (0, "")
    assert "All checks passed!" in out


def test_findings_exit_1_with_text_lines(tmp_path, run_cli):
    path = write(tmp_path, "hot.py", HOT)
    code, out, _ = run_cli("check", str(path))
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith(f"{path}:4:12: HTD101 ")
    assert "`forward` runs per step" in first
    assert out.splitlines()[-2:] == [  # `ids` may be an array, for which the helper changes nothing: unsafe
        "Found 1 finding.", "1 more fixable with `--fix --unsafe-fixes` (check each: see the message).",
    ]


def test_json_output_has_ruffs_shape(tmp_path, run_cli):
    path = write(tmp_path, "hot.py", HOT)
    code, out, _ = run_cli("check", "--output-format", "json", str(path))
    assert code == 1
    [entry] = json.loads(out)
    assert entry["code"] == "HTD101"
    assert entry["filename"] == os.path.abspath(path)
    assert entry["location"] == {"row": 4, "column": 12}
    assert entry["end_location"] == {"row": 4, "column": 41}
    assert "runs per step" in entry["message"]
    fix = entry["fix"]
    assert fix["applicability"] == "unsafe" and fix["message"].startswith("Replace with `h2d_tensor(...)`")
    # The edits are read off the libcst transformer's output: the rebuilt call, and the import line.
    replacement = {
        "content": "h2d_tensor(ids, device=dev)",
        "location": {"row": 4, "column": 12}, "end_location": {"row": 4, "column": 41},
    }
    assert replacement in fix["edits"]


def test_json_output_is_an_empty_list_when_clean(tmp_path, run_cli):
    write(tmp_path, "ok.py", CLEAN)
    code, out, _ = run_cli("check", "--output-format", "json", str(tmp_path))
    assert (code, json.loads(out)) == (0, [])


def test_unparsable_file_is_named_on_one_line_and_others_are_still_checked(tmp_path, run_cli):
    broken = write(tmp_path, "a_broken.py", "import torch\ndef f(:\n    torch.tensor(x, device=d)\n")
    write(tmp_path, "b_hot.py", HOT)
    code, out, err = run_cli("check", str(tmp_path))
    assert code == 1
    assert err.count("\n") == 1
    assert err.startswith(f"{broken}: error: syntax error at 2:")
    assert "b_hot.py:4:12: HTD101" in out


def test_file_that_cannot_hold_a_finding_is_not_parsed(tmp_path, run_cli):
    write(tmp_path, "unrelated.py", "def f(:\n")
    assert run_cli("check", str(tmp_path))[0] == 0


def test_bom_crlf_and_coding_cookie_are_read_like_python_reads_them(tmp_path, run_cli):
    crlf = tmp_path / "crlf_bom.py"
    crlf.write_bytes(b"\xef\xbb\xbf" + HOT.replace("\n", "\r\n").encode())
    latin = tmp_path / "latin1.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\n" + HOT.replace("device=dev)", "device=dev)  # caf\xe9").encode("latin-1"))
    code, out, err = run_cli("check", str(crlf), str(latin))
    assert (code, err) == (1, "")
    assert f"{crlf}:4:12: HTD101" in out
    assert f"{latin}:5:12: HTD101" in out


def test_undecodable_file_is_reported_not_raised(tmp_path, run_cli):
    bad = tmp_path / "latin.py"
    bad.write_bytes(b"import torch\nx = '\xff'\n")
    code, _, err = run_cli("check", str(bad))
    assert code == 1
    assert err == f"{bad}: error: not valid utf-8 text: byte 0xff at offset 18\n"


def test_missing_path_is_reported_and_others_are_still_checked(tmp_path, run_cli):
    hot = write(tmp_path, "hot.py", HOT)
    code, out, err = run_cli("check", str(tmp_path / "nope.py"), str(hot))
    assert code == 1
    assert err == f"{tmp_path / 'nope.py'}: error: no such file or directory\n"
    assert "HTD101" in out


def test_select_and_ignore_take_codes_and_prefixes(tmp_path, run_cli):
    write(tmp_path, "a.py", HOT)
    write(tmp_path, "b.py", HOT_104)

    def codes(*flags):
        _, out, _ = run_cli("check", "--output-format", "json", *flags, str(tmp_path))
        return sorted(entry["code"] for entry in json.loads(out))

    assert codes() == ["HTD101", "HTD104"]
    assert codes("--select", "HTD104") == ["HTD104"]
    assert codes("--select", "HTD1") == ["HTD101", "HTD104"]
    assert codes("--ignore", "HTD101") == ["HTD104"]
    assert codes("--select", "HTD", "--ignore", "HTD104") == ["HTD101"]


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--select", "XYZ1"],
        ["check", "--ignore", "HTD9"],
        ["check", "--output-format", "yaml"],
        ["rule", "HTD999"],
        ["frobnicate"],
        [],
    ],
)
def test_usage_errors_exit_2(argv, run_cli, tmp_path):
    with pytest.raises(SystemExit) as raised:
        code, _, _ = run_cli(*argv, cwd=tmp_path)
        raise SystemExit(code)
    assert raised.value.code == 2


def test_default_path_is_the_current_folder(tmp_path, run_cli):
    write(tmp_path, "pkg/hot.py", HOT)
    code, out, _ = run_cli("check", cwd=tmp_path)
    assert code == 1
    assert out.startswith(os.path.join(".", "pkg", "hot.py") + ":4:12: HTD101")


def test_gitignore_and_exclude_patterns_are_honoured(tmp_path, run_cli):
    (tmp_path / ".git").mkdir()
    write(tmp_path, ".gitignore", "generated/\n*_pb2.py\n")
    write(tmp_path, "src/.gitignore", "local_*.py\n!local_keep.py\n")
    for name in ("generated/g.py", "src/m_pb2.py", "src/local_x.py", "src/local_keep.py", "src/main.py",
                 "src/vendor/v.py", ".venv/lib.py", "notes.txt"):
        write(tmp_path, name, HOT)
    _, out, _ = run_cli("check", "--output-format", "json", "--exclude", "vendor/", str(tmp_path / "src"))
    checked = sorted(os.path.relpath(e["filename"], tmp_path) for e in json.loads(out))
    assert checked == [os.path.join("src", "local_keep.py"), os.path.join("src", "main.py")]


def test_explicit_file_is_checked_even_if_ignored(tmp_path, run_cli):
    (tmp_path / ".git").mkdir()
    write(tmp_path, ".gitignore", "hot.py\n")
    path = write(tmp_path, "hot.py", HOT)
    assert run_cli("check", str(path))[0] == 1
    assert run_cli("check", str(tmp_path))[0] == 0


def test_extend_hot_and_cold_functions(tmp_path, run_cli):
    source = textwrap.dedent(
        """
        import torch

        def run_batch(ids, dev):
            return torch.tensor(ids, device=dev)

        def forward(ids, dev):
            return torch.tensor(ids, device=dev)
        """
    )
    path = write(tmp_path, "m.py", source)

    def rows(*flags):
        _, out, _ = run_cli("check", "--output-format", "json", *flags, str(path))
        return [entry["location"]["row"] for entry in json.loads(out)]

    assert rows() == [8]
    assert rows("--extend-hot-functions", "run_*") == [5, 8]
    assert rows("--extend-cold-functions", "forward") == []


def test_rule_prints_documentation(run_cli):
    code, out, _ = run_cli("rule", "HTD101")
    assert code == 0
    assert out.startswith("# tensor-with-device (HTD101)")
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert heading in out


def test_rule_without_code_lists_rules(run_cli):
    code, out, _ = run_cli("rule")
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines()]
    # HTD301 comes from a traced run's records, not from source, but it is a code findings carry.
    assert listed == [
        "HTD101", "HTD102", "HTD103", "HTD104", "HTD105", "HTD106", "HTD107",
        "HTD201", "HTD202", "HTD203", "HTD204", "HTD205", "HTD206", "HTD301",
    ]
    # The summaries start in one column, however long a rule's name.
    summaries = {line.index(rule.summary) for line, rule in zip(out.splitlines(), ALL_RULES + OBSERVED_RULES)}
    assert len(summaries) == 1


def test_python_dash_m_runs_the_cli():
    done = subprocess.run(
        [PYTHON, "-m", "h2dlint", "check", str(REFERENCE)], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 1, done.stderr
    assert "HTD101" in done.stdout and "HTD104" in done.stdout
    assert done.stderr == ""


def test_python_dash_m_from_a_tree_with_a_stdlib_named_module(tmp_path):
    # vLLM 0.6 has `vllm/logging/`: checked from that folder, `python -m` put it before the standard library.
    for shadow in ("logging/__init__.py", "argparse.py", "json/__init__.py"):
        write(tmp_path, shadow, "raise ImportError('the checked tree\\'s own module was imported')\n")
    write(tmp_path, "step.py", HOT)
    done = subprocess.run([PYTHON, "-m", "h2dlint", "check", "."], capture_output=True, text=True, cwd=tmp_path)
    assert done.stderr == ""
    assert done.returncode == 1 and "HTD101" in done.stdout


def test_console_script_is_installed():
    done = subprocess.run(
        [os.path.join(os.path.dirname(PYTHON), "h2dlint"), "rule", "HTD104"], capture_output=True, text=True
    )
    assert done.returncode == 0
    assert "pageable" in done.stdout

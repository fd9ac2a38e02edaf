"""`# noqa` comments: which lines they cover, `check --add-noqa` and `check --statistics`."""

from __future__ import annotations

import json
import os
import stat

import pytest
from conftest import HOT

from h2dlint.facts.noqa import NoqaComments, add_noqa
from h2dlint.facts.positions import lines_with_endings
from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source


def codes_and_rows(text):
    return [(d.code, d.span.row) for d in check_source(text, Settings())]


def test_noqa_after_a_backslash_continuation_covers_the_first_line():
    text = (
        "import torch\n\ndef forward(ids, dev):\n"
        "    x = torch.tensor(ids, device=dev) + \\\n        1  # noqa: HTD101\n"
    )
    assert codes_and_rows(text) == []
    assert codes_and_rows(text.replace("  # noqa: HTD101", "")) == [("HTD101", 4)]


def test_noqa_after_a_multiline_string_covers_its_first_line():
    lines = lines_with_endings('x = f("""a\nb""")  # noqa: HTD101\ny = 1\n')
    noqa = NoqaComments(lines)
    assert noqa.suppress("HTD101", 1, 1)
    assert not noqa.suppress("HTD104", 1, 1)
    assert not noqa.suppress("HTD101", 3, 3)


def test_noqa_codes_match_by_prefix_and_other_codes_do_not_suppress():
    noqa = NoqaComments(lines_with_endings("a  # noqa: HTD1\nb  # NOQA:E501,HTD104\nc  # noqa\n"))
    assert noqa.suppress("HTD101", 1, 1)
    assert not noqa.suppress("HTD101", 2, 2) and noqa.suppress("HTD104", 2, 2)
    assert noqa.suppress("HTD101", 3, 3)


def test_lines_with_endings_counts_lines_as_python_does():
    assert lines_with_endings("a\x0cb\r\nc\rd\ne") == ["a\x0cb\r\n", "c\r", "d\n", "e"]
    text = "import torch\n\x0c\ndef forward(ids, dev):\n    return torch.tensor(ids, device=dev)  # noqa\n"
    assert codes_and_rows(text) == []  # a form feed must not shift the noqa line


@pytest.mark.parametrize(
    "before, after",
    [
        ("x = f(a)\n", "x = f(a)  # noqa: HTD101\n"),
        ("x = f(a)  # noqa: E501\n", "x = f(a)  # noqa: E501, HTD101\n"),
        ("x = f(a)  # keep me\n", "x = f(a)  # keep me  # noqa: HTD101\n"),
        ("x = f(a) + \\\n    1\n", "x = f(a) + \\\n    1  # noqa: HTD101\n"),
        ('x = f("""\n#""", a)\n', 'x = f("""\n#""", a)  # noqa: HTD101\n'),
        ("x = f(a)\r\n", "x = f(a)  # noqa: HTD101\r\n"),
        ("x = f(a)", "x = f(a)  # noqa: HTD101"),
    ],
    ids=["plain", "merge", "other-comment", "backslash", "string", "crlf", "no-final-newline"],
)
def test_add_noqa_writes_a_comment_where_it_is_safe(before, after):
    assert add_noqa(before, [(1, "HTD101")]) == (after, 1)


def test_add_noqa_merges_codes_of_one_line_once():
    text, changed = add_noqa("x = f(a, b)\n", [(1, "HTD104"), (1, "HTD101"), (1, "HTD104")])
    assert (text, changed) == ("x = f(a, b)  # noqa: HTD101, HTD104\n", 1)


def test_add_noqa_cli_gives_a_clean_baseline_and_a_second_run_adds_nothing(tmp_path, run_cli):
    bom_crlf = tmp_path / "bom_crlf.py"
    bom_crlf.write_bytes(b"\xef\xbb\xbf" + HOT.replace("\n", "\r\n").encode())
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + HOT.encode())
    multi = tmp_path / "multi.py"
    multi.write_text(
        "import torch\n\ndef forward(ids, dev):\n    return torch.tensor(\n        ids, device=dev,\n    )\n",
        encoding="utf-8",
    )
    os.chmod(multi, 0o751)

    code, out, err = run_cli("check", "--add-noqa", str(tmp_path))
    assert (code, out, err) == (0, "Added 3 noqa directives.\n", "")
    assert bom_crlf.read_bytes() == b"\xef\xbb\xbf" + HOT.replace(
        "device=dev)\n", "device=dev)  # noqa: HTD101\n"
    ).replace("\n", "\r\n").encode()
    assert latin.read_bytes().startswith(b"# -*- coding: latin-1 -*-\n# caf\xe9\n")
    assert latin.read_bytes().endswith(b"device=dev)  # noqa: HTD101\n")
    assert multi.read_text(encoding="utf-8").splitlines()[3] == "    return torch.tensor(  # noqa: HTD101"
    assert stat.S_IMODE(os.stat(multi).st_mode) == 0o751
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]  # no temporary file left

    assert run_cli("check", str(tmp_path))[0] == 0
    assert run_cli("check", "--add-noqa", str(tmp_path))[:2] == (0, "Added 0 noqa directives.\n")


def test_statistics_counts_findings_per_code(tmp_path, run_cli):
    (tmp_path / "a.py").write_text(HOT + HOT.replace("forward", "step"), encoding="utf-8")
    (tmp_path / "b.py").write_text(
        "import torch\n\ndef step(ids, dev):\n    return torch.tensor(ids).to(dev, non_blocking=True)\n",
        encoding="utf-8",
    )
    code, out, _ = run_cli("check", "--statistics", str(tmp_path))
    assert code == 1
    assert out == "2\tHTD101\ttensor-with-device\n1\tHTD104\tpageable-non-blocking-copy\n"
    _, out, _ = run_cli("check", "--statistics", "--output-format", "json", str(tmp_path))
    assert json.loads(out) == [
        {"code": "HTD101", "name": "tensor-with-device", "count": 2},
        {"code": "HTD104", "name": "pageable-non-blocking-copy", "count": 1},
    ]


def test_a_comment_for_another_code_on_a_joined_line_does_not_suppress_but_a_matching_one_does():
    other = "x = f(a) + \\\n    1  # noqa: E501\n"
    matching = "x = f(a) + \\\n    1  # noqa: HTD101\n"
    apart = "x = f(a)\ny = 1  # noqa: HTD101\n"  # the next statement: not joined
    assert not NoqaComments(lines_with_endings(other)).suppress("HTD101", 1, 1)
    assert NoqaComments(lines_with_endings(matching)).suppress("HTD101", 1, 1)
    assert not NoqaComments(lines_with_endings(apart)).suppress("HTD101", 1, 1)

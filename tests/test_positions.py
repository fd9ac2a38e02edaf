"""Positions are 1-based rows and 1-based columns counted in characters, whatever bytes the line holds."""

from __future__ import annotations

import ast
import subprocess

import pytest
from conftest import PYTHON, REFERENCE

import re

from h2dlint.facts.positions import line_starts, source_lines, span_of
from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source


@pytest.mark.parametrize(
    "prefix", ["ascii", "é", "日本語", "🚀🚀"], ids=["ascii", "2-byte", "3-byte", "4-byte"]
)
def test_columns_count_characters_not_bytes(prefix):
    line = f"    label = '{prefix}'; ids = torch.tensor(ids, device=dev)  # {prefix}"
    text = f"import torch\n# ünïcode comment\n\ndef forward(ids, dev):\n{line}\n"
    [found] = check_source(text, Settings())
    start = line.index("torch.tensor") + 1
    end = line.index("  #") + 1
    assert (found.span.row, found.span.column, found.span.end_row, found.span.end_column) == (5, start, 5, end)


def test_span_of_a_sub_node_on_a_non_ascii_line():
    text = "x = ('ä', foo(1, 'ß', bar))\n"
    call = ast.parse(text).body[0].value.elts[1]
    argument = call.args[2]
    lines = source_lines(text)
    assert span_of(call, lines).column == text.index("foo") + 1
    assert span_of(argument, lines).column == text.index("bar") + 1
    assert span_of(argument, lines).end_column == text.index("bar") + 4


def test_form_feed_does_not_shift_rows():
    text = "import torch\n\x0c\ndef forward(ids, dev):\n    return torch.tensor(ids, device=dev)  # noqa\n"
    assert len(source_lines(text)) == 4
    assert check_source(text, Settings()) == []  # the noqa is found on the row Python reports


def test_checking_does_not_import_libcst():
    """libcst's import alone costs more than a warm run; only writing fixes may need it."""
    script = (
        "import sys\nfrom h2dlint.faces.cli import main\n"
        "assert main(['check', sys.argv[1]]) == 1\n"
        "assert 'libcst' not in sys.modules, 'libcst was imported'\n"
    )
    done = subprocess.run([PYTHON, "-c", script, str(REFERENCE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "text", ["", "\n", "a", "a\nb\n", "a\r\nb\rc\n", "a\x0cb\nc", "\r", "\r\n\r\n", "x\n\n", "é\nü\r\n"]
)
def test_rows_split_only_at_pythons_line_breaks_with_or_without_carriage_returns(text):
    breaks = re.compile(r"\r\n|\r|\n")
    expected = breaks.split(text)
    if expected and expected[-1] == "":
        expected.pop()
    assert source_lines(text) == expected
    assert line_starts(text) == [0] + [found.end() for found in breaks.finditer(text)]

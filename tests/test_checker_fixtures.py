"""Fixture pairs: `fixtures/checker/NAME.py` -> `NAME.expected` (`row:col CODE message` per finding).

After an intended change, regenerate with `H2DLINT_UPDATE_FIXTURES=1 pytest tests/test_checker_fixtures.py`
and review the diff.
"""

from __future__ import annotations

import os

import pytest
from conftest import FIXTURES

from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source

CASES = sorted((FIXTURES / "checker").glob("*.py"))


def _render(path):
    found = check_source(path.read_text(encoding="utf-8"), Settings())
    return "".join(f"{d.span.row}:{d.span.column} {d.code} {d.message}\n" for d in found)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_fixture_matches_expected(case):
    expected_path = case.with_suffix(".expected")
    actual = _render(case)
    if os.environ.get("H2DLINT_UPDATE_FIXTURES"):
        expected_path.write_text(actual, encoding="utf-8")
    assert actual == expected_path.read_text(encoding="utf-8")


def test_there_are_fixtures():
    assert len(CASES) >= 5

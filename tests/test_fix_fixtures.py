"""Fix fixture pairs: `fixtures/fix/NAME.in.py` -> `NAME.out.py`, plus `NAME.remaining`: the findings the fix
leaves (`row:col CODE message`), each saying why it was not rewritten.

After an intended change, regenerate with `H2DLINT_UPDATE_FIXTURES=1 pytest tests/test_fix_fixtures.py` and
review the diff: every `.out.py` is a claim that the rewrite keeps behaviour.
"""

from __future__ import annotations

import ast
import os

import pytest

from conftest import FIXTURES
from h2dlint.analyzer import check_source
from h2dlint.autofix import fix_source
from h2dlint.settings import Settings

CASES = sorted((FIXTURES / "fix").glob("*.in.py"))


def _name(case):
    return case.name[: -len(".in.py")]


def _render(diagnostics):
    return "".join(f"{d.span.row}:{d.span.column} {d.code} {d.message}\n" for d in diagnostics)


def _expect(path, actual):
    if os.environ.get("H2DLINT_UPDATE_FIXTURES"):
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", CASES, ids=_name)
def test_fix_gives_the_expected_output(case):
    fixed, count, remaining = fix_source(case.read_text(encoding="utf-8"), Settings())
    _expect(case.with_name(_name(case) + ".out.py"), fixed)
    _expect(case.with_name(_name(case) + ".remaining"), _render(remaining))
    ast.parse(fixed)
    assert count == len(check_source(case.read_text(encoding="utf-8"), Settings())) - len(remaining)


@pytest.mark.parametrize("case", CASES, ids=_name)
def test_fix_is_idempotent(case):
    once, _, _ = fix_source(case.read_text(encoding="utf-8"), Settings())
    twice, count, _ = fix_source(once, Settings())
    assert (twice, count) == (once, 0)


@pytest.mark.parametrize("case", CASES, ids=_name)
def test_fix_changes_only_flagged_lines_and_the_import(case):
    before = case.read_text(encoding="utf-8").splitlines()
    after = fix_source("\n".join(before) + "\n", Settings())[0].splitlines()
    flagged = set()
    for d in check_source("\n".join(before) + "\n", Settings()):
        if d.fix is not None:
            flagged.update(range(d.span.row, d.span.end_row + 1))
    kept = [line for row, line in enumerate(before, 1) if row not in flagged]
    unchanged_after = [line for line in after if line in kept]
    assert unchanged_after == kept  # every line outside the flagged calls survives, in order


def test_every_fixable_form_has_a_fixture():
    names = {_name(c) for c in CASES}
    assert {
        "aliases", "multiline", "existing_import", "future_import", "pageable_copy", "unfixable",
        "as_tensor_with_device", "blocking_copy",
    } <= names

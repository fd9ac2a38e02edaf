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
from fix_invariants import (
    fixable_left_problems,
    helper_shadowing_problems,
    idempotence_problems,
    import_placement_problems,
    kept_line_problems,
)

from h2dlint.facts.settings import Settings
from h2dlint.fixing.autofix import fix_source
from h2dlint.project.findings import check_source

CASES = sorted((FIXTURES / "fix").glob("*.in.py"))


def _name(case):
    return case.name[: -len(".in.py")]


def _unsafe(case):
    """Fixtures show every fix's shape (`--unsafe-fixes`), except `safe_*` ones, which show what `--fix` does."""
    return not _name(case).startswith("safe_")


def _render(diagnostics):
    return "".join(f"{d.span.row}:{d.span.column} {d.code} {d.message}\n" for d in diagnostics)


def _expect(path, actual):
    if os.environ.get("H2DLINT_UPDATE_FIXTURES"):
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", CASES, ids=_name)
def test_fix_gives_the_expected_output(case):
    fixed, count, remaining = fix_source(case.read_text(encoding="utf-8"), Settings(), unsafe=_unsafe(case))
    _expect(case.with_name(_name(case) + ".out.py"), fixed)
    _expect(case.with_name(_name(case) + ".remaining"), _render(remaining))
    ast.parse(fixed)
    assert count == len(check_source(case.read_text(encoding="utf-8"), Settings())) - len(remaining)


@pytest.mark.parametrize("case", CASES, ids=_name)
def test_fix_is_idempotent(case):
    once, _, _ = fix_source(case.read_text(encoding="utf-8"), Settings(), unsafe=_unsafe(case))
    assert idempotence_problems(once, Settings(), unsafe=_unsafe(case)) == []


@pytest.mark.parametrize("case", CASES, ids=_name)
def test_fix_changes_only_flagged_lines_and_the_import(case):
    before = case.read_text(encoding="utf-8")
    after, _, remaining = fix_source(before, Settings(), unsafe=_unsafe(case))
    assert kept_line_problems(before, after, check_source(before, Settings())) == []
    assert fixable_left_problems(remaining, unsafe=_unsafe(case)) == []
    assert helper_shadowing_problems(before, after) == []
    assert import_placement_problems(before, after) == []


def test_every_fixable_form_has_a_fixture():
    names = {_name(c) for c in CASES}
    assert {
        "aliases", "multiline", "existing_import", "future_import", "pageable_copy", "unfixable",
        "as_tensor_with_device", "blocking_copy", "torch_guard", "try_guard", "merge_import", "import_sections",
        "jit", "safe_only", "constants",
    } <= names

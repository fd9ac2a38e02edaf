"""Each rule's own VALID/INVALID examples and documentation examples are its tests (as in Fixit)."""

from __future__ import annotations

import textwrap

import pytest

from h2dlint.facts.settings import Settings
from h2dlint.fixing.autofix import fix_source
from h2dlint.project.findings import check_source
from h2dlint.rules import ALL_RULES, Invalid


def _cases(kind):
    return list(_iter_cases(kind))


def _iter_cases(kind):
    for rule in ALL_RULES:
        for index, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.code}-{kind.lower()}-{index}")


def _findings(rule, code):
    return check_source(code, Settings(), rules=[rule()])


@pytest.mark.parametrize("rule, example", _cases("VALID"))
def test_valid_example_is_not_reported(rule, example):
    assert _findings(rule, example.code) == []


@pytest.mark.parametrize("rule, example", _cases("INVALID"))
def test_invalid_example_is_reported_once_where_expected(rule, example):
    found = _findings(rule, example.code)
    assert [d.code for d in found] == [rule.code]
    assert found[0].span.row == example.line
    if example.column is not None:
        assert found[0].span.column == example.column
    assert example.reason in found[0].message
    assert example.marked_code == rule.code


@pytest.mark.parametrize("rule, example", _cases("INVALID"))
def test_fixing_an_invalid_example_gives_its_fixed_source(rule, example):
    fixed, _, _ = fix_source(example.code, Settings(), rules=[rule()])
    if example.fixed is None:
        assert fixed == example.code, "the case is fixable: state the fixed source with `fixed=`"
    else:
        assert fixed == example.fixed_code


def test_an_invalid_example_names_its_line_with_one_marker():
    case = Invalid(
        """
        import torch

        def step(x):
            return torch.tensor(x).cuda()  # HTD103
        """
    )
    assert (case.line, case.marked_code) == (4, "HTD103")
    assert case.code == "import torch\n\ndef step(x):\n    return torch.tensor(x).cuda()\n"
    for unmarked_or_twice in ("x = 1\n", "x = 1  # HTD101\ny = 2  # HTD102\n"):
        with pytest.raises(ValueError, match="exactly one"):
            Invalid(unmarked_or_twice).line


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_documented_example_is_reported_and_its_fix_is_not(rule):
    def source(snippet):
        return "import torch\n\n" + textwrap.dedent(snippet).strip("\n") + "\n"

    assert [d.code for d in _findings(rule, source(rule.example))] == [rule.code]
    assert _findings(rule, source(rule.use_instead)) == []


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_is_documented_in_ruff_sections(rule):
    doc = rule.documentation()
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert heading in doc
    assert rule.code in doc and rule.name in doc


def test_every_rule_has_both_kinds_of_example():
    for rule in ALL_RULES:
        assert rule.VALID and rule.INVALID, rule.code


def test_codes_are_unique_and_flake8_compatible():
    import re

    codes = [rule.code for rule in ALL_RULES]
    assert len(codes) == len(set(codes))
    assert all(re.fullmatch(r"HTD[0-9]{3}", code) for code in codes)

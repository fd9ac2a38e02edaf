"""Each rule's own VALID/INVALID examples and documentation examples are its tests (as in Fixit)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from h2dlint.faces.rule_docs import readme_anchors
from h2dlint.facts.settings import Settings
from h2dlint.fixing.autofix import fix_source
from h2dlint.project.findings import check_source
from h2dlint.rules import ALL_RULES, Invalid
from h2dlint.rules.docs import REFERENCES


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
    fixed, _, _ = fix_source(example.code, Settings(), rules=[rule()], unsafe=True)  # every fix's shape
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


RUFF_SECTIONS = (
    "What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Known problems", "Options", "References"
)


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_is_documented_in_ruff_sections_in_order(rule):
    doc = rule.documentation()
    headings = [line[3:] for line in doc.splitlines() if line.startswith("## ")]
    assert headings == list(RUFF_SECTIONS)
    assert rule.code in doc and rule.name in doc
    for section in doc.split("\n## ")[1:]:
        assert section.split("\n", 1)[1].strip(), f"{rule.code}: empty section {section.splitlines()[0]!r}"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_options_are_configuration_keys_it_can_read(rule):
    from h2dlint.project.config_keys import READERS

    assert set(rule.options) <= set(READERS)


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_references_point_at_something_that_exists(rule):
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert rule.references
    for key in rule.references:
        target = REFERENCES[key][1]
        if target.startswith("https://"):
            continue
        path, _, anchor = target.partition("#")
        assert (root / path).is_file(), target
        if anchor:
            assert path == "README.md" and anchor in readme_anchors(readme), target


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_fix_availability_matches_the_examples(rule):
    fixed_cases = [case for case in rule.INVALID if case.fixed is not None]
    if rule.fix_availability == "never":
        assert not fixed_cases
    else:
        assert rule.fix_availability == "sometimes" and fixed_cases


def test_every_rule_has_both_kinds_of_example():
    for rule in ALL_RULES:
        assert rule.VALID and rule.INVALID, rule.code


def test_codes_are_unique_and_flake8_compatible():
    import re

    codes = [rule.code for rule in ALL_RULES]
    assert len(codes) == len(set(codes))
    assert all(re.fullmatch(r"HTD[0-9]{3}", code) for code in codes)

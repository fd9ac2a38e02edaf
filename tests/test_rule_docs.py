"""The rule documentation in the repository is what the registry generates, and output links point into it."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import HOT, HOT_104, ROOT, write

from h2dlint.faces.rule_docs import (
    RULE_TABLE_BEGIN,
    RULES_PAGE,
    readme_anchors,
    readme_with_table,
    rule_table,
    rule_url,
    rules_page,
    slug,
)
from h2dlint.rules import ALL_RULES

README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGE = ROOT / RULES_PAGE


def test_the_readme_rule_table_is_the_generated_one():
    assert readme_with_table(README) == README, "stale: run `python -m h2dlint.faces.rule_docs`"
    assert rule_table() in README


def test_the_rules_page_is_the_generated_one():
    assert PAGE.read_text(encoding="utf-8") == rules_page(), "stale: run `python -m h2dlint.faces.rule_docs`"


def test_a_stale_table_is_caught_and_regenerated():
    rows = rule_table().splitlines(keepends=True)
    stale = README.replace(rule_table(), "".join(rows[:-1]))  # the last rule's row is missing
    assert stale != README
    assert readme_with_table(stale) == README


def test_check_mode_exits_0_when_fresh():
    done = subprocess.run([sys.executable, "-m", "h2dlint.faces.rule_docs", "--check"], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")


def test_every_rule_has_a_row_and_a_page_section():
    table = rule_table()
    anchors = readme_anchors(PAGE.read_text(encoding="utf-8"))
    for rule in ALL_RULES:
        assert f"| {rule.name} |" in table
        assert rule_url(rule.code) == f"{RULES_PAGE}#{slug(f'{rule.name} ({rule.code})')}"
        assert rule_url(rule.code).split("#")[1] in anchors
    assert RULE_TABLE_BEGIN in README


def test_the_rules_page_links_resolve_from_its_folder():
    page = PAGE.read_text(encoding="utf-8")
    targets = re.findall(r"\]\((?!https?://|#)([^)#]+)", page)
    assert targets, "the rules page links to repository files"
    missing = [target for target in targets if not (PAGE.parent / target).exists()]
    assert not missing


@pytest.mark.parametrize("heading, anchor", [
    ("tensor-with-device (HTD101)", "tensor-with-device-htd101"),
    ("Why is this bad?", "why-is-this-bad"),
    ("pre-commit, flake8 and CI", "pre-commit-flake8-and-ci"),
])
def test_anchors_are_githubs(heading, anchor):
    assert slug(heading) == anchor


def test_repeated_headings_are_numbered_and_code_blocks_skipped():
    text = "# A\n## Example\n```python\n# not a heading\n```\n## Example\n"
    assert readme_anchors(text) == {"a", "example", "example-1"}


def _run_json(tmp_path, *args):
    write(tmp_path, "a.py", HOT)
    write(tmp_path, "b.py", HOT_104)
    done = subprocess.run(
        [sys.executable, "-m", "h2dlint", "check", "--no-cache", *args, str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path,
    )
    return json.loads(done.stdout)


def test_json_findings_carry_their_rules_url(tmp_path):
    found = _run_json(tmp_path, "--output-format", "json")
    assert {(d["code"], d["url"]) for d in found} == {
        ("HTD101", "h2dlint/rules/README.md#tensor-with-device-htd101"),
        ("HTD104", "h2dlint/rules/README.md#pageable-non-blocking-copy-htd104"),
    }


def test_sarif_rules_carry_their_url(tmp_path):
    log = _run_json(tmp_path, "--output-format", "sarif")
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [r["properties"]["url"] for r in rules] == [rule_url(rule.code) for rule in ALL_RULES]
    assert all(r["properties"]["url"] for r in rules)

"""Summaries are built complete: their records are frozen, and what is learnt late replaces a record."""

from __future__ import annotations

import ast
import textwrap
from dataclasses import FrozenInstanceError

import pytest

from h2dlint.checker.analyzer import enabled_rules
from h2dlint.checker.collector import summarize
from h2dlint.facts.positions import source_lines
from h2dlint.facts.settings import Settings

SOURCE = textwrap.dedent(
    """\
    import torch

    def op_impl(x, dev):
        return torch.tensor([1, 2], device=dev)

    direct_register_custom_op(op_name="op", op_func=op_impl)

    def capture(g, x, dev):
        with torch.cuda.graph(g):
            op_impl(x, dev)
    """
)


@pytest.fixture
def summary():
    return summarize(ast.parse(SOURCE), source_lines(SOURCE), enabled_rules(Settings()))


def test_a_registration_after_the_def_is_in_the_function_record(summary):
    assert summary.functions["op_impl"].custom_op == "`direct_register_custom_op(...)` at line 6"


def test_capture_through_a_call_is_in_the_site_record(summary):
    [htd101, htd106] = sorted(summary.sites, key=lambda site: site.code)
    for site in (htd101, htd106):
        assert site.in_graph_capture
        assert site.capture == "`op_impl` is called inside `with torch.cuda.graph(...)` at line 9 of `capture`"


def test_records_cannot_be_changed_after_collection(summary):
    with pytest.raises(FrozenInstanceError):
        summary.functions["op_impl"].custom_op = None
    with pytest.raises(FrozenInstanceError):
        summary.sites[0].capture = None

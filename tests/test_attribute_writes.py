"""An attribute assigned earlier in the same function holds what was assigned (`facts.attribute_writes`): attention
backends fill a fresh metadata object field by field and read it back, as sglang's FlashAttention backend does
with `metadata.encoder_lens_int32` (a per-step `.item()` of the device copy of `encoder_lens`)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from h2dlint.facts.attribute_writes import AttributeWrites
from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source

HEADER = """
import torch

class Meta:
    lens = None

class Backend:
    def other(self, lens):
        self.lens = lens

    def init_forward_metadata(self, ids, dev, meta_in):
        metadata = Meta()
"""


def reads(body: str):
    source = textwrap.dedent(HEADER) + textwrap.indent(textwrap.dedent(body), " " * 8)
    found = check_source(source, Settings(select=("HTD2",)))
    return [(d.code, d.span.row - 12) for d in found]  # rows of `body`, from 1


@pytest.mark.parametrize(
    "body",
    [
        # a fresh object's field, filled then read
        "metadata.lens = torch.tensor(ids, device=dev)\nn = metadata.lens.max().item()\n",
        # `self`'s field, whatever another method stores in it
        "self.lens = torch.tensor(ids, device=dev)\nn = self.lens.max().item()\n",
        # a call on the field's own value changes no binding
        "self.lens = torch.tensor(ids, device=dev)\nself.lens.add_(1)\nn = self.lens.max().item()\n",
        # assigned in a block that holds the read
        "if dev is not None:\n    metadata.lens = torch.tensor(ids, device=dev)\n    n = metadata.lens.max().item()\n",
    ],
)
def test_a_read_after_an_assignment_in_the_same_function_sees_the_assigned_value(body):
    assert reads(body) == [("HTD201", body.count("\n"))]


@pytest.mark.parametrize(
    "body",
    [
        # the assignment may not have run
        "if ids:\n    metadata.lens = torch.tensor(ids, device=dev)\nn = metadata.lens.max().item()\n",
        # a method of the base, or a call given the base, may have changed the field
        "self.lens = torch.tensor(ids, device=dev)\nself.refresh()\nn = self.lens.max().item()\n",
        "metadata.lens = torch.tensor(ids, device=dev)\nfill(metadata)\nn = metadata.lens.max().item()\n",
        "metadata.lens = torch.tensor(ids, device=dev)\nfill(meta=metadata)\nn = metadata.lens.max().item()\n",
        # the base name is bound again
        "metadata.lens = torch.tensor(ids, device=dev)\nmetadata = meta_in\nn = metadata.lens.max().item()\n",
        # assigned on the host
        "metadata.lens = torch.tensor(ids)\nn = metadata.lens.max().item()\n",
        # assigned after the read
        "n = metadata.lens.max().item()\nmetadata.lens = torch.tensor(ids, device=dev)\n",
        # an unpacking says nothing of each field
        "metadata.lens, metadata.x = torch.tensor(ids, device=dev), None\nn = metadata.lens.max().item()\n",
    ],
)
def test_a_field_that_may_have_changed_since_says_nothing(body):
    assert reads(body) == []


def test_writes_are_kept_per_field_with_the_statement_list_they_are_made_in():
    function = ast.parse(textwrap.dedent("""
        def f(self, m):
            m.a = 1
            if m:
                m.a = 2
            self.b += 1
            def inner():
                m.c = 3
    """)).body[0]
    writes = AttributeWrites(function).writes
    assert sorted(writes) == ["m.a", "self.b"]
    assert [value.value if value is not None else None for _, value, _ in writes["m.a"]] == [1, 2]
    assert writes["self.b"][0][1] is None  # `+=`: no plain value


def test_fields_written_inside_a_case_or_an_except_handler_are_kept():
    # `case` clauses carry no position in `ast` (a fuzz case once raised on them)
    function = ast.parse(textwrap.dedent("""
        def f(self, m, ids):
            match ids:
                case [a, *rest]:
                    m.a = 1
            try:
                pass
            except ValueError as e:
                m.b = 2
    """)).body[0]
    writes = AttributeWrites(function).writes
    assert sorted(writes) == ["m.a", "m.b"]

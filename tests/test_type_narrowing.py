"""What typed code says of an object's class, read as type checkers read it: `x = cast(Cls, v)` declares `x` a
`Cls` (and is `v` itself, wherever `v` lives), `assert isinstance(x, Cls)` among a function's own statements
narrows a parameter or a local bound once to `Cls`, and `if isinstance(x, Cls):` narrows `x` in its body. Both make calls on `x` resolve to `Cls`'s methods (for heat)
and its attributes to where `Cls` puts them (for placement)."""

from __future__ import annotations

import ast
import textwrap

import pytest
from conftest import codes_by_row, row_of

from h2dlint.facts.bindings import asserted_classes
from h2dlint.facts.syntax import type_cast

SOURCE = """\
    from typing import cast

    import torch


    class Meta:
        def __init__(self, n, dev):
            self.lens = torch.zeros(n, device=dev)


    class Decoder:
        def masks(self, positions):
            starts = torch.tensor([0, 4], device=positions.device)
            return starts


    class Narrowed:
        def rows(self, positions):
            return torch.tensor([1, 2], device=positions.device)

        def cols(self, positions):
            return torch.tensor([3, 4], device=positions.device)


    class Runner:
        def __init__(self, parts, holder):
            self.parts = parts
            self.holder = holder

        def forward_step(self, positions, base):
            model = cast(Decoder, self.parts[0])
            model.masks(positions)
            meta = cast(Meta, self.holder)
            first = meta.lens.tolist()
            assert isinstance(base, Meta)
            total = base.lens.sum().item()
            staged = cast(torch.Tensor, torch.zeros(4))
            return first, total, staged.cuda()

        def forward_branch(self, model, positions):
            if isinstance(model, Narrowed) and positions is not None:
                model.rows(positions)
            model.cols(positions)

        def forward_unknown(self, holder, base):
            meta = holder
            first = meta.lens.tolist()
            if base is not None:
                assert isinstance(base, Meta)
            total = base.lens.sum().item()
            return first, total
    """


def test_a_cast_gives_the_class_whose_method_the_call_reaches_and_whose_attribute_it_reads(tmp_path, run_cli):
    found = codes_by_row(run_cli, tmp_path, SOURCE)
    assert found.get(row_of(SOURCE, "torch.tensor([0, 4]")) == "HTD101"  # `Decoder.masks` is hot through `model.masks`
    assert found.get(row_of(SOURCE, "first = meta.lens.tolist()")) == "HTD201"


def test_an_asserted_class_narrows_a_parameter(tmp_path, run_cli):
    assert codes_by_row(run_cli, tmp_path, SOURCE).get(row_of(SOURCE, "total = base.lens.sum().item()")) == "HTD201"


def test_an_isinstance_test_narrows_in_its_branch_only(tmp_path, run_cli):
    found = codes_by_row(run_cli, tmp_path, SOURCE)
    assert found.get(row_of(SOURCE, "torch.tensor([1, 2]")) == "HTD101"  # `model.rows` in the branch: `Narrowed.rows`
    assert row_of(SOURCE, "torch.tensor([3, 4]") not in found  # `model.cols` after it: `model` may be anything


def test_a_cast_is_its_value_for_placement(tmp_path, run_cli):
    assert codes_by_row(run_cli, tmp_path, SOURCE).get(row_of(SOURCE, "staged.cuda()")) == "HTD103"


def test_without_a_cast_or_with_an_assert_only_in_a_branch_the_class_stays_unknown(tmp_path, run_cli):
    found = codes_by_row(run_cli, tmp_path, SOURCE)
    assert row_of(SOURCE, "first = meta.lens.tolist()", 1) not in found
    assert row_of(SOURCE, "total = base.lens.sum().item()", 1) not in found


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("cast(Meta, x)", ("Meta", "x")),
        ("typing.cast('Meta', x)", ("'Meta'", "x")),
        ("t.cast(mod.Meta, x.y)", ("mod.Meta", "x.y")),
        ("cast(x)", None),
        ("cast(Meta, x, y)", None),
        ("cast(Meta, value=x)", None),
        ("obj.cast(Meta, x)", None),
        ("cast(*args)", None),
    ],
)
def test_type_cast_reads_only_typing_cast_with_a_type_and_a_value(call, expected):
    found = type_cast(ast.parse(call, mode="eval").body)
    assert (None if found is None else tuple(ast.unparse(part) for part in found)) == expected


def test_asserted_classes_reads_the_bodys_own_asserts_of_one_class():
    body = ast.parse(textwrap.dedent("""\
        assert isinstance(a, A)
        assert isinstance(b, B)
        assert isinstance(b, C)
        assert isinstance(c, (A, B))
        if flag:
            assert isinstance(d, D)
        assert isinstance(a, A)
        assert isinstance(e.f, E)
        """)).body
    assert {name: ast.unparse(c) for name, c in asserted_classes(body).items()} == {"a": "A"}

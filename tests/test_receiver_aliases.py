"""Two ways an object's class becomes known without an annotation: a local bound once to `self.pool` holds
what `self.pool` holds (`pool = self.pool; pool.lens` is `self.pool.lens`), and a function whose every `return`
builds one class (`return Pool(...)`, `return cls(...)` in a classmethod) returns an instance of it."""

from __future__ import annotations

import ast
import textwrap

import pytest
from conftest import codes_by_row, row_of

from h2dlint.facts.receivers import returned_class

SOURCE = """\
    import torch


    class Pool:
        def __init__(self, n, dev):
            self.lens = torch.zeros(n, device=dev)
            self.staging = torch.zeros(n)


    def make_pool(n, dev):
        return Pool(n, dev)


    class Runner:
        def __init__(self, n, dev):
            self.pool = make_pool(n, dev)

        def forward(self, dev):
            pool = self.pool
            total = pool.lens.sum().item()
            moved = pool.staging.to(dev)
            return total, moved
    """


def test_an_alias_of_self_pool_built_by_an_unannotated_function_reads_the_class_attributes(tmp_path, run_cli):
    found = codes_by_row(run_cli, tmp_path, SOURCE)
    assert found[row_of(SOURCE, "pool.lens.sum().item()")] == "HTD201"
    assert found[row_of(SOURCE, "pool.staging.to(dev)")] == "HTD103"


@pytest.mark.parametrize(
    ("body", "owner", "expected"),
    [
        ("if n:\n    return Buffers(a)\nreturn Buffers(b)", None, "Buffers"),
        ("return recs.Buffers(a)", None, "recs.Buffers"),
        ("return cls(a)", "Built", "Built"),
        ("if n:\n    return Buffers(a)\nreturn Pair(b)", None, None),
        ("if n:\n    return\nreturn Buffers(a)", None, None),
        ("return make_buffers(a)", None, None),
        ("yield Buffers(a)", None, None),
        ("pass", None, None),
    ],
)
def test_the_class_a_function_returns_is_the_one_every_return_builds(body, owner, expected):
    function = ast.parse("def f(n):\n" + textwrap.indent(body, "    ")).body[0]
    assert returned_class(function, owner) == expected

"""Two ways an object's class becomes known without an annotation: a local bound once to `self.pool` holds
what `self.pool` holds (`pool = self.pool; pool.lens` is `self.pool.lens`), and a function whose every `return`
builds one class (`return Pool(...)`, `return cls(...)` in a classmethod) returns an instance of it."""

from __future__ import annotations

import ast
import json
import textwrap

import pytest
from conftest import write

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


def findings(run_cli, tmp_path):
    write(tmp_path, "one.py", SOURCE)
    code, out, err = run_cli("check", "--select", "HTD1,HTD2", "--output-format", "json", "--no-cache", "one.py",
                             cwd=tmp_path)
    assert code in (0, 1), err
    return {d["location"]["row"]: d["code"] for d in json.loads(out)}


def row_of(needle: str) -> int:
    return next(n for n, line in enumerate(textwrap.dedent(SOURCE).splitlines(), 1) if needle in line)


def test_an_alias_of_self_pool_built_by_an_unannotated_function_reads_the_class_attributes(tmp_path, run_cli):
    found = findings(run_cli, tmp_path)
    assert found[row_of("pool.lens.sum().item()")] == "HTD201"
    assert found[row_of("pool.staging.to(dev)")] == "HTD103"


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

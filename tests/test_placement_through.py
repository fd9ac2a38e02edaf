"""A call of a function that only computes from one of its parameters returns a tensor where that call's argument
is (`facts.placement_through`): vLLM's and sglang's `_get_feat_extract_output_lengths(lengths)` is called with
device lengths in the audio encoder and with host ones elsewhere."""

from __future__ import annotations

import json
import textwrap

from conftest import demo_package, row_of

from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source

HELPERS = """
import torch

def _out_lengths(lengths):
    x = (lengths - 1) // 2 + 1
    return (x - 2) // 2 + 1

def _mixed(a, b):
    return a + b

def _countdown(n):
    return n if n.numel() == 0 else _countdown(n[1:])
"""


def rows(body: str):
    source = textwrap.dedent(HELPERS) + textwrap.dedent(body)
    found = check_source(source, Settings(select=("HTD2",)))
    offset = textwrap.dedent(HELPERS).count("\n")
    return [(d.code, d.span.row - offset) for d in found]


def test_each_call_returns_where_its_own_argument_is():
    body = """
    class Encoder:
        def forward(self, ids, dev):
            on_device = _out_lengths(torch.tensor(ids, device=dev)).tolist()
            on_host = _out_lengths(torch.tensor(ids)).tolist()
            return on_device, on_host
    """
    assert rows(body) == [("HTD201", 4)]


def test_a_method_of_the_class_that_follows_its_parameter():
    body = """
    class Encoder:
        def _lengths(self, lengths):
            return lengths.long() * 2

        def forward(self, ids, dev):
            host = self._lengths(torch.tensor(ids)).tolist()
            return self._lengths(torch.tensor(ids, device=dev)).tolist(), host
    """
    assert rows(body) == [("HTD201", 8)]


def test_the_message_says_what_the_call_computed_from():
    source = textwrap.dedent(HELPERS) + textwrap.dedent("""
    def forward(ids, dev):
        n = _out_lengths(torch.tensor(ids, device=dev))
        return n.tolist(), _out_lengths(torch.tensor(ids)).tolist()
    """)
    [found] = check_source(source, Settings(select=("HTD2",)))
    assert "is computed by `_out_lengths(...)` at line" in found.message
    assert "from `torch.tensor(ids, device=dev)`, which is built on the device" in found.message


def test_a_function_that_mixes_parameters_or_recurses_follows_none():
    """Called with a device tensor here and a host one there, neither `_mixed` (its other input unknown) nor
    `_countdown` (which calls itself) is known to return where its first argument is."""
    body = """
    def forward(ids, dev, other):
        b = _mixed(torch.tensor(ids, device=dev), other).tolist()
        c = _countdown(torch.tensor(ids, device=dev)).tolist()
        return b, c, _mixed(torch.tensor(ids), other), _countdown(torch.tensor(ids))
    """
    assert rows(body) == []



UTILS = """\
    import torch


    def flatten_bn(x, *, concat=False):
        if isinstance(x, torch.Tensor):
            return x.flatten(0, 1)
        if concat:
            return torch.cat(x)
        return [x_n for x_b in x for x_n in x_b]


    def fresh(x):
        return torch.zeros(3)
    """

MODEL = """\
    import torch
    from pkg.utils import flatten_bn, fresh


    class Model:
        def forward(self, ids, lens, dev):
            on_device = flatten_bn(torch.tensor(ids, device=dev), concat=True).tolist()
            on_host = flatten_bn(torch.tensor(lens)).tolist()
            new = fresh(torch.tensor(ids, device=dev)).tolist()
            return on_device, on_host, new
    """


def test_a_function_of_another_file_returns_its_first_argument_where_it_is(tmp_path, run_cli):
    project = demo_package(tmp_path, {"utils": UTILS, "model": MODEL}, "select = ['HTD2']\n")
    code, out, err = run_cli("check", "--output-format", "json", "--no-cache", ".", cwd=project)
    assert code == 1, err
    found = {d["location"]["row"]: d["message"] for d in json.loads(out) if d["filename"].endswith("model.py")}
    assert "which gives back its first argument" in found[row_of(MODEL, "on_device =")]
    assert row_of(MODEL, "on_host =") not in found
    assert row_of(MODEL, "new =") not in found  # `fresh` builds a new tensor: where its argument is says nothing

"""The fields of a record class (a dataclass or a `NamedTuple`) live where the constructor calls of its file put
them: `Buffers(cu_seq_lens=torch.zeros(n, device=dev))` puts `Buffers.cu_seq_lens` on the device, in this file
and, through the project, in the others. A function whose every `return` builds one class returns an instance of
it, and a local bound once to `self.buffers` is read as `self.buffers`. Where
the calls disagree, or may fill a field in a way not seen, the field stays unknown and nothing is reported."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import demo_package, write

RECORDS = """\
    import torch
    from dataclasses import dataclass, field
    from typing import NamedTuple


    @dataclass
    class Buffers:
        seq_lens: torch.Tensor
        cu_seq_lens: torch.Tensor
        staging: torch.Tensor


    class Pair(NamedTuple):
        ids: torch.Tensor
        ids_host: torch.Tensor


    @dataclass
    class Mixed:
        widths: torch.Tensor


    @dataclass
    class Spread:
        heights: torch.Tensor


    @dataclass
    class Stored:
        depths: torch.Tensor


    @dataclass
    class Built:
        counts: torch.Tensor

        @classmethod
        def make(cls, n, dev):
            return cls(counts=torch.zeros(n, device=dev))


    @dataclass(init=False)
    class NotARecord:
        sizes: torch.Tensor

        def __init__(self, sizes):
            self.sizes = sizes


    def make_buffers(n, dev):
        return Buffers(
            seq_lens=torch.zeros(n, device=dev),
            cu_seq_lens=torch.zeros(n + 1, device=dev),
            staging=torch.zeros(n),
        )


    def make_others(n, dev, extra, other):
        pair = Pair(torch.zeros(n, device=dev), torch.zeros(n))
        mixed = [Mixed(widths=torch.zeros(n, device=dev)), Mixed(widths=torch.zeros(n))]
        spread = Spread(heights=torch.zeros(n, device=dev), **extra)
        stored = Stored(depths=torch.zeros(n, device=dev))
        other.depths = torch.zeros(n)
        record = NotARecord(sizes=torch.zeros(n, device=dev))
        return pair, mixed, spread, stored, record
    """

RUNNER = """\
    import torch
    from pkg.records import Buffers, Built, Mixed, NotARecord, Pair, Spread, Stored, make_buffers


    class Runner:
        def __init__(self, n, dev):
            self.buffers = make_buffers(n, dev)

        def replay(self, lens, pair: Pair, mixed: Mixed, spread: Spread, stored: Stored, built: Built,
                   record: NotARecord):
            buffers = self.buffers
            host = torch.zeros(4, dtype=torch.int32)
            buffers.cu_seq_lens.copy_(host)
            total = buffers.seq_lens.sum().item()
            ids = pair.ids.tolist()
            a = mixed.widths.tolist()
            b = spread.heights.tolist()
            c = stored.depths.tolist()
            d = built.counts.tolist()
            e = record.sizes.tolist()
            f = buffers.staging.to("cuda")
            return total, ids, a, b, c, d, e, f
    """


@pytest.fixture
def project(tmp_path):
    return demo_package(tmp_path, {"records": RECORDS, "runner": RUNNER}, "select = ['HTD1', 'HTD2']\n")


def findings(run_cli, *args, cwd):
    code, out, err = run_cli("check", "--output-format", "json", "--no-cache", *args, cwd=cwd)
    assert code in (0, 1), err
    return {d["location"]["row"]: (d["code"], d["message"]) for d in json.loads(out)}


def row_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(textwrap.dedent(text).splitlines(), 1) if needle in line)


def test_a_field_the_constructor_fills_on_the_device_is_a_device_buffer(project, run_cli):
    found = findings(run_cli, ".", cwd=project)
    code, message = found[row_of(RUNNER, "buffers.cu_seq_lens.copy_")]
    assert code == "HTD107"
    assert "`buffers.cu_seq_lens` is `Buffers.cu_seq_lens` (records.py)" in message
    assert found[row_of(RUNNER, "buffers.seq_lens.sum()")][0] == "HTD201"


def test_a_field_filled_by_position_and_one_built_by_cls_in_a_classmethod(project, run_cli):
    found = findings(run_cli, ".", cwd=project)
    assert found[row_of(RUNNER, "pair.ids.tolist()")][0] == "HTD201"
    assert found[row_of(RUNNER, "built.counts.tolist()")][0] == "HTD201"


def test_a_host_field_copied_to_the_device_is_reported(project, run_cli):
    found = findings(run_cli, ".", cwd=project)
    code, message = found[row_of(RUNNER, "buffers.staging.to(")]
    assert code == "HTD103"
    assert "`Buffers.staging`" in message


@pytest.mark.parametrize("needle", ["mixed.widths", "spread.heights", "stored.depths", "record.sizes"])
def test_a_field_that_calls_disagree_on_or_may_fill_unseen_is_not_reported(project, run_cli, needle):
    assert row_of(RUNNER, needle) not in findings(run_cli, ".", cwd=project)


ONE_FILE_RUNNER = """

    class Runner:
        def __init__(self, n, dev):
            self.buffers = make_buffers(n, dev)

        def forward(self):
            buffers = self.buffers
            buffers.cu_seq_lens.copy_(torch.zeros(4))
    """

NESTED_CALL = """

    def later(n):
        def build():
            return Buffers(torch.zeros(n), torch.zeros(n), torch.zeros(n))
        return build
    """


@pytest.mark.parametrize(
    ("extra", "reported"), [("", True), (NESTED_CALL, False)], ids=["calls read", "a call in a nested function"]
)
def test_a_record_used_in_its_own_file_is_known_only_where_every_call_is_read(tmp_path, run_cli, extra, reported):
    source = textwrap.dedent(RECORDS) + textwrap.dedent(extra) + textwrap.dedent(ONE_FILE_RUNNER)
    write(tmp_path, "one.py", source)
    found = findings(run_cli, "one.py", cwd=tmp_path)
    assert (row_of(source, "buffers.cu_seq_lens.copy_") in found) is reported


@pytest.mark.parametrize(
    "elsewhere",
    [
        "def rebuild(n):\n    return Buffers(torch.zeros(n), torch.zeros(n), torch.zeros(n))\n",
        "def move(buffers):\n    buffers.cu_seq_lens = buffers.cu_seq_lens.cpu()\n",
        "import dataclasses\n\ndef move(buffers):\n    return dataclasses.replace(buffers, cu_seq_lens=None)\n",
    ],
    ids=["constructed in another file", "stored in another file", "replaced in another file"],
)
def test_a_field_another_file_may_fill_otherwise_is_not_reported(project, run_cli, elsewhere):
    assert row_of(RUNNER, "buffers.cu_seq_lens.copy_") in findings(run_cli, ".", cwd=project)
    write(project, "pkg/other.py", "import torch\nfrom pkg.records import Buffers\n\n" + elsewhere)
    assert row_of(RUNNER, "buffers.cu_seq_lens.copy_") not in findings(run_cli, ".", cwd=project)


AGREEING = (
    "def rebuild(n, dev):\n"
    "    return Buffers(seq_lens=None, cu_seq_lens=torch.zeros(n, device=dev), staging=None)\n"
)


@pytest.mark.parametrize(
    ("elsewhere", "reported"),
    [
        (AGREEING, True),
        ("def rebuild(n):\n    return Buffers(seq_lens=None, cu_seq_lens=torch.zeros(n), staging=None)\n", False),
        (AGREEING.replace("Buffers(", "records.Buffers(") + "from pkg import records\n", False),
        (AGREEING + "\nMODULE_LEVEL = Buffers(seq_lens=None, cu_seq_lens=torch.zeros(2), staging=None)\n", False),
        ("class Buffers:\n    pass\n\ndef own(n):\n    return Buffers(cu_seq_lens=torch.zeros(n))\n", True),
    ],
    ids=["puts the same by keyword", "puts a host tensor", "as `mod.Buffers(...)`", "a call at module level",
         "its own class of that name"],
)
def test_a_field_another_file_constructs_is_known_where_every_call_there_agrees(
    project, run_cli, elsewhere, reported
):
    importing = "" if elsewhere.startswith("class") else "from pkg.records import Buffers\n"
    write(project, "pkg/other.py", "import torch\n" + importing + "\n" + elsewhere)
    found = findings(run_cli, ".", cwd=project)
    row = row_of(RUNNER, "buffers.cu_seq_lens.copy_")
    assert (row in found) is reported
    if reported and importing:
        assert "every call of `Buffers(...)` in `other.py` passes the same placement for `cu_seq_lens`" in found[row][1]


IMPORTING = "import torch\nfrom pkg.records import Buffers\n\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("def move(buffers):\n    return buffers\n", "def move(buffers):\n    buffers.cu_seq_lens = None\n"),
        (IMPORTING + AGREEING, IMPORTING + AGREEING.replace(", device=dev", "")),
    ],
    ids=["start storing the field", "start constructing the record on the host"],
)
def test_a_warm_run_sees_another_file_change_what_the_field_may_hold(project, run_cli, before, after):
    def cached_findings():
        code, out, err = run_cli("check", "--output-format", "json", ".", cwd=project)
        assert code in (0, 1), err
        return {d["location"]["row"] for d in json.loads(out)}

    row = row_of(RUNNER, "buffers.cu_seq_lens.copy_")
    write(project, "pkg/other.py", before)
    assert row in cached_findings()
    write(project, "pkg/other.py", after)
    assert row not in cached_findings()


def test_calls_written_counts_the_name_as_a_call_of_its_own_only():
    from h2dlint.facts.placement_fields import calls_written

    source = "class Meta(Base):\n    pass\ny = g\nMeta(1)\nx.Meta(2)\nNotMeta(3)\nz = Meta (4)\nclass  Meta(x):\n    pass\n"
    assert calls_written(["Meta"], source) == {"Meta": 2}


def test_a_positional_argument_of_a_record_whose_field_order_is_not_known_may_fill_any_field(tmp_path, run_cli):
    source = textwrap.dedent("""\
        import torch
        from dataclasses import dataclass


        class Base:
            pass


        @dataclass
        class Meta(Base):
            lens: torch.Tensor


        def make(n, dev):
            return Meta(lens=torch.zeros(n, device=dev))


        def make_on_host(n):
            return Meta(torch.zeros(n))


        def forward(meta: Meta):
            return meta.lens.tolist()
        """)
    write(tmp_path, "one.py", source)
    row = row_of(source, "meta.lens.tolist()")
    assert row not in findings(run_cli, "--select", "HTD2", "one.py", cwd=tmp_path)
    write(tmp_path, "one.py", source.replace("Meta(torch.zeros(n))", "Meta(lens=torch.zeros(n, device='cuda'))"))
    assert row in findings(run_cli, "--select", "HTD2", "one.py", cwd=tmp_path)



TYPED_DICTS = """\
    from typing import TypedDict, Union

    import torch


    class Pixels(TypedDict):
        pixel_values: torch.Tensor
        sizes: torch.Tensor


    class Embeds(TypedDict):
        embeds: torch.Tensor
        sizes: torch.Tensor


    Inputs = Union[Pixels, Embeds]


    def _joined(parts):
        return torch.cat(list(parts))


    def parse(pixels, embeds, lens, dev):
        sizes = torch.tensor(lens, device=dev)
        if pixels is not None:
            return Pixels(pixel_values=pixels, sizes=_joined(sizes))
        return Embeds(embeds=embeds, sizes=sizes)


    def forward(inputs: Inputs, pixels: Pixels):
        a = inputs["sizes"].tolist()
        b = pixels["sizes"].tolist()
        c = inputs["embeds"].tolist()
        return a, b, c
    """


def test_a_typed_dict_is_a_record_read_by_key_through_a_union_alias(tmp_path, run_cli):
    write(tmp_path, "one.py", TYPED_DICTS)
    found = findings(run_cli, "--select", "HTD1,HTD2", "one.py", cwd=tmp_path)
    assert found[row_of(TYPED_DICTS, 'inputs["sizes"]')][0] == "HTD201"
    assert found[row_of(TYPED_DICTS, 'pixels["sizes"]')][0] == "HTD201"
    assert row_of(TYPED_DICTS, 'inputs["embeds"]') not in found  # a field one member alone holds, filled unseen

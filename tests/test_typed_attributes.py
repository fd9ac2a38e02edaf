"""Attributes of objects of known class, across files: `meta.seq_lens` with `meta: Metadata` lives where the
class `Metadata` of another file puts it (what its methods assign) or, when the class keeps `seq_lens_cpu` as
well, on the device as the copy that mirror shadows; the same on every face. Nothing is reported where the
class says nothing."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import PYTHON, demo_package, write

META = """\
    import torch
    from dataclasses import dataclass


    @dataclass
    class Metadata:
        seq_lens: torch.Tensor
        seq_lens_cpu: torch.Tensor
        query_start_loc: torch.Tensor


    class Batch:
        def __init__(self, ids, dev):
            self.input_ids = torch.tensor(ids)
            self.positions = torch.arange(len(ids), device=dev)
    """
BACKEND = """\
    import torch
    from pkg.meta import Batch, Metadata


    class Backend:
        def __init__(self, batch: Batch):
            self.batch = batch

        def forward(self, meta: Metadata, batch: Batch, dev):
            a = meta.seq_lens.max().item()
            b = meta.query_start_loc.max().item()
            c = batch.input_ids.to(dev)
            d = batch.positions.to(dev)
            e = self.batch.input_ids.to(dev)
            return a, b, c, d, e
    """


@pytest.fixture
def project(tmp_path):
    return demo_package(tmp_path, {"meta": META, "backend": BACKEND}, "select = ['HTD1', 'HTD2']\n")


def findings(run_cli, *args, cwd):
    code, out, err = run_cli("check", "--output-format", "json", "--no-cache", *args, cwd=cwd)
    assert code in (0, 1), err
    return {d["location"]["row"]: (d["code"], d["message"]) for d in json.loads(out)}


def test_a_field_with_a_host_mirror_in_another_file_is_the_device_copy(project, run_cli):
    code, message = findings(run_cli, ".", cwd=project)[10]
    assert code == "HTD201"
    assert "`meta.seq_lens.max()` is `Metadata.seq_lens` (meta.py), where it has a host mirror" \
        " `Metadata.seq_lens_cpu`, so it is the device copy" in message
    assert "Use the host mirror `meta.seq_lens_cpu` instead" in message


def test_what_the_class_assigns_decides_and_a_field_it_says_nothing_of_is_not_reported(project, run_cli):
    found = findings(run_cli, ".", cwd=project)
    assert sorted(found) == [10, 12, 14]  # not 11 (no mirror, unknown), not 13 (device to device)
    assert found[12][0] == found[14][0] == "HTD103"
    assert "`batch.input_ids` is `Batch.input_ids` (meta.py), where it is built on the host by" \
        " `torch.tensor(...)` at line 14" in found[12][1]
    assert "`self.batch.input_ids` is `Batch.input_ids` (meta.py)" in found[14][1]


def test_the_mirror_convention_switched_off_leaves_the_field_unknown(project, run_cli):
    found = findings(run_cli, "--disable-heuristics", "placement-sibling-host-mirror", ".", cwd=project)
    assert 10 not in found and 12 in found


def test_flake8_and_explain_give_the_same_verdict(project, run_cli):
    expected = sorted(findings(run_cli, "pkg/backend.py", cwd=project))
    done = subprocess.run(
        [PYTHON, "-m", "flake8", "--select", "HTD", "pkg/backend.py"], capture_output=True, text=True, cwd=project
    )
    assert sorted(int(line.split(":")[1]) for line in done.stdout.splitlines()) == expected == [10, 12, 14]
    code, out, _ = run_cli("explain", "pkg/backend.py:11", cwd=project)
    assert code == 0
    assert "depends on what `meta.query_start_loc` holds, which the class of `meta` decides" in out


def test_an_unannotated_parameter_spelt_like_the_one_class_of_that_name_holds_one(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nselect = ['HTD2']\n")
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/batch.py", "import torch\n\nclass ModelBatch:\n    seq_lens: torch.Tensor\n"
                                    "    seq_lens_cpu: torch.Tensor\n")
    write(tmp_path, "pkg/run.py", "import torch\n\ndef forward(model_batch, batch):\n"
                                  "    return model_batch.seq_lens.tolist(), batch.seq_lens.tolist()\n")
    found = findings(run_cli, "pkg", cwd=tmp_path)
    assert sorted(found) == [4] and "is `ModelBatch.seq_lens` (batch.py)" in found[4][1]  # not `batch`: one word
    write(tmp_path, "pkg/other.py", "class ModelBatch:\n    pass\n")  # two classes spelt so: which is unknown
    assert findings(run_cli, "pkg", cwd=tmp_path) == {}


POOLS = """\
    import torch


    class Pool:
        def __init__(self, n, dev):
            self.free = torch.arange(n, device=dev)

        def alloc(self, k):
            return self.free[:k]


    class HostPool:
        def alloc(self, k):
            return torch.arange(k)
    """
RUNNER = """\
    import torch
    from pkg.pools import HostPool, Pool


    class Runner:
        def __init__(self, pool: Pool, host_pool: HostPool):
            self.pool = pool
            self.host_pool = host_pool

        def forward(self, k, dev, other):
            a = self.pool.alloc(k).tolist()
            b = self.host_pool.alloc(k).to(dev)
            c = self.pool.alloc(k).to(dev)
            return a, b, c, other.alloc(k).tolist()
    """


def test_a_method_of_an_object_of_known_class_returns_where_that_class_says(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nselect = ['HTD1', 'HTD2']\n")
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/pools.py", POOLS)
    write(tmp_path, "pkg/runner.py", RUNNER)
    found = findings(run_cli, "pkg", cwd=tmp_path)
    assert sorted(found) == [11, 12]  # not 13 (device to device), not 14 (`other` of unknown class)
    assert found[11][0] == "HTD201" and "is returned by `alloc()` of `Pool` (pools.py), where it" in found[11][1]
    assert found[12][0] == "HTD103" and "is returned by `alloc()` of `HostPool` (pools.py), where it is built" \
        " on the host by `torch.arange(...)`" in found[12][1]


COMMON = """\
    from dataclasses import dataclass
    from typing import Optional

    import torch


    @dataclass
    class Common:
        seq_lens: torch.Tensor
        seq_lens_cpu: torch.Tensor
        query_lens: torch.Tensor
        _cached: Optional[torch.Tensor] = None

        def computed(self) -> torch.Tensor:
            if self._cached is None:
                self._cached = self.seq_lens - self.query_lens
            return self._cached

        def forward(self):
            return self.seq_lens.max().item()
    """
BUILDER = """\
    import torch

    from pkg.common import Common


    class Builder:
        def forward(self, common: Common, other):
            m = common
            n = m
            a = n.computed().tolist()
            b = m.seq_lens.max().item()
            c = other.computed().tolist()
            return a, b, c
    """


@pytest.fixture
def common_project(tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nselect = ['HTD2']\n")
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/common.py", COMMON)
    write(tmp_path, "pkg/builder.py", BUILDER)
    return tmp_path


def test_a_dataclass_field_with_a_declared_mirror_is_the_device_copy_in_its_own_methods(common_project, run_cli):
    found = findings(run_cli, "pkg/common.py", cwd=common_project)
    assert sorted(found) == [20]
    assert "has a host mirror `seq_lens_cpu`, so it is the device copy" in found[20][1]
    assert "Use the host mirror `self.seq_lens_cpu` instead" in found[20][1]


def test_a_local_bound_to_a_typed_parameter_is_an_object_of_that_class(common_project, run_cli):
    found = findings(run_cli, "pkg", cwd=common_project)
    builder = {row: item for row, item in found.items() if row in (10, 11, 12)}
    assert sorted(builder) == [10, 11]  # not 12: `other` is of unknown class
    assert "is returned by `computed()` of `Common` (common.py)" in builder[10][1]
    assert "`Common.seq_lens` (common.py), where it has a host mirror `Common.seq_lens_cpu`" in builder[11][1]


def test_an_item_of_a_list_of_host_tensors_that_the_class_keeps_is_on_the_host(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nselect = ['HTD1']\n")
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/batch.py", "import torch\n\nclass ModelBatch:\n    def __init__(self, reqs, dev):\n"
                                    "        self.delimiters = [torch.tensor(r.ids) for r in reqs]\n"
                                    "        self.rows = [torch.arange(3, device=dev) for r in reqs]\n")
    write(tmp_path, "pkg/run.py", "import torch\nfrom pkg.batch import ModelBatch\n\n"
                                  "def forward(batch: ModelBatch, dev):\n"
                                  "    a = batch.delimiters[0].to(dev)\n    return a, batch.rows[0].to(dev)\n")
    found = findings(run_cli, "pkg", cwd=tmp_path)
    assert sorted(found) == [5] and "is `ModelBatch.delimiters` (batch.py)" in found[5][1]  # not 6: on the device


STATE = """\
    from typing import Optional

    import torch


    class State:
        def __init__(self, dev):
            self.active = torch.ones(8, device=dev)


    class Manager:
        _instance: Optional[State] = None

        @classmethod
        def instance(cls) -> State:
            return cls._instance

        @classmethod
        def unknown(cls):
            return cls._instance
    """
RANKS = """\
    import torch

    from pkg.state import Manager


    class Runner:
        def forward(self):
            state = Manager.instance()
            other = Manager.unknown()
            a = state.active.sum().item()
            b = other.active.sum().item()
            return a, b
    """


def test_a_class_method_called_on_its_class_returns_what_its_annotation_names(tmp_path, run_cli):
    """A singleton's accessor (`Manager.instance() -> State`): the object is a `State`, whose attribute is
    built on the device; a method without a return annotation says nothing of what it returns."""
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\nselect = ['HTD2']\n")
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/state.py", STATE)
    write(tmp_path, "pkg/ranks.py", RANKS)
    found = findings(run_cli, "pkg", cwd=tmp_path)
    assert sorted(found) == [10]  # not 11: `Manager.unknown()` has no annotation
    assert "is `State.active` (state.py), where it is built on the device" in found[10][1]

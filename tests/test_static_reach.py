"""Static reach: interface dispatch, dispatch tables, method aliases, and memo caches keyed on runtime values."""

from __future__ import annotations

import json

import pytest

from conftest import write

from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source


def reported(run_cli, folder):
    _, out, _ = run_cli("check", str(folder), "--output-format", "json", "--no-cache")
    return {f"{e['filename'].rsplit('/', 1)[1]}:{e['location']['row']}": e for e in json.loads(out)}


INTERFACE = """\
from abc import ABC, abstractmethod
from typing import Protocol


class AttentionBackend(ABC):
    @abstractmethod
    def plan(self, batch):
        ...


class Sampler:
    def choose(self, logits):
        raise NotImplementedError


class Drafter(Protocol):
    def propose(self, batch):
        ...
"""
IMPLEMENTATIONS = """\
import torch

from base import AttentionBackend, Sampler


class FlashBackend(AttentionBackend):
    def plan(self, batch):
        return torch.tensor(batch, device="cuda")


class TritonBackend(AttentionBackend):
    def plan(self, batch):
        return torch.tensor(batch, device="cuda")


class Greedy(Sampler):
    def choose(self, logits):
        return torch.tensor(logits, device="cuda")


class Ngram:
    def propose(self, batch):
        return torch.tensor(batch, device="cuda")


class Unrelated:
    def choose(self, logits):
        return torch.tensor(logits, device="cuda")
"""
RUNNER = """\
def get_backend():
    return None


class Runner:
    def forward(self, batch, logits):
        get_backend().plan(batch)
        self.sampler.choose(logits)
        self.drafter.propose(batch)
"""


def test_an_interface_method_on_an_unknown_receiver_reaches_every_override(tmp_path, run_cli):
    for name, text in (("base.py", INTERFACE), ("impl.py", IMPLEMENTATIONS), ("runner.py", RUNNER)):
        write(tmp_path, name, text)
    found = reported(run_cli, tmp_path)
    # ABC with @abstractmethod, a NotImplementedError base, and a Protocol whose implementer does not inherit
    # it (no override to link: only classes deriving from the interface are its overrides).
    assert set(found) == {"impl.py:8", "impl.py:13", "impl.py:18"}
    assert all("runner.Runner.forward` (per step)" in e["message"] for e in found.values())


def test_without_an_interface_a_one_word_method_is_not_linked(tmp_path, run_cli):
    write(tmp_path, "base.py", INTERFACE.replace("raise NotImplementedError", "return None"))
    write(tmp_path, "impl.py", IMPLEMENTATIONS)
    write(tmp_path, "runner.py", RUNNER)
    assert "impl.py:18" not in reported(run_cli, tmp_path)


EXTERNAL_RUNNER = """\
import copy
import io
from multiprocessing.reduction import ForkingPickler


class Runner:
    def forward(self, batch, logits):
        {choose}
        copy.deepcopy(self.backend).plan(batch)  # a function's result may be a project object
"""


@pytest.mark.parametrize(
    "choose",
    ["ForkingPickler(io.BytesIO()).choose(logits)", "buffer = io.BytesIO()\n        buffer.choose(logits)"],
)
def test_a_method_of_an_object_a_library_class_made_reaches_no_project_method(tmp_path, run_cli, choose):
    runner = EXTERNAL_RUNNER.format(choose=choose)
    for name, text in (("base.py", INTERFACE), ("impl.py", IMPLEMENTATIONS), ("runner.py", runner)):
        write(tmp_path, name, text)
    found = reported(run_cli, tmp_path)
    assert "impl.py:18" not in found  # `Greedy.choose`, an override of `Sampler.choose`: the library's `choose`
    assert {"impl.py:8", "impl.py:13"} <= set(found)  # the overrides of `plan`, through `copy.deepcopy(...)`
    assert all("runner.Runner.forward` (per step)" in found[k]["message"] for k in ("impl.py:8", "impl.py:13"))


TABLES = """\
import torch


def _pack(ids, dev):
    return torch.tensor(ids, device=dev)


def _unpack(ids, dev):
    return ids


HANDLERS = {"pack": _pack, "unpack": _unpack}
LABELS = {"pack": "P", "unpack": "U"}


class Runner:
    def __init__(self):
        self.ops = {"a": self._a}
        self.later = {}
        self.later["b"] = self._b

    def forward(self, kind, ids, dev):
        self.ops[kind](ids, dev)
        self.later.get(kind)(ids, dev)
        return HANDLERS[kind](ids, dev)

    def _a(self, ids, dev):
        return torch.tensor(ids, device=dev)

    def _b(self, ids, dev):
        return torch.tensor(ids, device=dev)

    def _never(self, ids, dev):
        return torch.tensor(ids, device=dev)
"""


def test_a_call_through_a_dispatch_table_reaches_the_functions_it_is_built_from():
    found = {d.span.row: d.message for d in check_source(TABLES, Settings())}
    assert set(found) == {5, 28, 31}
    assert "called from `Runner.forward` (per step)" in found[5]


ALIASES = """\
import torch


class Updater:
    def __init__(self, sliding):
        self.update = self.update_sliding if sliding else self.update_full
        self.other = self.update_full

    def update(self, ids, dev):
        raise NotImplementedError()

    def update_sliding(self, ids, dev):
        return torch.tensor(ids, device=dev)

    def update_full(self, ids, dev):
        return torch.tensor(ids, device=dev)

    def unused(self, ids, dev):
        return torch.tensor(ids, device=dev)


class Backend:
    def __init__(self):
        self.updater = Updater(True)
        self.run = self._run

    def init_forward_metadata(self, ids, dev):
        self.updater.update(ids, dev)
        self.run(ids, dev)

    def _run(self, ids, dev):
        return torch.tensor(ids, device=dev)
"""


def test_a_method_bound_to_an_attribute_of_self_is_what_a_call_of_the_attribute_reaches():
    found = {d.span.row: d.message for d in check_source(ALIASES, Settings())}
    assert set(found) == {32}  # `self.run = self._run`; one file alone resolves no receiver of known class
    assert "called from `Backend.init_forward_metadata` (per step)" in found[32]


def test_a_method_alias_on_an_object_of_known_class_reaches_every_method_bound_to_it(tmp_path, run_cli):
    write(tmp_path, "backend.py", ALIASES)
    found = reported(run_cli, tmp_path)
    # both branches of the conditional alias; the stub it shadows raises; `unused` is reached by nothing
    assert set(found) == {"backend.py:13", "backend.py:16", "backend.py:32"}
    assert "called from `Backend.init_forward_metadata` (per step)" in found["backend.py:13"]["message"]


def test_a_method_alias_is_followed_across_files(tmp_path, run_cli):
    updater, backend = ALIASES.split("class Backend")
    write(tmp_path, "updater.py", updater)
    write(tmp_path, "backend.py", "import torch\nfrom updater import Updater\n\n\nclass Backend" + backend)
    found = reported(run_cli, tmp_path)
    assert {"updater.py:13", "updater.py:16"} <= set(found)
    assert "updater.py:19" not in found
    assert "backend.Backend.init_forward_metadata` (per step)" in found["updater.py:13"]["message"]

def test_a_dispatch_table_imported_from_another_module(tmp_path, run_cli):
    write(tmp_path, "ops.py", TABLES.split("class Runner")[0])
    write(tmp_path, "engine.py", "from ops import HANDLERS\n\n\ndef forward(kind, ids, dev):\n"
                                 "    return HANDLERS[kind](ids, dev)\n")
    found = reported(run_cli, tmp_path)
    assert set(found) == {"ops.py:5"}
    assert "engine.forward` (per step)" in found["ops.py:5"]["message"]


MEMOS = """\
import torch

_CACHE = {}
_TABLES = {}


def _build(shape, dev):
    return torch.tensor(shape, device=dev)


def forward(shape, dev):
    if shape not in _CACHE:
        _CACHE[shape] = torch.tensor(shape, device=dev)
    if "table" not in _TABLES:
        _TABLES["table"] = torch.tensor([1, 2], device=dev)
    if dev not in _TABLES:
        _TABLES[dev] = torch.tensor([1, 2], device=dev)
    t = _CACHE.get((shape, 1))
    if t is None:
        t = _build(shape, dev)
        _CACHE[(shape, 1)] = t
    return _CACHE[shape]
"""


def test_a_memo_keyed_on_a_runtime_value_is_per_request_and_a_constant_key_one_time():
    found = {d.span.row: d for d in check_source(MEMOS, Settings())}
    assert set(found) == {8, 13}  # not 15 (a constant key), nor 17 (a device: one value per process)
    assert all(d.level == "per-request" for d in found.values())
    assert "it runs on each cache miss of a memo keyed on a runtime value; `forward` runs per step" in found[13].message
    assert "called on each cache miss in `forward`" in found[8].message
    assert [d.span.row for d in check_source(MEMOS, Settings(min_level="per-step"))] == []


LOCAL_KEYS = """\
import torch

_LUT = {}


def forward(x, shape, device, dtype):
    key = (str(device), torch.float32)
    t = _LUT.get(key)
    if t is None:
        t = torch.tensor([1.0, 2.0], dtype=torch.float32, device=device)
        _LUT[key] = t
    slot = f"{x.device}"
    if slot not in _LUT:
        _LUT[slot] = torch.tensor([3.0, 4.0], device=x.device)
    by_shape = (shape, dtype)
    if by_shape not in _LUT:
        _LUT[by_shape] = torch.tensor(shape, device=device)
    return t
"""


def test_a_memo_keyed_by_a_local_holding_a_device_or_dtype_is_one_time_and_one_holding_a_shape_is_not():
    found = {d.span.row: d for d in check_source(LOCAL_KEYS, Settings())}
    assert set(found) == {17}  # not 10 (`key` is a device and a dtype), nor 14 (a device as a string)
    assert "it runs on each cache miss of a memo keyed on a runtime value" in found[17].message

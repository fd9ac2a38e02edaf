"""`facts.placement_callers`: a private function's parameter lives where every call of it in its module passes
it, and only when those calls are all its references and each shows the argument."""

from __future__ import annotations

import json
import textwrap

import pytest
from conftest import demo_package, row_of, write

from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source

SELECT = Settings(select=("HTD",))


def codes(source: str):
    return [d.code for d in check_source(textwrap.dedent(source), SELECT)]


CALLEE = """
def _read(ids, extra=None):
    return ids.tolist()
"""

CLASS_CALLEE = """
class Runner:
    def _read(self, ids, extra=None):
        return ids.tolist()

    @staticmethod
    def _static(ids):
        return ids.tolist()
"""


@pytest.mark.parametrize(
    "caller",
    [
        "def forward(x, dev):\n    return _read(x.to(dev))",
        "def forward(x, dev):\n    return _read(ids=x.to(dev))",
        "def forward(x, dev):\n    return _read(x.to(dev), None) + _read(x.cuda())",
        # a call that passes a constant passes no tensor, and does not decide
        "def forward(x, dev):\n    return _read(x.to(dev)) + _read(None)",
    ],
)
def test_every_call_passing_a_device_tensor_places_the_parameter(caller):
    assert codes("import torch\n" + CALLEE + "\n" + caller + "\n") == ["HTD201"]


@pytest.mark.parametrize(
    "caller",
    [
        "def forward(x, dev):\n    return _read(x.to(dev)) + _read(x)",  # one call passes an unknown tensor
        "def forward(x, dev):\n    return _read(x.to(dev)) + _read(x.cpu())",  # the calls disagree
        "def forward(x, dev):\n    return _read(*[x.to(dev)])",  # a starred argument hides it
        "def forward(x, dev, kw):\n    return _read(x.to(dev)) + _read(**kw)",  # and so may `**kwargs`
        "def forward(x, dev):\n    hooks = [_read]\n    return _read(x.to(dev))",  # referenced as a callback
        "def forward(x, dev):\n    return [_read(x.to(dev)) for _ in range(2)], (lambda: _read(x))()",
        "def forward(x, dev):\n    return 0",  # never called
    ],
)
def test_calls_that_do_not_all_show_a_device_tensor_leave_it_unknown(caller):
    assert codes("import torch\n" + CALLEE + "\n" + caller + "\n") == []


@pytest.mark.parametrize("line_end", ["\r", "\r\n"])
def test_the_callers_are_found_whatever_ends_the_lines(line_end):
    """Callers are looked for by the lines that write the name: a file saved with CR or CR LF line ends places
    the parameter as the same file with LF does."""
    source = "import torch\n" + CALLEE + "\ndef forward(x, dev):\n    return _read(x.to(dev))\n"
    assert codes(source) == ["HTD201"]
    assert [d.code for d in check_source(source.replace("\n", line_end), SELECT)] == ["HTD201"]


def test_a_public_function_checked_alone_may_be_called_from_other_modules():
    # Checked alone (flake8 with no project), no file can say that nothing else calls it.
    source = "import torch\n" + CALLEE.replace("_read", "read") + "\ndef forward(x, dev):\n    return read(x.to(dev))\n"
    assert codes(source) == []


@pytest.mark.parametrize(
    "method, expected",
    [
        ("    def forward(self, x, dev):\n        return self._read(x.to(dev))", ["HTD201"]),
        ("    def forward(self, x, dev):\n        return self._static(x.to(dev))", ["HTD201"]),
        # another receiver's `_read` may be another class's method
        ("    def forward(self, x, dev, other):\n        return self._read(x.to(dev)) + other._read(x)", []),
        ("    def forward(self, x, dev):\n        return super()._read(x) + self._read(x.to(dev))", []),
    ],
)
def test_a_private_method_is_placed_by_its_calls_on_self(method, expected):
    source = "import torch\n" + CLASS_CALLEE + "\n" + method + "\n"
    assert codes(source) == expected


def test_a_subclass_here_calls_the_method_it_inherits_and_one_that_overrides_it_does_not():
    base = "import torch\n" + CLASS_CALLEE + "\n"
    inherits = "class Child(Runner):\n    def forward(self, x, dev):\n        return self._read(x.to(dev))\n"
    overrides = inherits + "\n    def _read(self, ids, extra=None):\n        return ids\n"
    assert codes(base + inherits) == ["HTD201"]
    assert codes(base + overrides) == []


def test_the_message_names_the_calls():
    source = "import torch\n" + CALLEE + "\ndef forward(x, dev):\n    return _read(x.to(dev))\n"
    (found,) = check_source(textwrap.dedent(source), SELECT)
    assert "`ids` is, at every call of `_read(...)` in this file (line 7), a tensor that is moved" in found.message


def test_the_heuristic_switches_off():
    source = "import torch\n" + CALLEE + "\ndef forward(x, dev):\n    return _read(x.to(dev))\n"
    off = Settings(select=("HTD",), disable_heuristics=("placement-parameter-from-callers",))
    assert check_source(textwrap.dedent(source), off) == []


PUBLIC = """\
import torch


def read(ids, extra=None):
    return ids.tolist()


def forward(x, dev):
    return read(x.to(dev))


class Runner:
    def update(self, lens):
        return lens.max().item()

    def forward(self, x, dev):
        return self.update(x.to(dev))
"""


def public_findings(run_cli, root, *args):
    code, out, err = run_cli("check", "--select", "HTD2", "--output-format", "json", *args, ".", cwd=root)
    assert code in (0, 1), err
    return {d["location"]["row"]: d["message"] for d in json.loads(out)}


@pytest.fixture
def public(tmp_path):
    return demo_package(tmp_path, {"ops": PUBLIC, "other": "def unrelated(x):\n    return x\n"})


def test_a_public_function_no_other_file_calls_is_placed_by_its_module_calls(public, run_cli):
    found = public_findings(run_cli, public, "--no-cache")
    assert set(found) == {row_of(PUBLIC, "ids.tolist()"), row_of(PUBLIC, "lens.max().item()")}
    assert "no other file of the project calls `read`" in found[row_of(PUBLIC, "ids.tolist()")]


@pytest.mark.parametrize(
    ("other", "needle"),
    [
        ("from pkg.ops import read\n\ndef g(x):\n    return read(x)\n", "ids.tolist()"),
        ("import pkg.ops\n\ndef g(x):\n    return pkg.ops.read(x)\n", "ids.tolist()"),
        ("from pkg.ops import read\n\nHANDLERS = {'read': read}\n", "ids.tolist()"),
        ("def g(runner, x):\n    return runner.update(x)\n", "lens.max().item()"),
    ],
    ids=["called", "called through its module", "imported, not called", "a method of that name called"],
)
def test_a_public_function_another_file_may_call_is_not_placed(public, run_cli, other, needle):
    write(public, "pkg/other.py", other)
    found = public_findings(run_cli, public, "--no-cache")
    assert row_of(PUBLIC, needle) not in found
    assert len(found) == 1  # the other one still is


def test_a_warm_run_sees_another_file_start_calling_it(public, run_cli):
    row = row_of(PUBLIC, "ids.tolist()")
    assert row in public_findings(run_cli, public)
    write(public, "pkg/other.py", "from pkg import ops\n\ndef g(x):\n    return ops.read(x)\n")
    assert row not in public_findings(run_cli, public)


def test_module_calls_that_disagree_leave_a_name_convention_to_decide(public, run_cli):
    # sglang's aiter backend passes `qo_indptr if qo_indptr_cpu is None else qo_indptr_cpu`: the calls disagree,
    # and the mirror the function makes still says which tensor is the device copy.
    source = PUBLIC + textwrap.dedent("""\

        def plan(lens, out):
            lens_cpu = lens.to("cpu", dtype=torch.int32)
            out.copy_(lens_cpu)


        def prepare_for_decode(x, x_cpu, out, dev):
            plan(x.to(dev) if x_cpu is None else x_cpu, out)
        """)
    write(public, "pkg/ops.py", source)
    found = public_findings(run_cli, public, "--no-cache")
    assert "has a host mirror `lens_cpu`" in found[row_of(source, 'lens.to("cpu"')]


def test_the_public_heuristic_switches_off_alone(public, run_cli):
    found = public_findings(run_cli, public, "--no-cache", "--disable-heuristics",
                            "placement-parameter-from-module-callers")
    assert found == {}


@pytest.mark.parametrize(
    "mention, expected",
    [
        # a comment or a docstring that names the function calls nothing
        ("    # _read(x) needs the device copy", ["HTD201"]),
        ('    """Calls `_read()` on the moved ids."""', ["HTD201"]),
        ("    return _read(x.to(dev))  # _read syncs", ["HTD201"]),
        # a string without spaces may name it for a lookup; so may one in an f-string
        ('    getattr(__import__("m"), "_read")', []),
        ('    hooks = ["pkg.mod._read"]', []),
        ('    print(f"{_read}")', []),
        # a `#` inside a string starts no comment
        ('    label = "#" + "_read"', []),
    ],
)
def test_a_comment_or_prose_naming_the_function_is_no_reference(mention, expected):
    caller = "def forward(x, dev):\n" + mention + "\n    return _read(x.to(dev))\n"
    assert codes("import torch\n" + CALLEE + "\n" + caller) == expected


def test_prose_is_found_by_column_after_characters_of_several_bytes():
    """`ast` counts columns in UTF-8 bytes; the text search, in characters."""
    caller = 'def forward(x, dev):\n    s = "ü→ _read is called"; t = "→_read"\n    return _read(x.to(dev))\n'
    assert codes("import torch\n" + CALLEE + "\n" + caller) == []
    prose = caller.replace('t = "→_read"', 't = "→ _read me"')
    assert codes("import torch\n" + CALLEE + "\n" + prose) == ["HTD201"]


RECORDS = """\
import torch
from dataclasses import dataclass


@dataclass
class SampleArgs:
    samples: torch.Tensor


def _sample(logits):
    return SampleArgs(samples=torch.argmax(logits, dim=-1))


def sample(x, dev):
    return _sample(x.to(dev))
"""

READER = """\
import torch

from pkg.records import SampleArgs


def forward(args: SampleArgs):
    return args.samples.tolist()
"""


def test_a_private_function_placed_by_its_calls_tells_another_file_what_it_fills(tmp_path, run_cli):
    """What a module exports (a record's field filled in `_sample`) rests on its private functions' calls too:
    they are all in the module, whoever asks."""
    root = demo_package(tmp_path, {"records": RECORDS, "reader": READER})
    code, out, err = run_cli("check", "--select", "HTD2", "--output-format", "json", "--no-cache", ".", cwd=root)
    assert code == 1, err
    (found,) = json.loads(out)
    assert found["filename"].endswith("reader.py") and found["location"]["row"] == row_of(READER, ".tolist()")
    assert "at every call of `_sample(...)`" in found["message"]


OPS = """\
import torch


def read(lens):
    return lens.max().item()


class Pool:
    def free(self, indices):
        return indices.tolist()
"""

RUNNER = """\
import torch

from pkg.ops import Pool, read


class Runner:
    def __init__(self):
        self.pool = Pool()

    def forward(self, x, dev):
        self.pool.free(x.to(dev))
        return read(x.to(dev))
"""


def project_findings(run_cli, root, *args):
    code, out, err = run_cli("check", "--select", "HTD2", "--output-format", "json", *args, ".", cwd=root)
    assert code in (0, 1), err
    return {(d["filename"].rpartition("/")[2], d["location"]["row"]): d["message"] for d in json.loads(out)}


def test_a_public_function_is_placed_by_the_calls_other_files_make(tmp_path, run_cli):
    root = demo_package(tmp_path, {"ops": OPS, "runner": RUNNER})
    found = project_findings(run_cli, root, "--no-cache")
    read_row, free_row = ("ops.py", row_of(OPS, "lens.max()")), ("ops.py", row_of(OPS, "indices.tolist()"))
    assert set(found) == {read_row, free_row}
    expected = "`lens.max()` is, at every call of `read(...)` in the project (from `runner.py`), a tensor that is"
    assert expected in found[read_row]
    off = ("--disable-heuristics", "placement-parameter-from-project-callers")
    assert project_findings(run_cli, root, "--no-cache", *off) == {}


@pytest.mark.parametrize(
    "other",
    [
        "import torch\nfrom pkg.ops import read\n\ndef g(x):\n    return read(x)\n",  # passes an unknown tensor
        "import torch\nfrom pkg.ops import read\n\ndef g(x):\n    return read(x.cpu())\n",  # disagrees
        "from pkg.ops import read\n\nHANDLERS = {'read': read}\n",  # a callback, called unseen
        "import torch\nfrom pkg.ops import read\n\ndef g(x):\n    return read(*x)\n",  # hides the argument
    ],
    ids=["unknown", "host", "callback", "starred"],
)
def test_a_call_elsewhere_that_does_not_show_a_device_tensor_leaves_it_unknown(tmp_path, run_cli, other):
    root = demo_package(tmp_path, {"ops": OPS, "runner": RUNNER, "other": other})
    found = project_findings(run_cli, root, "--no-cache")
    assert ("ops.py", row_of(OPS, "lens.max()")) not in found
    assert ("ops.py", row_of(OPS, "indices.tolist()")) in found  # the method's calls are all still seen


def test_a_method_called_on_its_class_binds_no_receiver_and_is_left_unknown(tmp_path, run_cli):
    # `Pool.free(self, indices)` called on the class: its first argument is the receiver, its second `indices`
    other = "import torch\nfrom pkg.ops import Pool\n\ndef g(x, dev):\n    return Pool.free(x.to(dev), x.cpu())\n"
    root = demo_package(tmp_path, {"ops": OPS, "runner": RUNNER, "other": other})
    assert ("ops.py", row_of(OPS, "indices.tolist()")) not in project_findings(run_cli, root, "--no-cache")


def test_an_argument_that_is_the_callers_own_parameter_is_asked_of_its_callers(tmp_path, run_cli):
    middle = "import torch\nfrom pkg.ops import read\n\ndef relay(lens):\n    return read(lens)\n"
    top = "import torch\nfrom pkg.middle import relay\n\ndef forward(x, dev):\n    return relay(x.to(dev))\n"
    root = demo_package(tmp_path, {"ops": OPS, "middle": middle, "top": top})
    message = project_findings(run_cli, root, "--no-cache")[("ops.py", row_of(OPS, "lens.max()"))]
    expected = "(from `middle.py`), a tensor that is, at every call of `relay(...)` in the project (from `top.py`)"
    assert expected in message
    code, out, err = run_cli("explain", "--select", "HTD2", f"pkg/ops.py:{row_of(OPS, 'lens.max()')}", ".", cwd=root)
    chain = [line.strip() for line in out.splitlines() if line.strip().startswith("from ")]
    assert chain[:2] == ["from middle.py: line 5: `read(lens=lens, ...)` in `relay`",
                         "from top.py: line 5: `relay(lens=x.to(dev), ...)` in `forward`"], out


def test_a_warm_run_sees_a_calling_file_pass_something_else(tmp_path, run_cli):
    root = demo_package(tmp_path, {"ops": OPS, "runner": RUNNER})
    row = ("ops.py", row_of(OPS, "lens.max()"))
    assert row in project_findings(run_cli, root)
    # the same names called, so only what its calls pass tells the run to look again
    write(root, "pkg/runner.py", RUNNER.replace("return read(x.to(dev))", "return read(x.to(\"cpu\"))"))
    assert row not in project_findings(run_cli, root)
    write(root, "pkg/runner.py", RUNNER)
    assert row in project_findings(run_cli, root)


def test_a_modules_forward_is_called_unseen_so_no_call_that_names_it_places_it(tmp_path, run_cli):
    """`model(x)` runs `forward` through `nn.Module.__call__`, and no call names it there: the calls that do
    (`self.forward(...)`, `model.forward(...)`) are not all its calls."""
    layer = """\
import torch


class Layer(torch.nn.Module):
    def forward(self, lens):
        return lens.tolist()

    def warm(self, dev):
        return self.forward(torch.zeros(2, device=dev))
"""
    caller = """\
import torch
from pkg.layer import Layer


def step(layer: Layer, x, dev):
    return layer.forward(x.to(dev))
"""
    root = demo_package(tmp_path, {"layer": layer, "caller": caller})
    assert project_findings(run_cli, root, "--no-cache") == {}
    renamed = layer.replace("forward", "apply_lens")
    root = demo_package(tmp_path / "renamed", {"layer": renamed, "caller": caller.replace("forward", "apply_lens")})
    assert set(project_findings(run_cli, root, "--no-cache")) == {("layer.py", row_of(renamed, "lens.tolist()"))}


POSITIONS = """\
import torch


def positions(tokens, placeholder_id):
    mask = tokens == placeholder_id
    return mask.nonzero().tolist()
"""

CALLING = """\
import torch

from pkg.common import positions


def forward(x, dev, ids):
    return positions(x.cuda(), ids["image"])
"""


def test_an_operation_of_two_parameters_other_files_place_waits_on_the_first(tmp_path, run_cli):
    # `tokens == placeholder_id`: both are questions to the file that calls `positions`; the device answer for
    # `tokens` puts the comparison on the device, whatever `placeholder_id` turns out to be.
    root = demo_package(tmp_path, {"common": POSITIONS, "model": CALLING})
    code, out, err = run_cli("check", "--select", "HTD2", "--output-format", "json", "--no-cache", ".", cwd=root)
    assert code == 1, err
    assert {d["location"]["row"] for d in json.loads(out)} == {row_of(POSITIONS, "mask.nonzero()")}
    write(root, "pkg/model.py", CALLING.replace("x.cuda()", "x.cpu()"))  # a host answer leaves it on the host
    code, out, err = run_cli("check", "--select", "HTD2", "--output-format", "json", "--no-cache", ".", cwd=root)
    assert (code, json.loads(out)) == (0, []), err

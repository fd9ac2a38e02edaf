"""`facts.placement_callers`: a private function's parameter lives where every call of it in its module passes
it, and only when those calls are all its references and each shows the argument."""

from __future__ import annotations

import textwrap

import pytest

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


def test_a_public_function_may_be_called_from_other_modules():
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

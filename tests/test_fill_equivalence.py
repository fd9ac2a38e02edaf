"""A literal scalar becomes `torch.full` / `torch.zeros` / `torch.ones` on the device only when that builds the
very same tensor: both forms run here under torch (CPU), and their value, dtype, shape, sign of zero,
`requires_grad` and leaf status must agree, under the default dtype and under `torch.set_default_dtype`."""

from __future__ import annotations

import ast

import pytest

from h2dlint.facts.settings import Settings
from h2dlint.fixing.autofix import fix_source

torch = pytest.importorskip("torch")

LITERALS = ["0", "1", "-1", "7", "0.0", "-0.0", "1.0", "2.5", "True", "False", "1j", "0j", "-2.5j", "2**40"]
DTYPES = [None, "torch.bool", "torch.int32", "torch.int64", "torch.float16", "torch.float64", "torch.complex64"]
GRADS = [None, "False", "True"]


def _program(literal, dtype, grad):
    keywords = "".join(f", {k}={v}" for k, v in (("dtype", dtype), ("requires_grad", grad)) if v is not None)
    return f"import torch\n\n\ndef forward(dev):  # h2dlint: hot\n    return torch.tensor({literal}{keywords}, device=dev)\n"


def _outcome(source):
    namespace = {}
    exec(compile(source, "<case>", "exec"), namespace)
    try:
        t = namespace["forward"]("cpu")
    except Exception as error:
        return ("raises", type(error).__name__)
    real = t.real if t.is_complex() else t
    sign = None if t.dtype == torch.bool else torch.signbit(real).tolist()
    return (t.dtype, tuple(t.shape), t.tolist(), sign, t.requires_grad, t.is_leaf)


def _cases():
    for literal in LITERALS:
        for dtype in DTYPES:
            for grad in GRADS:
                yield literal, dtype, grad


@pytest.mark.parametrize("default_dtype", [torch.float32, torch.float64])
def test_every_fill_builds_what_the_constructor_builds(default_dtype):
    fills = 0
    previous = torch.get_default_dtype()
    torch.set_default_dtype(default_dtype)
    try:
        for literal, dtype, grad in _cases():
            source = _program(literal, dtype, grad)
            fixed, count, _ = fix_source(source, Settings())
            if count == 0:
                continue
            call = ast.parse(fixed).body[-1].body[-1].value.func.attr
            assert call in ("full", "zeros", "ones"), fixed
            fills += 1
            assert _outcome(fixed) == _outcome(source), (literal, dtype, grad, fixed)
    finally:
        torch.set_default_dtype(previous)
    assert fills > 100  # most literal scalars are filled; the rest are left alone, never changed


def test_the_fill_picks_zeros_ones_and_states_the_inferred_dtype():
    fixed, _, _ = fix_source(_program("0", None, None), Settings())
    assert "torch.zeros((), dtype=torch.int64, device=dev)" in fixed
    fixed, _, _ = fix_source(_program("True", None, None), Settings())
    assert "torch.ones((), dtype=torch.bool, device=dev)" in fixed
    fixed, _, _ = fix_source(_program("1.0", None, None), Settings())
    assert "torch.ones((), device=dev)" in fixed
    fixed, _, _ = fix_source(_program("-0.0", None, None), Settings())
    assert "torch.full((), -0.0, device=dev)" in fixed


def test_literals_a_fill_would_change_are_not_filled():
    for literal in ("1e39", "9223372036854775808"):
        fixed, count, remaining = fix_source(_program(literal, None, None), Settings())
        assert count == 0 and "torch.tensor(" in fixed
        assert "build the tensor once outside the loop" in remaining[0].message

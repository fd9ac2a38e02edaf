"""`facts.tensor_dims`: which tensor expressions certainly have a dimension (a host operand with one keeps
arithmetic on the host), and `NameResolver.unpacked_value`, which names unpacked from a call follow."""

from __future__ import annotations

import ast
import textwrap

import pytest

from h2dlint.facts.bindings import function_bindings, module_bindings
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.tensor_dims import has_dims


def _last_return(source: str):
    module = ast.parse("import torch\n" + textwrap.dedent(source))
    function = module.body[1]
    names = NameResolver.of(module_bindings(module), function_bindings(function))
    returned = [n for n in ast.walk(function) if isinstance(n, ast.Return)][-1].value
    return returned, names


def dims(source: str) -> bool:
    returned, names = _last_return(source)
    return has_dims(returned, names)


@pytest.mark.parametrize(
    "body",
    [
        "return torch.arange(n)",
        "return torch.zeros(n, 4)",
        "return torch.zeros((n,))",
        "return torch.full((2,), 0)",
        "return torch.tensor([n])",
        "return torch.cat(parts)",
        "x = torch.arange(n)\n    return x[:, None]",
        "x = t.reshape(-1)\n    return x[1:]",
        "return t.flatten().long()",
        "return t[None] * w + offsets",
        "rows, cols = torch.meshgrid(a, b)\n    return rows",
        "x = torch.arange(n)\n    x = x.view(2, -1)\n    return x",
        "x = torch.arange(n).view(2, -1)\n    return x.transpose(0, 1).reshape(-1) if c else x.t()",
    ],
)
def test_shaped(body):
    assert dims(f"def f(n, t, w, a, b, parts, offsets, c):\n    {body}\n")


@pytest.mark.parametrize(
    "body",
    [
        "return torch.tensor(2.0)",  # 0-dim
        "return torch.zeros(size)",  # `size` may be `()`
        "return torch.full(size, 0)",
        "return torch.arange(n)[0]",  # an integer index removes the only dimension
        "return torch.arange(n).sum()",  # a reduction may leave none
        "return t.transpose(0, 0)",  # a 0-dim tensor accepts it
        "return t.view(size)",
        "return torch.arange(n) if c else t",  # only one branch is shaped
        "return t",
        "if c:\n        x = torch.arange(n)\n    else:\n        x = t\n    return x",  # only one binding is shaped
    ],
)
def test_not_known_shaped(body):
    assert not dims(f"def f(n, t, c, size):\n    {body}\n")


def test_unpacked_value_is_the_call_that_reaches_the_use():
    returned, names = _last_return(
        """
        def f(a, b):
            rows, cols = torch.meshgrid(a, b)
            rows = rows.reshape(-1)
            return rows
        """
    )
    reshaped = names.value_at(returned)
    assert ast.unparse(reshaped) == "rows.reshape(-1)"
    assert ast.unparse(names.unpacked_value(reshaped.func.value)) == "torch.meshgrid(a, b)"
    assert names.unpacked_value(returned) is None  # the reshape reaches the return, not the unpacking


def test_unpacked_value_is_none_for_a_tuple_of_values():
    returned, names = _last_return("def f(a, b):\n    x, y = a, b\n    return x\n")
    assert names.unpacked_value(returned) is None
    assert ast.unparse(names.value_at(returned)) == "a"

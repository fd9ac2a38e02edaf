"""`facts.bindings`: the value each assignment binds, which placement follows (`NameResolver.value_at`)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from h2dlint.facts.bindings import function_bindings, module_bindings
from h2dlint.facts.scopes import NameResolver


def _value_of_last_use(source: str):
    module = ast.parse(textwrap.dedent(source))
    function = module.body[0]
    names = NameResolver.of(module_bindings(module), function_bindings(function))
    use = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == "parts"][-1]
    return names.value_at(use)


@pytest.mark.parametrize("binding", ["parts = []", "parts: list = []", "parts: List[torch.Tensor] = []"])
def test_plain_and_annotated_assignments_bind_their_value(binding):
    value = _value_of_last_use(f"def f():\n    {binding}\n    return parts\n")
    assert isinstance(value, ast.List) and not value.elts


def test_an_annotation_without_a_value_binds_none():
    assert _value_of_last_use("def f(x):\n    parts: list\n    parts = x\n    return parts\n").id == "x"
    assert _value_of_last_use("def f():\n    parts: list\n    return parts\n") is None

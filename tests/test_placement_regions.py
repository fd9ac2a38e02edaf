"""Where device tests are looked for: only on the lines that name a test's word, counted as `ast` counts."""

from __future__ import annotations

import ast

from h2dlint.facts.bindings import module_bindings
from h2dlint.facts.placement_regions import DEVICE_TEST_WORDS, Regions, rows_naming
from h2dlint.facts.placement_values import Place
from h2dlint.facts.scopes import NameResolver

SOURCE = "def f(x):\r\n    y = 1\r    if x.is_cuda:\n        return x\n    return x.device.type\n"


def test_rows_naming_counts_every_line_end_python_counts():
    assert rows_naming(SOURCE, DEVICE_TEST_WORDS) == [3, 5]
    assert rows_naming("a\nb\n", DEVICE_TEST_WORDS) == []


def test_a_device_test_is_found_with_the_source_and_without_it():
    module = ast.parse(SOURCE)
    function = module.body[0]
    use = function.body[1].body[0].value  # the `x` returned under `if x.is_cuda:`
    names = NameResolver.of(module_bindings(module, False))
    for source in (SOURCE, None):
        found = Regions(None, (False, True), source).tested(function, use, names)
        assert found is not None and found.place is Place.DEVICE


def test_a_function_without_a_test_word_has_no_device_test():
    text = "def f(x):\n    if x:\n        return x\n"
    module = ast.parse(text)
    use = module.body[0].body[0].body[0].value
    names = NameResolver.of(module_bindings(module, False))
    assert Regions(None, (False, True), text).tested(module.body[0], use, names) is None

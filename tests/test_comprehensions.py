"""`facts.comprehensions`: a use inside a comprehension reads the comprehension's own variable, whose items
come from the container it loops over; elsewhere the function's name of the same spelling."""

from __future__ import annotations

import ast
import textwrap

from h2dlint.facts.comprehensions import Comprehensions


def _uses(source: str, name: str):
    function = ast.parse(textwrap.dedent(source)).body[0]
    uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    return Comprehensions(function), sorted(uses, key=lambda n: (n.lineno, n.col_offset))


def _source(found):
    own, container = found
    return own, None if container is None else ast.unparse(container)


def test_the_variable_of_a_comprehension_takes_items_of_its_container_and_the_loop_its_own():
    index, (inside, outside) = _uses(
        """
        def f(lens, parts):
            a = [v.item() for v in lens]
            for v in parts:
                print(v)
        """,
        "v",
    )
    assert _source(index.item_source(inside)) == (True, "lens")
    assert _source(index.item_source(outside)) == (False, None)


def test_the_first_iterable_is_read_in_the_enclosing_scope():
    index, uses = _uses("def f(v):\n    return [v for v in v.split(2)]\n", "v")
    elt, iterable = uses  # `v` the item, then `v` in `v.split(2)` (the parameter)
    assert _source(index.item_source(elt)) == (True, "v.split(2)")
    assert _source(index.item_source(iterable)) == (False, None)


def test_enumerate_and_zip_items_and_unpacked_targets():
    index, (use,) = _uses("def f(xs):\n    return [w for i, w in enumerate(xs)]\n", "w")
    assert _source(index.item_source(use)) == (True, "xs")
    index, (use,) = _uses("def f(pairs):\n    return [b for a, b in pairs]\n", "b")
    assert _source(index.item_source(use)) == (True, None)  # its own variable, of unknown container


def test_the_innermost_comprehension_that_binds_the_name_decides():
    index, (use,) = _uses("def f(rows):\n    return [[x for x in row] for row in rows]\n", "x")
    assert _source(index.item_source(use)) == (True, "row")
    index, uses = _uses("def f(rows):\n    return [[row for x in row] for row in rows]\n", "row")
    assert [_source(index.item_source(use)) for use in uses] == [(True, "rows")] * 2  # the outer one's `row`


def test_a_fed_index_knows_the_comprehensions_it_was_told_of_once_each():
    function = ast.parse("def f(lens, v):\n    return [v.item() for v in lens], v\n").body[0]
    comprehension = next(n for n in ast.walk(function) if isinstance(n, ast.ListComp))
    inside, outside = sorted(
        (n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == "v" and isinstance(n.ctx, ast.Load)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    index = Comprehensions.fed()
    assert _source(index.item_source(inside)) == (False, None)  # not told yet: the function's own `v`
    index.add(comprehension)
    index.add(comprehension)
    assert _source(index.item_source(inside)) == (True, "lens")
    assert _source(index.item_source(outside)) == (False, None)

"""`facts.reaching`: which bindings of a local name may reach a use, as the placement analysis follows them
for a name bound in branches."""

from __future__ import annotations

import ast
import textwrap

import pytest

from h2dlint.facts.bindings import function_bindings
from h2dlint.facts.scopes import NameResolver


def reaching(source: str):
    """The values (as source) that may reach the last use of `x` in the function, or None."""
    function = ast.parse(textwrap.dedent(source)).body[0]
    names = NameResolver.of(function_bindings(function))
    use = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == "x" and isinstance(n.ctx, ast.Load)]
    found = names.reaching_values(max(use, key=lambda n: (n.lineno, n.col_offset)))
    return None if found is None else [ast.unparse(value) for value in found]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (  # both branches bind: either may be the one
            """
            def f(c):
                if c:
                    x = a()
                else:
                    x = b()
                return x
            """,
            ["a()", "b()"],
        ),
        (  # a binding that certainly runs, then one that may: both
            """
            def f(c):
                x = a()
                if c:
                    x = b()
                return x
            """,
            ["a()", "b()"],
        ),
        (  # the last binding certainly runs: only it, and nothing before it
            """
            def f(c):
                if c:
                    x = a()
                x = b()
                return x
            """,
            ["b()"],
        ),
        (  # a parameter rebound in a branch: the parameter may reach, and it has no plain value
            """
            def f(x, c):
                if c:
                    x = a()
                return x
            """,
            None,
        ),
        (  # a loop target is no plain binding either
            """
            def f(items, c):
                x = a()
                for x in items:
                    pass
                return x
            """,
            None,
        ),
        (  # an update in place keeps the value where the bindings before it put it: they reach through it
            """
            def f(items, c):
                x = a()
                for item in items:
                    x += item
                if c:
                    x = b()
                return x
            """,
            ["a()", "b()"],
        ),
    ],
)
def test_reaching_values(source, expected):
    assert reaching(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        """
        def f(c):
            x = a()
            if c:
                x = b()
            else:
                return x
        """,
        # sglang's process_batch_result_decode: `elif` is the `else` of the first `if`, and an unpacking of a
        # call there (no plain value) does not reach the other branch either
        """
        def f(c, d):
            x = a()
            if c:
                x, y = g()
            elif d:
                return x
        """,
    ],
)
def test_a_binding_in_one_branch_of_an_if_never_reaches_the_other(source):
    assert reaching(source) == ["a()"]


def test_a_binding_in_a_branch_still_reaches_a_use_after_the_if():
    source = """
        def f(c):
            x = a()
            if c:
                x = b()
            else:
                pass
            return x
        """
    assert reaching(source) == ["a()", "b()"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f(xs):\n    for x in xs:\n        print(x)\n", "xs"),
        ("def f(xs):\n    for x in xs:\n        x = x.view(-1)\n        print(x)\n", None),  # the view, not an item
        ("def f(xs, ys):\n    for i, x in zip(ys, xs):\n        x = x.view(-1)\n        x = x + 1\n", None),
        ("def f(xs):\n    for x in xs:\n        print(x)\n        x = 2\n    print(x)\n", None),  # after the loop
    ],
    ids=["bound once", "rebound from itself", "read after a rebinding", "read after the loop"],
)
def test_a_loop_variable_rebound_in_the_body_takes_items_where_the_loop_binding_reaches(source, expected):
    function = ast.parse(source).body[0]
    names = NameResolver.of(function_bindings(function))
    uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == "x" and isinstance(n.ctx, ast.Load)]
    last = max(uses, key=lambda n: (n.lineno, n.col_offset))
    found = names.loop_iterable(last)
    assert (None if found is None else ast.unparse(found)) == expected
    if "x.view" in source:  # the first read, in `x = x.view(-1)`, is the loop's item
        first = min(uses, key=lambda n: (n.lineno, n.col_offset))
        assert ast.unparse(names.loop_iterable(first)) == "xs"

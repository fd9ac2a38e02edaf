"""Where PyTorch and Python take a Python number from an argument (HTD201).

A 0-dim tensor passed where a number is expected is read with `Tensor.__index__` or `.item()`: on the device, a
copy to the host and a stream sync. The places, as data:
- a slice bound (`x[:n]`, `x[a:b] = v`) and a `range(n)` bound;
- the bounds of `torch.arange` and `torch.linspace`;
- the fill value of `torch.full`, `torch.full_like` and `x.new_full`;
- a size: the sizes of the factories (`torch.zeros(n, d)`, `torch.empty((n, d))`, `size=`), of `x.new_zeros`
  and its kin, and of the shape methods (`x.view(n, -1)`, `x.reshape`, `x.expand`, `x.repeat`), and the start and
  length of `x.narrow(dim, start, length)`.

`number_arguments` lists what a call passes at those places, each with the clause a message names it by. Whether
an argument is a device tensor is the rule's question: sizes and bounds are mostly Python numbers.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional, Tuple

from h2dlint.facts.arguments import argument, keyword_value, positional_args

# torch functions whose arguments are numbers, by the keyword each position also has.
BOUND_FACTORIES: Dict[str, Tuple[str, ...]] = {
    "torch.arange": ("start", "end", "step"),
    "torch.linspace": ("start", "end", "steps"),
}
FILL_FACTORIES: Dict[str, int] = {"torch.full": 1, "torch.full_like": 1}  # the position of `fill_value`
# torch factories whose size is every leading positional argument, or one tuple (`torch.zeros(n, d)`,
# `torch.zeros((n, d))`), or `size=`.
SIZE_FACTORIES = frozenset("torch.zeros torch.ones torch.empty torch.rand torch.randn torch.randperm".split())
FIRST_IS_SIZE = frozenset({"torch.full"})  # `torch.full(size, fill_value)`: the size is the first argument only
# Tensor methods whose positional arguments are all sizes (`x.view(n, -1)`, `x.new_zeros((n, d))`).
SIZE_METHODS = frozenset("new_zeros new_ones new_empty view reshape expand repeat".split())
# Tensor methods that take numbers at some positions only: `new_full(size, fill_value)`, `narrow(dim, start,
# length)`; each position with its clause.
SIZE = "a size"  # the clause of a size: a tuple or list passed there holds one size per item
NUMBER_POSITIONS: Dict[str, Tuple[Tuple[int, str, str], ...]] = {
    "new_full": ((0, "size", SIZE), (1, "fill_value", "the fill value")),
    "narrow": ((1, "start", "a `narrow` start"), (2, "length", "a `narrow` length")),
}
PYTHON_BOUNDS = frozenset({"range"})  # builtins whose arguments are bounds
PYTHON_NUMBERS = ("int", "float", "complex")  # builtins that convert their one argument to a number

Numbers = List[Tuple[ast.expr, str]]  # an argument taken as a number, and the clause that names the place


def number_arguments(call: ast.Call, qualified: Optional[str]) -> Numbers:
    """The arguments `call` takes as Python numbers, each with the clause a message names it by ("a size from a
    device tensor"); `qualified` is the callee's torch name (`torch.zeros`), None for a method or a builtin."""
    if qualified is None:
        return _method_numbers(call) if isinstance(call.func, ast.Attribute) else _builtin_numbers(call)
    if qualified in BOUND_FACTORIES:
        bounds = [*positional_args(call), *_keywords(call, BOUND_FACTORIES[qualified])]
        return _named(bounds, f"a `{qualified}` bound")
    found: Numbers = []
    if qualified in FILL_FACTORIES:
        found += _named([argument(call, FILL_FACTORIES[qualified], "fill_value")], "the fill value")
    if qualified in FIRST_IS_SIZE:
        found += _sizes([argument(call, 0, "size")])
    elif qualified in SIZE_FACTORIES:
        found += _sizes([*positional_args(call), keyword_value(call, "size")])
    return found


def slice_bounds(index: ast.expr) -> Iterator[ast.expr]:
    """The bounds of the slices in a subscript's index (`x[a:b]`, `x[:, :n]`), that are not literals."""
    parts: Tuple[ast.expr, ...] = tuple(index.elts) if isinstance(index, ast.Tuple) else (index,)
    for part in parts:
        if isinstance(part, ast.Slice):
            for bound in (part.lower, part.upper, part.step):
                if bound is not None and not isinstance(bound, ast.Constant):
                    yield bound


def _method_numbers(call: ast.Call) -> Numbers:
    assert isinstance(call.func, ast.Attribute)
    method = call.func.attr
    if method in SIZE_METHODS:
        return _sizes([*positional_args(call), keyword_value(call, "size")])
    found: Numbers = []
    for position, keyword, what in NUMBER_POSITIONS.get(method, ()):
        given = [argument(call, position, keyword)]
        found += _sizes(given) if what == SIZE else _named(given, what)
    return found


def _builtin_numbers(call: ast.Call) -> Numbers:
    if not isinstance(call.func, ast.Name) or call.keywords:
        return []
    name = call.func.id
    if name in PYTHON_NUMBERS and len(call.args) == 1:
        return [(call.args[0], f"`{name}(...)` of a device tensor")]
    return _named(list(call.args), f"a `{name}` bound") if name in PYTHON_BOUNDS else []


def _sizes(arguments: List[Optional[ast.expr]]) -> Numbers:
    """The sizes among `arguments`: each one, or the items of a tuple or list passed as one size."""
    sizes: List[Optional[ast.expr]] = []
    for given in arguments:
        sizes += given.elts if isinstance(given, (ast.Tuple, ast.List)) else [given]
    return _named(sizes, SIZE)


def _named(arguments: List[Optional[ast.expr]], place: str) -> Numbers:
    what = f"{place} from a device tensor"
    return [(a, what) for a in arguments if a is not None and not isinstance(a, (ast.Constant, ast.Starred))]


def _keywords(call: ast.Call, names: Tuple[str, ...]) -> List[Optional[ast.expr]]:
    return [keyword_value(call, name) for name in names]

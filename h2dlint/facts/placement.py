"""Where a tensor lives: in pageable host memory, in pinned host memory, on the host (which of the two not
known), on a device, or unknown; with the evidence, for the message, and the chain followed, for `explain`.

`placement_of(expr, scope)` answers at the node a rule looks at, in the checker's single walk, by following
the expression back through what this file shows:

- constructors and factories (`torch.tensor`, `torch.zeros(..., device=...)`, `pin_memory=True`), a device
  context around them (`with torch.device(dev):`, `torch.set_default_device`), `.cpu()`, `.cuda()`,
  `.to(<device>)`, `.pin_memory()`, `torch.from_numpy`;
- views and placement-preserving methods (`view`, slicing, `long()`, `contiguous()`, arithmetic with
  numbers), conditional expressions whose branches agree, containers of tensors that agree;
- `torch.cat`/`stack`, from whichever joined tensors are known: PyTorch joins tensors of one device only;
- local names, through the binding that reaches the use (`scopes.NameResolver.value_at`) or, for a name
  bound in branches, every binding that may (`facts.reaching`), tuple unpacking of literal tuples and
  augmented assignment;
- elementwise torch functions (`torch.where`, `torch.eq`) and operators, where a device operand is; a host
  operand with a dimension (`tensor_dims`) keeps them on the host, as a device operand beside it would raise;
  `device=t.device`, where `t` is when that is known;
- names unpacked from a call (`rows, cols = torch.meshgrid(a, b)`, `vals, ids = x.topk(k)`) and loop and
  comprehension variables (`for row in rows:`, through `enumerate` and `zip`): where every item of the result
  or the container is;
  the tensor fields of an operation's result (`x.max(-1).indices`), where the result is;
- `self.x`, through what every method of the class assigns to it, and calls of the module's functions and
  the class's methods, through what they return (`placement_summary`); a parameter of a private function,
  through what every call of it in the module passes (`placement_callers`);
- naming conventions (`placement_conventions`): `*_cpu`, `*_gpu`, `logits`, a tensor with a `<name>_cpu` sibling.

Evidence that conflicts (a name that says host for a tensor moved to the device, or tested to be on it by
`if x_cpu.is_cuda:`), and alternatives that disagree, give `DISPUTED`: unknown, and so is what is computed from
it, which no name then overrules. Anything not followed gives UNKNOWN. `None`, as one alternative of several
(`t.cpu() if c else None`), is no tensor: the others decide. Rules report only known placements. The values
and their wording are in `placement_values`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Optional, Tuple

from h2dlint.facts.arguments import (
    has_star_args, is_empty_factory, is_false_literal, keyword_value, moved_to, positional_args, tensor_device,
)
from h2dlint.facts.constructs import device_copy, is_host_device, is_pinned, looks_like_dtype, may_be_host_device
from h2dlint.facts.placement_exports import is_unfilled_list
from h2dlint.facts.placement_values import (
    CYCLE, DISPUTED, EITHER, EMPTY, NO_TENSOR, UNKNOWN, Place, Placement, agree, agree_all, short,
)
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.syntax import attribute_looked_up, last_name
from h2dlint.facts.tensor_dims import has_dims
from h2dlint.facts.tensor_ops import BROADCASTING as _BROADCASTING
from h2dlint.facts.tensor_ops import DATA_BUILDERS as _DATA
from h2dlint.facts.tensor_ops import ELEMENTWISE as _ELEMENTWISE
from h2dlint.facts.tensor_ops import FACTORIES, SAME_PLACE_METHODS, VIEW_METHODS
from h2dlint.facts.tensor_ops import FOLLOW_INPUT as _FOLLOW_INPUT
from h2dlint.facts.tensor_ops import HELPERS as _HELPERS
from h2dlint.facts.tensor_ops import JOINS as _JOINS
from h2dlint.facts.tensor_ops import LIKE_FACTORIES as _LIKE
from h2dlint.facts.tensor_ops import MESHES as _MESHES
from h2dlint.facts.tensor_ops import NEW_METHODS as _NEW_METHODS

# The tensor operands of an elementwise torch function given by keyword (`torch.where(c, input=a, other=b)`).
_OPERAND_KEYWORDS = frozenset({"input", "other", "condition", "elements", "test_elements", "boundaries", "self"})
# Fields of what a tensor operation returns that are tensors where it is: `x.max(-1).values`, `x.sort().indices`,
# `x.float().T`, `x.detach().data`.
_RESULT_FIELDS = frozenset({"values", "indices", "T", "mT", "data"})
_MAX_DEPTH = 32  # steps followed back from the use (names, methods, attributes, returns): a bound on cost
_MAX_CHOICES = 4  # bindings of a name in branches, all of which may reach a use, that are followed
_CHOICE_DEPTH = 8  # the steps one such choice costs


@dataclass(frozen=True)
class PlacementScope:
    """What `placement_of` may consult at one point of a function."""

    names: NameResolver
    # Why a tensor built at this node defaults to a device ("inside `with torch.device(...)` at line 9"), or None.
    device_context: Callable[[ast.AST], Optional[str]] = lambda node: None
    attribute: Callable[[str, int], Placement] = lambda name, depth: UNKNOWN  # `self.<name>` in this class
    # `obj.<name>` where the class of `obj` is known (`facts.placement_typed`)
    typed_attribute: Callable[[ast.Attribute, int], Placement] = lambda expr, depth: UNKNOWN
    returned: Callable[[ast.Call, int], Placement] = lambda call, depth: UNKNOWN  # what a call of ours returns
    convention: Callable[[ast.expr], Placement] = lambda expr: UNKNOWN  # what the names say
    appended: Callable[[str], Tuple[ast.expr, ...]] = lambda name: ()  # `name.append(x)`, `name[i] = x` here: each x
    # What a branch's test says of this name or attribute here (`x.is_cuda`: facts.placement_regions), or None.
    tested: Callable[[ast.expr], Optional[Placement]] = lambda expr: None
    # Where the calls of this function pass its parameter `name` (`facts.placement_callers`).
    passed: Callable[[str, int], Placement] = lambda name, depth: UNKNOWN
    # Whether a device is, or is unpacked from, what a function of this module returns that may be the CPU.
    returned_host_device: Callable[[ast.expr], bool] = lambda expr: False

_BINARY_OPERATORS = (
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.BitAnd, ast.BitOr, ast.BitXor, ast.MatMult
)
# Comparisons that compute a tensor of the operands' placement (`is`, `in` give a Python bool).
_TENSOR_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def placement_of(expr: ast.expr, scope: PlacementScope, depth: int = 0) -> Placement:
    """Where the tensor `expr` evaluates to lives, with its evidence (see the module docstring)."""
    if depth > _MAX_DEPTH:
        return UNKNOWN
    if isinstance(expr, (ast.Name, ast.Attribute)):
        tested = scope.tested(expr)
        if tested is not None:  # `if seq_lens_cpu.is_cuda:` guards against a misuse the name rules out: unknown
            return agree(tested, scope.convention(expr))
    found = _provenance(expr, scope, depth)
    if not isinstance(expr, (ast.Name, ast.Attribute)) or found is EITHER or found is DISPUTED:
        return found  # `x[i]`: `x`'s name was weighed already, against its own provenance
    named = scope.convention(expr)
    return agree(found, named) if named.place is not Place.UNKNOWN else found


def _provenance(expr: ast.expr, scope: PlacementScope, depth: int) -> Placement:
    if isinstance(expr, ast.Name):
        return _name(expr, scope, depth)
    if isinstance(expr, ast.Attribute):
        if expr.attr in _RESULT_FIELDS and isinstance(expr.value, ast.Call):  # `x.topk(k).indices`
            return placement_of(expr.value, scope, depth + 1)
        if isinstance(expr.value, ast.Name) and expr.value.id == "self":
            return scope.attribute(expr.attr, depth + 1).via(f"line {expr.lineno}: `self.{expr.attr}`")
        found = scope.typed_attribute(expr, depth + 1)
        return found.via(f"line {expr.lineno}: `{short(expr)}`") if found.place is not Place.UNKNOWN else found
    if isinstance(expr, ast.Subscript):  # a view of a tensor, or an item of a container of them
        return placement_of(expr.value, scope, depth + 1)
    if isinstance(expr, ast.Call):
        return _call(expr, scope, depth)
    if isinstance(expr, ast.IfExp):
        return agree_all(placement_of(branch, scope, depth + 1) for branch in (expr.body, expr.orelse))
    if isinstance(expr, (ast.List, ast.Tuple)):  # a container, as `torch.cat` or a subscript reads it
        return agree_all(placement_of(item, scope, depth + 1) for item in expr.elts) if expr.elts else UNKNOWN
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp)):
        scope.names.note_comprehension(expr)  # its variables are its own, whether or not the walk got there
        return placement_of(expr.elt, scope, depth + 1)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, _BINARY_OPERATORS):
        return _arithmetic((expr.left, expr.right), scope, depth)
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], _TENSOR_COMPARISONS):
        return _arithmetic((expr.left, expr.comparators[0]), scope, depth)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.Invert)):
        return placement_of(expr.operand, scope, depth + 1).unpinned()
    if isinstance(expr, ast.Constant) and expr.value is None:
        return NO_TENSOR
    return UNKNOWN


def _name(use: ast.Name, scope: PlacementScope, depth: int) -> Placement:
    own, container = scope.names.comprehension_item(use)  # `v` in `[v.item() for v in lens]`: an item of `lens`
    if own:
        if container is None:
            return UNKNOWN
        return placement_of(container, scope, depth + 1).via(f"line {container.lineno}: `for {use.id} in ...`")
    value = scope.names.value_at(use)
    if value is None:
        target = scope.names.augmented_target(use)  # `x += y` keeps `x` where it was
        if target is not None:
            return placement_of(target, scope, depth + 1)
        unpacked = scope.names.unpacked_value(use)  # `rows, cols = torch.meshgrid(a, b)`: where every item is
        if unpacked is not None:
            return placement_of(unpacked, scope, depth + 1).via(f"line {unpacked.lineno}: `{use.id}`, unpacked")
        iterable = scope.names.loop_iterable(use)  # `for row in rows:`: an item, where the container's are
        if iterable is not None:
            return placement_of(iterable, scope, depth + 1).via(f"line {iterable.lineno}: `for {use.id} in ...`")
        if scope.names.is_stable_parameter(use.id):  # `def _pack(lens)`: where its callers pass it
            return scope.passed(use.id, depth + 1)
        return _one_of_bindings(use, scope, depth)
    # `ids = []` then `ids.append(x)`, or `[None] * n` then `ids[i] = x`: where every item lives
    if is_unfilled_list(value):
        items = scope.appended(use.id)
        found = agree_all(placement_of(item, scope, depth + 1) for item in items) if items else UNKNOWN
        return found.via(_bound(use, value, ", filled item by item"))
    found = placement_of(value, scope, depth + 1)
    return found.via(_bound(use, value))


def _bound(use: ast.Name, value: ast.expr, how: str = "") -> Callable[[], str]:
    """The step of `explain`'s chain from `use` to the `value` bound to it, worded only where it is shown."""
    return lambda: f"line {value.lineno}: `{use.id} = {short(value)}`{how}"


def _one_of_bindings(use: ast.Name, scope: PlacementScope, depth: int) -> Placement:
    """`if c: x = a` / `else: x = b` / use: where every binding that may reach the use agrees. Each such
    choice costs `_CHOICE_DEPTH` steps, which bounds the alternatives followed to a few levels of them."""
    values = scope.names.reaching_values(use)
    if not values or len(values) > _MAX_CHOICES:
        return UNKNOWN
    return agree_all(
        placement_of(value, scope, depth + _CHOICE_DEPTH).via(_bound(use, value))
        for value in values
    )


def _arithmetic(
    operands: Tuple[ast.expr, ...], scope: PlacementScope, depth: int, broadcasting: bool = True
) -> Placement:
    """`a + 1`, `a * b`, `a > b`: where the tensor operands agree, numbers aside. With some operands unknown:
    - a device operand puts the result on the device: an unknown operand is a number, a 0-dim tensor or a
      device tensor (any other host tensor raises);
    - for a `broadcasting` operation (operators, `tensor_ops.BROADCASTING`), a host operand with a dimension
      (`tensor_dims`) keeps it on the host: a device operand would raise;
    - a host operand that may have none gives unknown (a 0-dim host tensor mixes with a device tensor)."""
    tensors = [o for o in operands if not _is_number(o)]
    found = [placement_of(o, scope, depth + 1) for o in tensors]
    known = [p for p in found if p.place is not Place.UNKNOWN]
    if known and len(known) < len(found):
        if all(p.place is Place.DEVICE for p in known):
            return known[0]
        on_host = broadcasting and all(p.place.on_host for p in known)
        if on_host and any(p.place.on_host and has_dims(o, scope.names) for o, p in zip(tensors, found)):
            return agree_all(known).unpinned()
    return agree_all(found).unpinned()


def _is_number(expr: ast.expr) -> bool:
    if isinstance(expr, ast.UnaryOp):
        expr = expr.operand
    return isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)


def _call(call: ast.Call, scope: PlacementScope, depth: int) -> Placement:
    looked_up = attribute_looked_up(call)
    if looked_up is not None:
        return placement_of(looked_up, scope, depth + 1)
    qualified = scope.names.qualify(call.func)
    if qualified is not None:
        return _torch_call(call, qualified, scope, depth)
    if last_name(call.func) in _HELPERS:
        return _placed_by_device(call, scope, depth) or UNKNOWN
    if isinstance(call.func, ast.Attribute):
        found = _method(call, call.func.attr, scope, depth)
        if found is not None:
            return found
    return scope.returned(call, depth + 1)


def _torch_call(call: ast.Call, qualified: str, scope: PlacementScope, depth: int) -> Placement:
    if qualified == "torch.from_numpy":
        return _built(call, Place.PAGEABLE, "is built on the host by `torch.from_numpy(...)`")
    if qualified in FACTORIES:
        return _factory(call, qualified, scope, depth)
    if qualified in _LIKE:
        first = next(iter(positional_args(call)), None)
        return _placed_by_device(call, scope, depth) or (
            placement_of(first, scope, depth + 1).unpinned() if first is not None else UNKNOWN
        )
    if qualified in _ELEMENTWISE:
        operands = (*positional_args(call), *(k.value for k in call.keywords if k.arg in _OPERAND_KEYWORDS))
        return _arithmetic(tuple(operands), scope, depth, qualified in _BROADCASTING) if operands else UNKNOWN
    if qualified in _MESHES:  # `torch.meshgrid(a, b)`: a tuple of tensors, each where `a` and `b` are
        return _joined(ast.Tuple(elts=positional_args(call), ctx=ast.Load()), scope, depth).unpinned()
    if qualified in _FOLLOW_INPUT:
        first = next(iter(positional_args(call)), None) or keyword_value(call, "input")
        return placement_of(first, scope, depth + 1).unpinned() if first is not None else UNKNOWN
    if qualified in _JOINS:
        out = keyword_value(call, "out")
        if out is not None:  # written into `out`, wherever that lives
            return placement_of(out, scope, depth + 1)
        first = next(iter(positional_args(call)), None) or keyword_value(call, "tensors")
        return _joined(first, scope, depth).unpinned() if first is not None else UNKNOWN
    return UNKNOWN


def _joined(tensors: ast.expr, scope: PlacementScope, depth: int) -> Placement:
    """Where `torch.cat(tensors)` (or `stack`) builds its result. PyTorch joins only tensors of one device and
    raises otherwise, so each tensor whose placement is known tells where all of them are: those must agree, and
    the unknown ones are where they are."""
    found = list(_joined_items(tensors, scope, depth))
    known = [p for p in found if p.place is not Place.UNKNOWN]
    if not known:
        waiting = {p.pending for p in found if p.pending is not None}
        if len(waiting) == 1:  # another file knows where the items are: ask it, and join again under its answer
            return next(p for p in found if p.pending is not None)
        return CYCLE if CYCLE in found else UNKNOWN
    return agree_all(known)


def _joined_items(tensors: ast.expr, scope: PlacementScope, depth: int) -> Iterator[Placement]:
    """The placement of each tensor a join reads, where `tensors` is written out (`[a, b]`, `parts + [tail]`,
    `[*parts, tail]`, or a local bound to one); else the placement of `tensors` as a whole."""
    if isinstance(tensors, (ast.List, ast.Tuple)):
        for item in tensors.elts:
            if isinstance(item, ast.Starred):
                yield from _joined_items(item.value, scope, depth + 1)
            else:
                yield placement_of(item, scope, depth + 1)
    elif _is_list_sum(tensors):
        yield from _joined_items(tensors.left, scope, depth + 1)  # type: ignore[attr-defined]
        yield from _joined_items(tensors.right, scope, depth + 1)  # type: ignore[attr-defined]
    elif _picks_per_item(tensors):  # `[a if c else b for ...]`: a list that holds both kinds, joined together
        for branch in (tensors.elt.body, tensors.elt.orelse):  # type: ignore[attr-defined]
            each = ast.ListComp(elt=branch, generators=tensors.generators)  # type: ignore[attr-defined]
            yield placement_of(ast.copy_location(each, tensors), scope, depth + 1)
    elif isinstance(tensors, ast.Name) and depth < _MAX_DEPTH:
        yield from (p.via(f"line {tensors.lineno}: `{tensors.id}`") for p in _named_items(tensors, scope, depth))
    else:
        yield placement_of(tensors, scope, depth + 1)


def _named_items(name: ast.Name, scope: PlacementScope, depth: int) -> Iterator[Placement]:
    value = scope.names.value_at(name)
    written_out = isinstance(value, (ast.List, ast.Tuple)) and bool(value.elts)
    if written_out or (value is not None and (_is_list_sum(value) or _picks_per_item(value))):
        yield from _joined_items(value, scope, depth + 1)  # `parts = [head, *rest]`: read together
    else:
        yield placement_of(name, scope, depth + 1)  # `rows = []` filled by `.append`: every item agrees, or unknown


def _picks_per_item(expr: ast.expr) -> bool:
    """`[a if c else b for x in xs]`: a comprehension whose items are one of two tensors, each chosen per item."""
    return isinstance(expr, (ast.ListComp, ast.GeneratorExp)) and isinstance(expr.elt, ast.IfExp)


def _is_list_sum(expr: ast.expr) -> bool:
    """`parts + [tail]`: lists added up, at least one written out (two tensors added are a tensor)."""
    return isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add) and any(
        isinstance(side, (ast.List, ast.Tuple, ast.ListComp)) or _is_list_sum(side) for side in (expr.left, expr.right)
    )


def _factory(call: ast.Call, qualified: str, scope: PlacementScope, depth: int) -> Placement:
    if is_empty_factory(call, qualified):
        return EMPTY  # `torch.zeros(0)`, `torch.tensor([])`: nothing is ever copied, wherever it lives
    placed = _placed_by_device(call, scope, depth)
    if placed is not None:
        return placed
    if has_star_args(call):
        return UNKNOWN  # `**kwargs` may carry a device
    if qualified in _DATA:
        data = next(iter(positional_args(call)), None) or keyword_value(call, "data")
        # Only a tensor as a whole gives its device: the elements of a list are read as numbers (`.item()`).
        tensor_data = data is not None and not isinstance(data, (ast.List, ast.Tuple, ast.ListComp))
        if tensor_data and placement_of(data, scope, depth + 1).place is Place.DEVICE:  # type: ignore[arg-type]
            return Placement(Place.DEVICE, f"is built from a device tensor by `{qualified}(...)` at line {call.lineno}")
    where = scope.device_context(call)
    if where is not None:
        return Placement(Place.DEVICE, f"is built on the device {where}")
    if is_pinned(call):
        return _built(call, Place.PINNED, f"is built in pinned memory by `{qualified}(..., pin_memory=True)`")
    return _built(call, Place.PAGEABLE, f"is built on the host by `{qualified}(...)`")


def _placed_by_device(call: ast.Call, scope: PlacementScope, depth: int) -> Optional[Placement]:
    """The placement a `device=` argument gives, or None without one."""
    device = keyword_value(call, "device")
    if device is None:
        return None
    pinned = Place.PINNED if is_pinned(call) else Place.PAGEABLE
    if is_host_device(device, scope.names):
        return _built(call, pinned, "is built on the host (`device=` names the CPU)")
    if _may_be_host(device, scope):
        return EITHER  # `device = "cpu"`, set to an accelerator only in some branch
    of = tensor_device(device, scope.names.value_at)
    if of is not None:  # `device=ids.device`, or `dev = ids.device` then `device=dev`: where `ids` is
        beside = placement_of(of.value, scope, depth + 1)
        if beside is EITHER:  # `ids` is built on a device that may be the CPU: so is this
            return EITHER
        if beside.place is not Place.UNKNOWN:
            where = f"is built where `{short(of.value)}` is (`device={short(device)}`) at line {call.lineno}"
            place = Place.DEVICE if beside.place is Place.DEVICE else pinned
            return Placement(place, where, chain=(f"`{short(of.value)}` {beside.evidence}", *beside.chain))
    return _built(call, Place.DEVICE, f"is built on the device (`device={short(device)}`)")


def _may_be_host(device: ast.expr, scope: PlacementScope) -> bool:
    """Whether a device may be the CPU: as written here, or as a function of this module returns it."""
    return may_be_host_device(device, scope.names) or scope.returned_host_device(device)


def _built(call: ast.Call, place: Place, what: str) -> Placement:
    return Placement(place, f"{what} at line {call.lineno}")


def _method(call: ast.Call, method: str, scope: PlacementScope, depth: int) -> Optional[Placement]:
    """The placement a tensor method gives, or None when `method` is not one this knows."""
    receiver = call.func.value  # type: ignore[attr-defined]
    line = call.lineno
    if method == "cpu":  # a no-op on the host: a pinned tensor stays pinned
        found = placement_of(receiver, scope, depth + 1)
        if found.place.on_host:
            return found
        place = Place.PAGEABLE if found.place is Place.DEVICE else Place.HOST
        return Placement(place, f"is copied to the host by `.cpu()` at line {line}")
    if method == "pin_memory":
        return Placement(Place.PINNED, f"is pinned by `.pin_memory()` at line {line}")
    if method == "numpy":
        return Placement(Place.PAGEABLE, f"is a NumPy array (`.numpy()` at line {line})")
    if method in ("cuda", "to"):
        return _move(call, method, receiver, scope, depth)
    if method in _NEW_METHODS:
        placed = _placed_by_device(call, scope, depth) or placement_of(receiver, scope, depth + 1).unpinned()
        if placed.place.on_host and is_pinned(call):
            return _built(call, Place.PINNED, f"is built in pinned memory by `.{method}(..., pin_memory=True)`")
        return placed
    if method in VIEW_METHODS:
        return placement_of(receiver, scope, depth + 1)
    if method in SAME_PLACE_METHODS:
        found = placement_of(receiver, scope, depth + 1)
        return replace(found, place=Place.HOST) if found.place is Place.PINNED else found
    return None


def _move(call: ast.Call, method: str, receiver: ast.expr, scope: PlacementScope, depth: int) -> Placement:
    device = moved_to(call)
    if device_copy(call, scope.names) is not None:
        if method == "to" and device is not None and _may_be_host(device, scope):
            return EITHER  # `device = "cpu"`, set to an accelerator only in some branch
        return Placement(Place.DEVICE, f"is moved to the device by `.{method}(...)` at line {call.lineno}")
    found = placement_of(receiver, scope, depth + 1)
    if device is not None and not looks_like_dtype(device, scope.names):  # `.to("cpu")`: a no-op on the host
        if found.place.on_host:
            return found
        if found.place is Place.DEVICE and _copies_without_blocking(call):
            # PyTorch pins the output of a non-blocking copy from an accelerator to the CPU (`_to_copy`).
            return Placement(Place.PINNED, f"is copied to pinned host memory by `.to(..., non_blocking=True)` at"
                             f" line {call.lineno}")
        place = Place.PAGEABLE if found.place is Place.DEVICE else Place.HOST
        return Placement(place, f"is copied to the host by `.to(...)` at line {call.lineno}")
    return replace(found, place=Place.HOST) if found.place is Place.PINNED else found  # `.to(dtype)`


def _copies_without_blocking(call: ast.Call) -> bool:
    flag = keyword_value(call, "non_blocking")
    return flag is not None and not is_false_literal(flag)

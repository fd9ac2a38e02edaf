"""Where a call's result lives, for `placement.placement_of`: constructors and factories (`torch.zeros(...,
device=...)`, `pin_memory=True`, a device context around them), `torch.from_numpy`, `*_like` factories,
elementwise torch functions, `torch.meshgrid`, `torch.cat`/`stack` from whichever joined tensors are known,
functions that follow their input, and tensor methods: moves (`.cpu()`, `.cuda()`, `.to(...)`,
`.pin_memory()`), `new_*` factories, views and placement-preserving methods; `getattr(obj, "name")` as
`obj.name`. Any other call (a function or method of the project) is left to `PlacementScope.returned`."""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Iterator, Optional

from h2dlint.facts.arguments import (
    has_star_args, is_empty_factory, is_false_literal, keyword_value, moved_to, positional_args, tensor_device,
)
from h2dlint.facts.constructs import device_copy, is_host_device, is_pinned, looks_like_dtype, may_be_host_device
from h2dlint.facts.placement import MAX_DEPTH, PlacementScope, arithmetic, binding_choices, placement_of
from h2dlint.facts.placement_exports import is_unfilled_list
from h2dlint.facts.placement_values import (
    CYCLE, DISPUTED, EITHER, EMPTY, NUMPY, UNKNOWN, Place, Placement, agree_all, short,
)
from h2dlint.facts.syntax import attribute_looked_up, last_name, type_cast
from h2dlint.facts.tensor_ops import BROADCASTING as _BROADCASTING
from h2dlint.facts.tensor_ops import DATA_BUILDERS as _DATA
from h2dlint.facts.tensor_ops import ELEMENTWISE as _ELEMENTWISE
from h2dlint.facts.tensor_ops import FACTORIES, MAY_RETURN_RECEIVER, SAME_PLACE_METHODS, VIEW_METHODS
from h2dlint.facts.tensor_ops import FOLLOW_INPUT as _FOLLOW_INPUT
from h2dlint.facts.tensor_ops import HELPERS as _HELPERS
from h2dlint.facts.tensor_ops import JOINS as _JOINS
from h2dlint.facts.tensor_ops import LIKE_FACTORIES as _LIKE
from h2dlint.facts.tensor_ops import MESHES as _MESHES
from h2dlint.facts.tensor_ops import NEW_METHODS as _NEW_METHODS

# The tensor operands of an elementwise torch function given by keyword (`torch.where(c, input=a, other=b)`).
_OPERAND_KEYWORDS = frozenset({"input", "other", "condition", "elements", "test_elements", "boundaries", "self"})


def placement_of_call(call: ast.Call, scope: PlacementScope, depth: int) -> Placement:
    """Where what `call` returns lives (see the module docstring)."""
    looked_up = attribute_looked_up(call)
    if looked_up is not None:
        return placement_of(looked_up, scope, depth + 1)
    cast = type_cast(call)
    if cast is not None:  # `cast(T, x)` is `x`
        return placement_of(cast[1], scope, depth + 1)
    qualified = scope.names.qualify(call.func)
    if qualified is not None:
        return _torch_call(call, qualified, scope, depth)
    if scope.names.is_numpy(call.func):  # `np.concatenate(...)`: NumPy computes on the host only
        return NUMPY
    if last_name(call.func) in _HELPERS:
        return _placed_by_device(call, scope, depth) or UNKNOWN
    if isinstance(call.func, ast.Attribute):
        found = _method(call, call.func.attr, scope, depth)
        if found is not None:
            return found
    found = scope.returned(call, depth + 1)
    if found != UNKNOWN and found is not DISPUTED:  # known, unknowable (`EITHER`), or asked of another file
        return found
    argument = scope.passed_through(call, depth + 1)
    if argument is None:
        return found
    through = placement_of(argument, scope, depth + 1)
    if through.place is Place.UNKNOWN:
        return through
    computed = f"is computed by `{short(call.func, 32)}(...)` at line {call.lineno} from `{short(argument, 32)}`, which"
    return replace(through, evidence=f"{computed} {through.evidence}" if through.evidence else through.evidence)


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
        return arithmetic(tuple(operands), scope, depth, qualified in _BROADCASTING) if operands else UNKNOWN
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
    elif isinstance(tensors, ast.Name) and depth < MAX_DEPTH:
        yield from (p.via(f"line {tensors.lineno}: `{tensors.id}`") for p in _named_items(tensors, scope, depth))
    elif _lists_rows(tensors):  # `list(x)`: the rows of tensor `x` (or the items of list `x`), where `x` is
        yield from _joined_items(tensors.args[0], scope, depth + 1)  # type: ignore[attr-defined]
    else:
        yield placement_of(tensors, scope, depth + 1)


def _lists_rows(tensors: ast.expr) -> bool:
    """`list(x)` or `tuple(x)` of one argument."""
    return (
        isinstance(tensors, ast.Call) and isinstance(tensors.func, ast.Name) and tensors.func.id in ("list", "tuple")
        and len(tensors.args) == 1 and not tensors.keywords and not isinstance(tensors.args[0], ast.Starred)
    )


def _named_items(name: ast.Name, scope: PlacementScope, depth: int) -> Iterator[Placement]:
    value = scope.names.value_at(name)
    written_out = isinstance(value, (ast.List, ast.Tuple)) and bool(value.elts)
    if written_out or (value is not None and (_is_list_sum(value) or _picks_per_item(value))):
        yield from _joined_items(value, scope, depth + 1)  # `parts = [head, *rest]`: read together
    elif value is not None and is_unfilled_list(value):  # `rows = []` filled by `.append`, or `[None] * n`
        for item in scope.appended(name.id):
            yield from _item_choices(item, scope, depth + 1)
    else:
        yield placement_of(name, scope, depth + 1)


def _item_choices(item: ast.expr, scope: PlacementScope, depth: int) -> Iterator[Placement]:
    """Where an item put in a list to be joined may live: each value that may reach it, where it is a name bound
    in branches (`if text_only: pos = torch.arange(n)` / `else: pos = mm.positions`). A list filled item by item
    takes one branch for one item and another for the next, and a join rejects a mix: a known branch tells."""
    choices = binding_choices(item, scope, depth) if isinstance(item, ast.Name) else None
    yield from choices if choices is not None else (placement_of(item, scope, depth),)


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
        return NUMPY
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
        if method not in MAY_RETURN_RECEIVER:  # a new tensor
            return found.unpinned()
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

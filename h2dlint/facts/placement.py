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
  the tensor fields of an operation's result (`x.max(-1).indices`, or `top.indices` after `top = x.topk(k)`),
  where the result is;
- `self.x`, through what every method of the class assigns to it, and calls of the module's functions and
  the class's methods, through what they return (`placement_summary`); a parameter of a private function,
  through what every call of it in the module passes (`placement_callers`);
- naming conventions (`placement_conventions`): `*_cpu`, `*_gpu`, `logits`, a tensor with a `<name>_cpu` sibling.

Evidence that conflicts (a name that says host for a tensor moved to the device, or tested to be on it by
`if x_cpu.is_cuda:`), and alternatives that disagree, give `DISPUTED`: unknown, and so is what is computed from
it, which no name then overrules. Anything not followed gives UNKNOWN. `None`, as one alternative of several
(`t.cpu() if c else None`), is no tensor: the others decide. Rules report only known placements. The values
and their wording are in `placement_values`; the cases of calls (constructors, factories, moves, methods, torch
functions, joins) in `placement_calls`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from h2dlint.facts.placement_conventions import ACTIVATIONS, MODEL_INPUTS, MODEL_MASKS, SIBLING, SUBMODULE
from h2dlint.facts.placement_exports import is_unfilled_list
from h2dlint.facts.placement_values import (
    DISPUTED, EITHER, NO_TENSOR, NUMPY, UNKNOWN, Place, Placement, agree, agree_all, short,
)
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.syntax import index_parts
from h2dlint.facts.tensor_dims import has_dims

# Fields of what a tensor operation returns that are tensors where it is: `x.max(-1).values`, `x.sort().indices`,
# `x.float().T`, `x.detach().data`.
_RESULT_FIELDS = frozenset({"values", "indices", "T", "mT", "data"})
_GUESSES = frozenset({SIBLING, ACTIVATIONS, MODEL_INPUTS, MODEL_MASKS})  # conventions a plain provenance overrules
_RETURN_QUESTIONS = frozenset({"call", "method", "typed-method"})  # what a function of another file returns
MAX_DEPTH = 32  # steps followed back from the use (names, methods, attributes, returns): a bound on cost
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
    # The argument of a call that what it returns follows (`facts.placement_through`), or None.
    passed_through: Callable[[ast.Call, int], Optional[ast.expr]] = lambda call, depth: None
    # Whether a device is, or is unpacked from, what a function of this module returns that may be the CPU.
    returned_host_device: Callable[[ast.expr], bool] = lambda expr: False
    # `kwargs["name"]` of this function's `**kwargs`, where a multimodal model reads its input
    # (`facts.multimodal_inputs`); None where it is no such read.
    keyword_read: Callable[[ast.Subscript], Optional[Placement]] = lambda expr: None

_BINARY_OPERATORS = (
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.BitAnd, ast.BitOr, ast.BitXor, ast.MatMult
)
# Comparisons that compute a tensor of the operands' placement (`is`, `in` give a Python bool).
_TENSOR_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def placement_of(expr: ast.expr, scope: PlacementScope, depth: int = 0) -> Placement:
    """Where the tensor `expr` evaluates to lives, with its evidence (see the module docstring)."""
    if depth > MAX_DEPTH:
        return UNKNOWN
    if isinstance(expr, (ast.Name, ast.Attribute)):
        tested = scope.tested(expr)
        if tested is not None:  # `if seq_lens_cpu.is_cuda:` guards against a misuse the name rules out: unknown
            return agree(tested, scope.convention(expr))
    found = _provenance(expr, scope, depth)
    if not isinstance(expr, (ast.Name, ast.Attribute)) or found is EITHER or found is DISPUTED or found is NUMPY:
        return found  # `x[i]`: `x`'s name was weighed already, against its own provenance; none names the others
    named = scope.convention(expr)
    if named.place is Place.UNKNOWN or _shown_otherwise(found, named):
        return found
    return agree(found, named)


def _shown_otherwise(found: Placement, named: Placement) -> bool:
    """The sibling convention (`lens` beside `lens_cpu` is the device copy) and a model's names for its
    activations and inputs (`hidden_states`, `positions`) guess where a tensor of unknown provenance lives; a
    provenance that no convention decided (`lens = torch.full(...)`) shows where it is, and so does what a
    function of another file returns (`lens = helper(grid)`), which the project is asked first: the guess
    stands only where it answers nothing. What the callers pass for a parameter is no such provenance: it is
    what the guess stands in for."""
    if named.heuristic not in _GUESSES:
        return False
    if found.pending is not None:
        return found.pending.kind in _RETURN_QUESTIONS
    return found.place is not Place.UNKNOWN and found.heuristic is None


def _provenance(expr: ast.expr, scope: PlacementScope, depth: int) -> Placement:
    if isinstance(expr, ast.Name):
        return _name(expr, scope, depth)
    if isinstance(expr, ast.Attribute):
        if expr.attr in _RESULT_FIELDS and isinstance(expr.value, ast.Call):  # `x.topk(k).indices`
            return placement_of(expr.value, scope, depth + 1)
        assigned = scope.names.attribute_value_at(expr) if isinstance(expr.value, ast.Name) else None
        stored = placement_of(assigned, scope, depth + 1) if assigned is not None else UNKNOWN
        if assigned is not None and _decides(stored):  # `meta.lens = x` earlier in this function
            return stored.via(_stored(expr, assigned))
        if isinstance(expr.value, ast.Name) and expr.value.id == "self":
            return scope.attribute(expr.attr, depth + 1).via(f"line {expr.lineno}: `self.{expr.attr}`")
        found = scope.typed_attribute(expr, depth + 1)
        if found.place is Place.UNKNOWN and _names_a_result(expr, scope.names):  # `top = x.topk(k)`, `top.indices`
            found = placement_of(expr.value, scope, depth + 1)
        return found.via(f"line {expr.lineno}: `{short(expr)}`") if found.place is not Place.UNKNOWN else found
    if isinstance(expr, ast.Subscript):  # a view of a tensor, or an item of a container of them
        keyed = _record_key(expr, scope, depth) or scope.keyword_read(expr)
        if keyed is not None:
            return keyed
        found = placement_of(expr.value, scope, depth + 1)
        indexed = _indexed_on_the_device(expr, scope, depth) if found.place is Place.UNKNOWN else UNKNOWN
        return indexed if indexed.place is Place.DEVICE else found
    if isinstance(expr, ast.Call):
        from h2dlint.facts.placement_calls import placement_of_call  # late: placement_calls imports this module

        return placement_of_call(expr, scope, depth)
    if isinstance(expr, ast.IfExp):
        return agree_all(placement_of(branch, scope, depth + 1) for branch in (expr.body, expr.orelse))
    if isinstance(expr, (ast.List, ast.Tuple)):  # a container, as `torch.cat` or a subscript reads it
        return agree_all(placement_of(item, scope, depth + 1) for item in expr.elts) if expr.elts else UNKNOWN
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp)):
        scope.names.note_comprehension(expr)  # its variables are its own, whether or not the walk got there
        return placement_of(expr.elt, scope, depth + 1)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, _BINARY_OPERATORS):
        return arithmetic((expr.left, expr.right), scope, depth)
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], _TENSOR_COMPARISONS):
        return arithmetic((expr.left, expr.comparators[0]), scope, depth)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.Invert)):
        return placement_of(expr.operand, scope, depth + 1).unpinned()
    if isinstance(expr, ast.Constant) and expr.value is None:
        return NO_TENSOR
    return UNKNOWN


def _record_key(expr: ast.Subscript, scope: PlacementScope, depth: int) -> Optional[Placement]:
    """`inputs["image_grid_thw"]` of an object of known record class (a `TypedDict`): its field, as
    `inputs.image_grid_thw` reads it; None when the key is no string or the field's placement is not known."""
    key = expr.slice
    if not isinstance(key, ast.Constant) or not isinstance(key.value, str) or not key.value.isidentifier():
        return None
    if not isinstance(expr.value, (ast.Name, ast.Attribute)):
        return None
    field = ast.copy_location(ast.Attribute(value=expr.value, attr=key.value, ctx=ast.Load()), expr)
    found = scope.typed_attribute(field, depth + 1)
    if found.place is Place.UNKNOWN and found.pending is None:
        return None
    return found.via(f"line {expr.lineno}: `{short(expr)}`") if found.place is not Place.UNKNOWN else found


def _indexed_on_the_device(expr: ast.Subscript, scope: PlacementScope, depth: int) -> Placement:
    """`x[mask]`, `x[idx]` with an index tensor shown to be on the device: PyTorch indexes a tensor only with
    indices on its own device (or on the CPU), so `x`, and what the subscript gives, are there too. The index's
    own name is no evidence here: `buffers[device_id]` may index a list with a number."""
    for part in index_parts(expr.slice):
        found = _provenance(part, scope, depth + 1)
        if found.place is Place.DEVICE:
            return found.via(f"line {expr.lineno}: `{short(expr)}`, indexed by `{short(part)}` on the device")
    return UNKNOWN


def _names_a_result(expr: ast.Attribute, names: NameResolver) -> bool:
    """`first.values` with `first = m.max(dim=-1)`: a tensor field of a local name bound to a call's result,
    which lives where the result does (a call that returns no tensor has no placement to follow)."""
    if expr.attr not in _RESULT_FIELDS or not isinstance(expr.value, ast.Name):
        return False
    return isinstance(names.value_at(expr.value), ast.Call)


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
            found = placement_of(unpacked, scope, depth + 1)
            if found.heuristic == SUBMODULE:
                return UNKNOWN  # a module may return host sizes beside its activations
            return found.via(f"line {unpacked.lineno}: `{use.id}`, unpacked")
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


def _decides(found: Placement) -> bool:
    """Whether `found` says where a value lives, or that it cannot be known (`EITHER`, `DISPUTED`), or asks
    another file: not a plain unknown, after which other evidence may still decide."""
    return found.place is not Place.UNKNOWN or found.pending is not None or found is EITHER or found is DISPUTED


def _stored(read: ast.Attribute, value: ast.expr) -> Callable[[], str]:
    """The step of `explain`'s chain from the attribute `read` to the `value` stored in it."""
    return lambda: f"line {value.lineno}: `{short(read)} = {short(value)}`"


def _one_of_bindings(use: ast.Name, scope: PlacementScope, depth: int) -> Placement:
    """`if c: x = a` / `else: x = b` / use: where every binding that may reach the use agrees."""
    choices = binding_choices(use, scope, depth)
    return agree_all(choices) if choices is not None else UNKNOWN


def binding_choices(use: ast.Name, scope: PlacementScope, depth: int) -> Optional[List[Placement]]:
    """Where each binding of `use` that may reach it puts it (`if c: x = a` / `else: x = b`); None where no
    such choice is known, or there are more than `_MAX_CHOICES`. Each choice costs `_CHOICE_DEPTH` steps,
    which bounds the alternatives followed to a few levels of them."""
    values = scope.names.reaching_values(use)
    if not values or len(values) > _MAX_CHOICES:
        return None
    return [placement_of(value, scope, depth + _CHOICE_DEPTH).via(_bound(use, value)) for value in values]


def arithmetic(
    operands: Tuple[ast.expr, ...], scope: PlacementScope, depth: int, broadcasting: bool = True
) -> Placement:
    """`a + 1`, `a * b`, `a > b`: where the tensor operands agree, numbers aside. With some operands unknown:
    - a device operand puts the result on the device: an unknown operand is a number, a 0-dim tensor or a
      device tensor (any other host tensor raises);
    - for a `broadcasting` operation (operators, `tensor_ops.BROADCASTING`), a host operand with a dimension
      (`tensor_dims`) keeps it on the host: a device operand would raise;
    - a host operand that may have none gives unknown (a 0-dim host tensor mixes with a device tensor).
    With none known and a NumPy array among them, NumPy computes the result: a NumPy array.
    With none known, the result waits on the first operand that waits on another file (`pending`): where that
    answer is the device, so is the result, whatever the others' questions would answer
    (`tokens == placeholder_id`, both parameters that the project places)."""
    tensors = [o for o in operands if not _is_number(o)]
    found = [placement_of(o, scope, depth + 1) for o in tensors]
    known = [p for p in found if p.place is not Place.UNKNOWN]
    if not known and any(p is NUMPY for p in found):
        return NUMPY  # `ids_np != pad`, `(a_np > 0) & mask_np`: NumPy computes it, on the host
    waiting = [p for p in found if p.pending is not None]
    if not known and waiting and not any(p is DISPUTED for p in found):
        return waiting[0]
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

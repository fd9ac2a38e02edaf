"""Attributes of objects whose class is known: `meta.seq_lens` with `meta: CommonAttentionMetadata`.

An object's class is known from a parameter's annotation, a local bound once to `Cls(...)`
(`facts.receivers.local_types`) or, for `self.batch.seq_lens`, from what its own class gives `self.batch`
(`ModuleSummary.attribute_types`). Its attribute then lives where that class puts it: what the class's methods
assign (`placement_summary`), or, when the class also declares a `<name>_cpu` (or `_host`) attribute and
`placement-sibling-host-mirror` is on, on the device, as the copy that mirror shadows. A class of this file
answers here; one of another file is asked of the project index (`PlacementQuery` "typed",
`project.placement_links`).
"""

from __future__ import annotations

import ast
from typing import Dict, Iterable, Optional, Tuple

from h2dlint.facts.placement import Place, Placement
from h2dlint.facts.placement_conventions import SIBLING, mirror_of
from h2dlint.facts.receivers import receiver


def class_fields(cls: ast.ClassDef) -> Tuple[str, ...]:
    """The names the class body itself declares or assigns: dataclass fields (`seq_lens: torch.Tensor`),
    class attributes."""
    names = []
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif isinstance(node, ast.Assign):
            names.extend(target.id for target in node.targets if isinstance(target, ast.Name))
    return tuple(names)


def typed_receiver(expr: ast.Attribute, types: Dict[str, str]) -> Optional[Tuple[str, ...]]:
    """What is known of the object whose attribute `expr` reads, as `CallRef.receiver` writes it; None for
    `self.x` (the class's own attribute) and for objects of unknown class."""
    return receiver(expr, types)


NAMED_LIKE = "~"  # leads a receiver's root that names a parameter spelt like a class: `~forward_batch`


def named_like_classes(function: ast.FunctionDef | ast.AsyncFunctionDef, stable: Iterable[str]) -> Dict[str, str]:
    """Parameter -> `~parameter` for each parameter of `function` without an annotation, bound nowhere else
    (`stable`), whose name has two or more words (`forward_batch`): the project resolves `~forward_batch` to
    the one class spelt so, `ForwardBatch` (`placement-parameter-named-like-class`)."""
    args = function.args
    stable = frozenset(stable)
    return {
        arg.arg: NAMED_LIKE + arg.arg
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs)
        if arg.annotation is None and arg.arg in stable and "_" in arg.arg.strip("_")
    }


def local_class(known: Tuple[str, ...], classes: Iterable[str]) -> Optional[str]:
    """The top-level class of this file that an object described by `known` is an instance of, if it is one:
    `("Meta",)` or `("Meta()",)` with `class Meta` here, `("~forward_batch",)` with `class ForwardBatch`."""
    if len(known) != 1:
        return None
    if known[0].startswith(NAMED_LIKE):  # `~forward_batch`: a class of this file spelt `ForwardBatch`
        spelt = known[0][len(NAMED_LIKE):].replace("_", "").lower()
        return next((c for c in classes if c.lower() == spelt), None)
    name = known[0][:-2] if known[0].endswith("()") else known[0]
    return name if name in classes else None


def mirrored(owner: str, name: str, attributes: Iterable[str]) -> Optional[Placement]:
    """The device placement of attribute `name` of class `owner` whose `attributes` hold its host mirror."""
    mirror = mirror_of(name, frozenset(attributes))
    if mirror is None:
        return None
    return Placement(Place.DEVICE, mirror_evidence(owner, mirror), heuristic=SIBLING)


def mirror_evidence(owner: str, mirror: str) -> str:
    return f"has a host mirror `{owner}.{mirror}`, so it is the device copy"

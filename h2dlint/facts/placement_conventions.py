"""What a tensor's name says of where it lives: the `placement-*` conventions of `facts.heuristics`, and the
project's own globs (`host-tensors`, `accelerator-tensors`). A model's outputs (`logits`, `*_logits`) are on
the device unless a host name says otherwise (`cpu_logits`).

A glob matches the expression as written (`self.seq_lens`, for the project's globs) or its last name
(`seq_lens_cpu` in `batch.seq_lens_cpu[:n]`). A name says the host without saying which memory: a host
mirror may be pinned. A tensor whose `<name>_cpu` or `<name>_host` sibling is in sight (a name or attribute of
the same function, or an attribute of the class) is the device copy that the mirror shadows, except in a
function that makes the mirror of that very tensor (`self.lens_cpu = lens`): there it is the host data.
"""

from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass
from typing import Callable, FrozenSet, Iterable, Optional, Tuple, Union

from h2dlint.facts.heuristics import BY_ID
from h2dlint.facts.placement_values import UNKNOWN, Place, Placement
from h2dlint.facts.settings import Settings
from h2dlint.facts.syntax import glob_matcher, last_name
from h2dlint.facts.tensor_ops import SAME_PLACE_METHODS, VIEW_METHODS

HOST_NAMES = "placement-name-host"
DEVICE_NAMES = "placement-name-device"
MODEL_OUTPUTS = "placement-name-model-output"
ACTIVATIONS = "placement-name-activation"
MODEL_INPUTS = "placement-name-model-input"
MODEL_MASKS = "placement-name-model-mask"
ROUTING = "placement-name-routing"
TRAINING_SCALARS = "placement-name-training-scalar"
TRAINING_FORWARD = "placement-parameter-training-forward"
SIBLING = "placement-sibling-host-mirror"
NAMED_LIKE_CLASS = "placement-parameter-named-like-class"
FROM_CALLERS = "placement-parameter-from-callers"
FROM_MODULE_CALLERS = "placement-parameter-from-module-callers"
FROM_PROJECT_CALLERS = "placement-parameter-from-project-callers"
FROM_SUBMODULE_CALLS = "placement-parameter-from-submodule-calls"  # `facts.placement_submodule_calls`
MASK_NAMES = "placement-name-mask-index"
SUBMODULE = "placement-submodule-output"
MULTIMODAL_INPUT = "placement-multimodal-input"  # `facts.multimodal_inputs`
CONFIGURED_HOST = "`host-tensors`"
CONFIGURED_DEVICE = "`accelerator-tensors`"
MIRROR_SUFFIXES = ("_cpu", "_host")

KnownNames = Callable[[str], FrozenSet[str]]  # the names and attribute names in sight of a tensor named so, on first use


@dataclass(frozen=True)
class Conventions:
    host: Tuple[str, ...]
    device: Tuple[str, ...]
    configured_host: Tuple[str, ...]
    configured_device: Tuple[str, ...]
    sibling: bool
    model_outputs: Tuple[str, ...] = ()  # `placement-name-model-output`: weighed after the host names
    activations: Tuple[str, ...] = ()  # `placement-name-activation`: so are these, in a model's methods only
    model_inputs: Tuple[str, ...] = ()  # `placement-name-model-input`: and these
    model_masks: Tuple[str, ...] = ()  # `placement-name-model-mask`: and these
    routing: Tuple[str, ...] = ()  # `placement-name-routing`: so are these
    training_scalars: Tuple[str, ...] = ()  # `placement-name-training-scalar`: and these
    training_forward: bool = False  # `placement-parameter-training-forward` (`facts.placement_callers`)
    named_like_class: bool = False  # `placement-parameter-named-like-class` (`facts.placement_typed`)
    parameter_from_callers: bool = False  # `placement-parameter-from-callers` (`facts.placement_callers`)
    public_from_callers: bool = False  # `placement-parameter-from-module-callers`: public functions too
    project_callers: bool = False  # `placement-parameter-from-project-callers`: their calls in other files too
    submodule_callers: bool = False  # `placement-parameter-from-submodule-calls`: a module's `forward`, by its calls
    mask_names: Tuple[str, ...] = ()  # `placement-name-mask-index`: the kind of an index, for `rules.mask_indexing`
    # `placement-submodule-output` (`facts.placement_returns`): None when off, else the classes it leaves out
    submodule_exceptions: Optional[Tuple[str, ...]] = None
    multimodal_inputs: bool = False  # `placement-multimodal-input` (`facts.multimodal_inputs`)

    def names_a_mask(self, expr: ast.expr) -> bool:
        """Whether `expr` (`visual_token_mask`, `self.keep_mask`) is named as a boolean mask."""
        if not isinstance(expr, (ast.Name, ast.Attribute)):
            return False
        name = last_name(expr)
        return glob_matcher(self.mask_names)(name) is not None

    def placement(self, expr: ast.expr, known_names: KnownNames, in_model: bool = False) -> Placement:
        """What the name of `expr` (or of the tensor it slices) says; UNKNOWN when it says nothing. `in_model`:
        whether `expr` is read in a method of a model (a class that defines `forward`), where a local's name
        (`hidden_states`, `positions`) says more; an object's field (`batch.positions`) is its class's business."""
        while isinstance(expr, ast.Subscript):
            expr = expr.value
        if not isinstance(expr, (ast.Name, ast.Attribute)):
            return UNKNOWN
        in_model = in_model and isinstance(expr, ast.Name)
        name = last_name(expr)
        configured = self.configured_host or self.configured_device
        written = ast.unparse(expr) if configured else name  # only the project's globs see the whole expression
        # The project's globs first: they overrule the defaults; a host name (`cpu_logits`), a model output's.
        layers = (
            ((self.configured_host, CONFIGURED_HOST), (self.configured_device, CONFIGURED_DEVICE)),
            ((self.host, HOST_NAMES), (self.device, DEVICE_NAMES)),
            (((), HOST_NAMES), (self.model_outputs, MODEL_OUTPUTS)),
            (((), HOST_NAMES), (self.activations if in_model else (), ACTIVATIONS)),
            (((), HOST_NAMES), (self.model_inputs if in_model else (), MODEL_INPUTS)),
            (((), HOST_NAMES), (self.model_masks if in_model else (), MODEL_MASKS)),
            (((), HOST_NAMES), (self.routing, ROUTING)),
            (((), HOST_NAMES), (self.training_scalars, TRAINING_SCALARS)),
        )
        for layer, (host_table, device_table) in enumerate(layers):
            # The project's globs may name a tensor as written (`self.input_ids`); the defaults name its last
            # name only, so `device_mesh.mesh` is not named `device_*`, nor `cpu_group.ranks` `cpu_*`.
            seen = written if layer == 0 else name
            host, device = (_first(seen, name, table) for table in (host_table, device_table))
            if host and device:
                return UNKNOWN
            if host:
                return Placement(Place.HOST, f"is named like a host tensor ({host[1]})", heuristic=_id(host[0]))
            if device:
                return Placement(Place.DEVICE, f"is named like a device tensor ({device[1]})", heuristic=_id(device[0]))
        mirror = self._mirror(name, known_names) if self.sibling else None
        if mirror is not None:
            return Placement(Place.DEVICE, f"has a host mirror `{mirror}`, so it is the device copy", heuristic=SIBLING)
        return UNKNOWN

    @staticmethod
    def _mirror(name: str, known_names: KnownNames) -> Optional[str]:
        return mirror_of(name, known_names(name))


def mirror_names(text: str) -> FrozenSet[str]:
    """The identifiers of `text` that end in a mirror's suffix (`seq_lens_cpu`), found with `str.find` (a
    regular expression over every source costs a tenth of a cold run)."""
    found = set()
    for suffix in MIRROR_SUFFIXES:
        at = text.find(suffix)
        while at != -1:
            end = at + len(suffix)
            if end == len(text) or not _is_word(text[end]):
                start = at
                while start > 0 and _is_word(text[start - 1]):
                    start -= 1
                if start < at:
                    found.add(text[start:end])
            at = text.find(suffix, end)
    return frozenset(found)


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def mirror_of(name: str, known: FrozenSet[str]) -> Optional[str]:
    """`<name>_cpu` (or `_host`) when that name is in `known`: the host mirror of the tensor `name`."""
    return next((name + suffix for suffix in MIRROR_SUFFIXES if name + suffix in known), None)


def mirrors_of_their_own_tensor(assignments: Iterable[Union[ast.Assign, ast.AnnAssign]]) -> FrozenSet[str]:
    """The mirrors that `assignments` (a function's) bind to the data of the tensor they are named after
    (`self.lens_cpu = lens`, `lens_cpu = list(lens[:n])`): there `lens` is the host data the mirror keeps, not
    the device copy it shadows. A mirror made by a copy (`lens_cpu = lens.cpu()`, `.tolist()`) is not among them."""
    found = set()
    for node in assignments:
        source = _same_data(node.value) if node.value is not None else None
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets if source is not None else ():
            name = last_name(target) if isinstance(target, (ast.Name, ast.Attribute)) else None
            if name in {source + suffix for suffix in MIRROR_SUFFIXES}:  # type: ignore[operator]
                found.add(name)
    return frozenset(found)


def _same_data(value: ast.expr) -> Optional[str]:
    """The name of the tensor (or list) whose data `value` holds where it is: `lens`, `lens[:n]`, `list(lens)`,
    `lens.clone()`; None for anything else, a copy to another device included."""
    while True:
        if isinstance(value, ast.Subscript):
            value = value.value
        elif isinstance(value, ast.Call) and _keeps_data_in_place(value):
            func = value.func
            value = value.args[0] if isinstance(func, ast.Name) else func.value  # type: ignore[attr-defined]
        else:
            return last_name(value) if isinstance(value, (ast.Name, ast.Attribute)) else None


def _keeps_data_in_place(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in ("list", "tuple") and len(call.args) == 1 and not call.keywords
    return isinstance(func, ast.Attribute) and (func.attr in VIEW_METHODS or func.attr in SAME_PLACE_METHODS)


def _first(written: str, name: str, table: Tuple[Tuple[str, ...], str]) -> Optional[Tuple[str, str]]:
    """(heuristic, the glob as the message shows it) when a glob of `table` matches `written` or `name`."""
    patterns, heuristic = table
    matches = glob_matcher(patterns)
    if matches(name) is None and matches(written) is None:  # one expression for the common answer: no
        return None
    for pattern in patterns:
        if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(written, pattern):
            return heuristic, f"`{pattern}`" if heuristic.startswith("placement-") else f"{heuristic} `{pattern}`"
    return None


def _id(heuristic: str) -> Optional[str]:
    return heuristic if heuristic in BY_ID else None


def conventions_from(settings: Settings) -> Conventions:
    """The conventions `settings` switches on, with the project's globs."""

    def patterns(heuristic: str) -> Tuple[str, ...]:
        return BY_ID[heuristic].patterns if settings.enabled(heuristic) else ()

    return Conventions(
        host=patterns(HOST_NAMES),
        device=patterns(DEVICE_NAMES),
        configured_host=settings.host_tensors,
        configured_device=settings.accelerator_tensors,
        sibling=settings.enabled(SIBLING),
        model_outputs=patterns(MODEL_OUTPUTS),
        activations=patterns(ACTIVATIONS),
        model_inputs=patterns(MODEL_INPUTS),
        model_masks=patterns(MODEL_MASKS),
        routing=patterns(ROUTING),
        training_scalars=BY_ID[TRAINING_SCALARS].patterns if settings.training_convention(TRAINING_SCALARS) else (),
        training_forward=settings.training_convention(TRAINING_FORWARD),
        named_like_class=settings.enabled(NAMED_LIKE_CLASS),
        parameter_from_callers=settings.enabled(FROM_CALLERS),
        public_from_callers=settings.enabled(FROM_CALLERS) and settings.enabled(FROM_MODULE_CALLERS),
        project_callers=settings.enabled(FROM_CALLERS) and settings.enabled(FROM_PROJECT_CALLERS),
        submodule_callers=settings.enabled(FROM_CALLERS) and settings.enabled(FROM_SUBMODULE_CALLS),
        mask_names=patterns(MASK_NAMES),
        submodule_exceptions=BY_ID[SUBMODULE].exceptions if settings.enabled(SUBMODULE) else None,
        multimodal_inputs=settings.enabled(MULTIMODAL_INPUT),
    )

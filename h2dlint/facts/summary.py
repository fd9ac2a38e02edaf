"""What one file holds, as far as hotness is concerned: its functions, the calls they make, and its H2D sites.

These are plain records, built complete by `checker/collector.py` from an `ast` tree (the records are frozen;
what is learnt after a record is made, such as a later custom-op registration or capture through calls,
replaces it) and read by `hotness.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Dict, FrozenSet, List, NamedTuple, Optional, Set, Tuple, Union

MODULE = "<module>"  # the owner of code outside any function



class Marker(Enum):
    """A `# h2dlint: hot` or `# h2dlint: cold` comment."""

    HOT = "hot"
    COLD = "cold"


class LoopKind(Enum):
    """What repeats the code of a loop region; the value is how messages name it ("in a loop at line 9")."""

    LOOP = "loop"  # `for` and `while`
    REQUESTS = "loop over requests"  # `for req in batch.reqs:` (`hot-per-request-loop-over-requests`)
    SERVICE = "service loop"  # `while True:`, `while not self._stop.is_set():` (`hot-service-loop`)
    # `for t in timesteps:`, and every loop or comprehension inside it, which take its line (`hot-denoising-loop`)
    STEPS = "denoising loop"
    # A loop or comprehension of a pipeline's `__call__` beside or around its denoising loop (over reference images,
    # video segments), and every loop inside it but a denoising loop: per request (`hot-per-request-loop`)
    PER_REQUEST = "per-request loop"
    COMPREHENSION = "comprehension"  # the element and filters of a comprehension or generator


LoopRegion = Tuple[LoopKind, int]  # a loop region and the line it starts on


class CallKind(Enum):
    """How a call names the function it may reach (see `CallRef`)."""

    NAME = "name"  # `m()`
    SELF = "self"  # `self.m()` / `cls.m()`
    SUPER = "super"  # `super().m()`
    ATTR = "attr"  # `X.m()`, X a plain name
    METHOD = "method"  # `m` called on any other receiver: `self.batch.m()`, `f().m()`
    TABLE = "table"  # through the dispatch table `name`: `HANDLERS[k]()` (see `facts.dispatch`)


@dataclass(frozen=True)
class Span:
    """1-based rows and columns, as the CLI prints them."""

    row: int
    column: int
    end_row: int
    end_column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text in `span` (end exclusive; an empty span inserts) with `content`: what a fix changed,
    read off the libcst transformer's output for the JSON and SARIF formats."""

    span: Span
    content: str


SAFE, UNSAFE = "safe", "unsafe"  # ruff's applicability names: `--fix` applies safe fixes, `--unsafe-fixes` both


@dataclass(frozen=True)
class Fix:
    """What analysis found to rewrite at one finding, by position; `h2dlint.fixing.transform` rewrites it.

    `target` is a runtime helper (`h2d_tensor`, `h2d_as_tensor`) that replaces the constructor's callee, or
    a torch fill function (`full`, `zeros`, `ones`) that builds a literal scalar on the device."""

    message: str  # what the fix does, e.g. "Replace with `h2d_tensor(...)`"
    target: str
    constructor: str  # what the callee must be, in the scope of the call: "torch.tensor"
    call: Span  # the constructor call
    device: Union[Span, str, None] = None  # a device argument to add: the expression at a span, or source text
    absorbed: Optional[Span] = None  # the `.to(...)` / `.cuda(...)` call around `call`, removed
    dtype: Optional[str] = None  # a `dtype=torch.<dtype>` argument a fill needs, to keep the inferred dtype
    applicability: str = SAFE
    caveat: Optional[str] = None  # why the fix is unsafe


@dataclass(frozen=True)
class FunctionInfo:
    qualname: str  # Python's __qualname__: `ScheduleBatch.prepare_for_decode`, `f.<locals>.g`
    name: str
    line: int
    class_qualname: Optional[str]  # set for methods
    parent: Optional[str]  # the enclosing function, for nested functions
    marker: Optional[Marker] = None  # from a `# h2dlint: hot|cold` comment on its header
    cache_decorator: Optional[str] = None  # "functools.lru_cache" and the like: the body runs once per key
    end_line: int = 0  # the last line of its body
    returns: Optional[str] = None  # the class its return annotation names, as written
    # How it is registered as a torch custom op, which model forward passes call: "`@register_custom_op`",
    # "`direct_register_custom_op(...)` at line 396"
    custom_op: Optional[str] = None
    # "torch.compile" when decorated with it: its body is traced into a graph, where Inductor makes small
    # constant tensors inside kernels and lifts others into graph constants, instead of copying per call
    compiled_by: Optional[str] = None
    # Declared for subclasses to define (`facts.dispatch.declares_interface`): `@abstractmethod`, a body
    # raising `NotImplementedError`, or `...` in an ABC or Protocol
    interface: bool = False
    # Every run of it ends in its final `raise` (`facts.error_paths.always_raises`): an error path
    error_path: bool = False
    # Decorated `@property` (and with nothing that caches it): reading the attribute runs the body
    is_property: bool = False
    # For a method `forward`: its first parameter after `self`, what the module takes in (`pixel_values`)
    first_input: Optional[str] = None


@dataclass(frozen=True)
class ClassInfo:
    qualname: str
    bases: Tuple[str, ...]  # simple names of base classes, as written
    marker: Optional[Marker] = None


class CallRef(NamedTuple):
    """A call from `caller` that may reach a function of this module. A named tuple, not a dataclass: a project
    has hundreds of thousands, and workers pickle them to the main process (a dataclass's state is a dict per
    call: sglang's took 1.2 s of a cold run's CPU to pickle, and twice the bytes)."""

    caller: str  # a function qualname, or MODULE
    kind: CallKind
    name: str
    owner: Optional[str]  # the plain name X for CallKind.ATTR
    line: int
    loop_line: Optional[int]  # innermost loop around the call, within the caller
    # What that loop is: one over requests (`facts.iteration.iterates_requests`), a service loop
    # (`runs_until_stopped`), a denoising loop (`iterates_timesteps`), a pipeline's other loop, ...
    loop_kind: Optional[LoopKind] = None
    capture_line: Optional[int] = None  # the `with torch.cuda.graph(...)` around the call, within the caller
    # The id of the one-time guard around the call (`if self._x is None:`: `one-time-guard-none`), if any:
    # such a call spreads no heat
    one_time: Optional[str] = None
    # under the guard of a memo keyed on a runtime value (`facts.memo`): reaches its callee per request
    per_miss: bool = False
    # the line of a branch taken only with images, audio or video around the call: reaches its callee per request
    multimodal_branch: Optional[int] = None
    # What the receiver of an ATTR or METHOD call is known to be: ("self", "a", "b") for `self.a.b.m()`;
    # ("Batch", "req") for `batch.req.m()` where `batch: Batch`; ("Batch()",) for `b.m()` after
    # `b = Batch(...)`, a class or a function whose return annotation names one ("self.make()" for a method).
    receiver: Optional[Tuple[str, ...]] = None
    # Not a call but a read of the attribute `name` (`self.seq_lens_cpu`, `meta.seq_lens_cpu` with `meta: Meta`):
    # it reaches a function only where that is a property (`FunctionInfo.is_property`)
    reads_attribute: bool = False


@dataclass(frozen=True)
class PlacementQuery:
    """A placement this file cannot answer alone, asked of the project index once every file is summarised:
    what `written()` returns ("call": `make_ids`, `ids_mod.make_ids`, looked up through the file's imports),
    what a method that `owner` inherits returns ("method"), or what an attribute it inherits holds
    ("attribute"); `owner` is a class of this file, `name` the method or attribute.

    "typed" asks what attribute `name` of an object of known class holds ("typed-method": what its method `name`
    returns): `receiver` is what is known of the
    object, as `CallRef.receiver` writes it (`("CommonAttentionMetadata",)` for `meta.seq_lens` with
    `meta: CommonAttentionMetadata`; `("self", "batch")` for `self.batch.seq_lens`, `owner` then the class of
    `self`), and `mirror` whether a `<name>_cpu` attribute of that class makes it the device copy
    (`placement-sibling-host-mirror` is on).

    "callers" asks whether any other file calls or imports function or method `name` (of class `owner`, if
    any): if none does, a parameter of it lives where every call in its own module passes it, as `local` says
    (`facts.placement_callers`). "module-callers" asks the same of class `name`, for a parameter of its
    `forward` that the calls of its instances in its module place (`facts.placement_submodule_calls`)."""

    kind: str
    name: str
    owner: str = ""
    receiver: Tuple[str, ...] = ()
    mirror: bool = False
    written: str = ""  # the attribute as written (`meta.seq_lens`), for a remedy that names its mirror
    # "callers": the answer when the module's calls are all the calls; "call": where the first argument lives,
    # the answer when the function returns its first argument where it is
    local: Optional[ExportedPlacement] = None
    parameter: Tuple[str, int] = ("", -1)  # "callers": the parameter, and where a call passes it by position
    # "module-callers" without `local`: the calls of the module, each (the calling method's qualname, its line,
    # the callee as written: `self.visual`, `blk`), whose arguments the project asks the file for
    calls: Tuple[Tuple[str, int, str], ...] = ()


@dataclass(frozen=True)
class ExportedPlacement:
    """What a file knows of where a function's return value or a class's attribute lives, for other files
    (`facts.placement_exports`): a `facts.placement.Place` value with its evidence and chain, or a question of
    its own to pass on (`pending`)."""

    place: str
    evidence: str = ""
    chain: Tuple[str, ...] = ()
    pending: Optional[PlacementQuery] = None
    mirror: str = ""  # the host mirror (`seq_lens_cpu`) that makes the attribute the device copy, if it did
    # The record class whose constructor calls in this file placed the field (`facts.placement_fields`): the
    # project trusts it only where no other file constructs that class or stores the field.
    record: str = ""


@dataclass(frozen=True)
class PlacementExports:
    """What one file's placement analysis tells the others (`placement_summary.ModulePlacements.exports`):
    where what each top-level function and method returns lives (by qualname: `make_ids`, `Pool.alloc`), and
    what each attribute of a top-level class holds (None: assigned there, placement unknown). Worked out on
    demand, only for the files a question reaches, and cached by content (`project.placement_demand`)."""

    returns: Dict[str, ExportedPlacement] = field(default_factory=dict)
    attributes: Dict[str, Dict[str, Optional[ExportedPlacement]]] = field(default_factory=dict)
    # Each top-level function that returns its first argument where it is (`facts.placement_through`):
    # `flatten_bn(x)` is where `x` is, at each call.
    follows_first: FrozenSet[str] = frozenset()


@dataclass(frozen=True)
class PlacedVariant:
    """What a rule reports at a pending site if the query's answer is `place` (a `Place` value); `evidence`
    in `problem` and `placement` stands for the answer's evidence (`PENDING_EVIDENCE`)."""

    place: str
    problem: str
    remedy: str
    unfixable: Optional[str]
    placement: Tuple[str, ...]


# The evidence of an assumed answer to a pending query, replaced by the real one once the project gives it.
PENDING_EVIDENCE = "\x00pending\x00"
# The answer to a question that no file of the project answers (or that a file checked alone cannot ask).
UNANSWERED = "unknown"


@dataclass(frozen=True)
class Site:
    """An H2D construct that a rule matched; whether it is reported depends on hotness."""

    code: str
    problem: str  # what happens, for the message
    remedy: str  # what to use instead
    span: Span
    function: str  # enclosing function qualname, or MODULE
    loop: Optional[LoopRegion]  # the innermost loop or comprehension, within the function
    marked_cold: bool = False
    in_graph_capture: bool = False  # runs under CUDA-graph capture (see `capture`): cold, never rewritten
    capture: Optional[str] = None  # why it runs under capture: "inside `with torch.cuda.graph(...)` at line 9"
    # The id of the one-time guard around it (`if not hasattr(self, ...)`: `one-time-guard-hasattr`), if any
    one_time: Optional[str] = None
    per_miss: bool = False  # under the guard of a memo keyed on a runtime value: runs on each cache miss
    multimodal_branch: Optional[int] = None  # the `if` taken only with images, audio or video around it
    # It builds on, or copies to, a device taken from another tensor (`device=ids.device`: `facts.arguments`)
    borrowed_device: bool = False
    fix: Optional[Fix] = None
    unfixable: Optional[str] = None  # why the rule's fix does not apply here
    placement: Tuple[str, ...] = ()  # where the tensors it reads live, and why (`facts.placement.explanation`)
    # A site whose operand lives where another file says: reported only once the project answers `query`
    # with a placement one of `variants` is for (`project.placement_links`); never on a file alone.
    query: Optional[PlacementQuery] = None
    variants: Tuple[PlacedVariant, ...] = ()

    def decided(self, place: str = UNANSWERED, evidence: str = "", steps: Tuple[str, ...] = ()) -> Site:
        """This site once the answer to `query` is `place` (a `Place` value; `UNANSWERED` when no file of the
        project knows, or the file is checked alone), with that answer's `evidence` for the placeholder and its
        `steps`: the variant for it, or the site still pending when the rule reports nothing there."""
        variant = next((v for v in self.variants if v.place == place), None)
        if self.query is None or variant is None:
            return self
        return replace(
            self,
            problem=variant.problem.replace(PENDING_EVIDENCE, evidence),
            remedy=variant.remedy,
            unfixable=variant.unfixable,
            placement=tuple(line.replace(PENDING_EVIDENCE, evidence) for line in variant.placement) + steps,
            query=None,
            variants=(),
        )


@dataclass
class ModuleSummary:
    functions: Dict[str, FunctionInfo] = field(default_factory=dict)
    classes: Dict[str, ClassInfo] = field(default_factory=dict)
    calls: List[CallRef] = field(default_factory=list)
    sites: List[Site] = field(default_factory=list)
    # Names bound by imports anywhere in the file -> what they import, e.g. `Batch` -> `pkg.batch.Batch`,
    # `F` -> `torch.nn.functional`; relative imports keep their leading dots (`.batch.Batch`).
    imports: Dict[str, str] = field(default_factory=dict)
    star_imports: List[str] = field(default_factory=list)  # `from .common import *`: ".common"
    # Function qualname -> the names imported inside it: a lazy import in one method (`from .deepep import
    # dispatch`) says what the name means there, whatever another method of the file imports under it.
    scoped_imports: Dict[str, Dict[str, str]] = field(default_factory=dict)
    # Class qualname -> instance attribute -> the classes it is given, as written like `CallRef.receiver`'s
    # root: `self.pool = Pool(...)` "Pool()", `self.pool: Pool` or `pool: Pool` in the class body "Pool",
    # `self.pool = self.make_pool()` "self.make_pool()", `self.pool = pool` with `pool: Pool` "Pool".
    attribute_types: Dict[str, Dict[str, Tuple[str, ...]]] = field(default_factory=dict)
    # Dispatch tables (`facts.dispatch`): name as written (`HANDLERS`, `self.HANDLERS` both "HANDLERS") ->
    # the functions it maps to: ("name", f) for `f`, ("self", m) for `self.m`.
    tables: Dict[str, Tuple[Tuple[str, str], ...]] = field(default_factory=dict)
    # Method aliases (`facts.dispatch`): class qualname -> instance attribute -> the methods of the class bound
    # to it (`self.update = self.update_sliding_window`: "update" -> ("update_sliding_window",)).
    method_aliases: Dict[str, Dict[str, Tuple[str, ...]]] = field(default_factory=dict)
    # The attributes each top-level class assigns or declares (the names of `PlacementExports.attributes`,
    # whose placements are worked out only for the files another file asks: `project.placement_links`).
    attribute_names: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    # The record classes whose constructor calls in the file fill fields: their tables may name more.
    filled_records: Tuple[str, ...] = ()
    # The last name of everything the file calls (`f(...)`, `torch.ops.vllm.lora_shrink(...)`: "f",
    # "lora_shrink"): whether anything calls a custom op by its registered name (`project.hotness`).
    called_names: Set[str] = field(default_factory=set)
    # The attributes the file stores on an object other than `self` (`meta.seq_lens = ...`, and the fields
    # `dataclasses.replace(meta, seq_lens=...)` names): a record's field stored so is not what its constructor
    # calls put there (`facts.placement_fields`).
    stored_attributes: Set[str] = field(default_factory=set)
    # The multimodal input fields the file declares (`facts.multimodal_inputs`): name -> kept on the host.
    multimodal_fields: Dict[str, bool] = field(default_factory=dict)

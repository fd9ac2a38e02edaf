"""What one file holds, as far as hotness is concerned: its functions, the calls they make, and its H2D sites.

These are plain records, built by `collector.py` from an `ast` tree and read by `hotness.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

MODULE = "<module>"  # the owner of code outside any function

LoopRegion = Tuple[str, int]  # ("loop" | "comprehension", the line it starts on)


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


@dataclass
class FunctionInfo:
    qualname: str  # Python's __qualname__: `ScheduleBatch.prepare_for_decode`, `f.<locals>.g`
    name: str
    line: int
    class_qualname: Optional[str]  # set for methods
    parent: Optional[str]  # the enclosing function, for nested functions
    marker: Optional[str] = None  # "hot" or "cold", from a `# h2dlint: ...` comment
    cache_decorator: Optional[str] = None  # "functools.lru_cache" and the like: the body runs once per key
    end_line: int = 0  # the last line of its body
    returns: Optional[str] = None  # the class its return annotation names, as written
    # How it is registered as a torch custom op, which model forward passes call: "`@register_custom_op`",
    # "`direct_register_custom_op(...)` at line 396"
    custom_op: Optional[str] = None
    # "torch.compile" when decorated with it: its body is traced into a graph, where Inductor makes small
    # constant tensors inside kernels and lifts others into graph constants, instead of copying per call
    compiled_by: Optional[str] = None


@dataclass
class ClassInfo:
    qualname: str
    bases: Tuple[str, ...]  # simple names of base classes, as written
    marker: Optional[str] = None


@dataclass(frozen=True)
class CallRef:
    """A call from `caller` that may reach a function of this module."""

    caller: str  # a function qualname, or MODULE
    # "self" (self.m / cls.m), "super" (super().m), "name" (m), "attr" (X.m, X a plain name),
    # "method" (m called on any other receiver: `self.batch.m()`, `f().m()`)
    kind: str
    name: str
    owner: Optional[str]  # the plain name X for "attr"
    line: int
    loop_line: Optional[int]  # innermost loop around the call, within the caller
    capture_line: Optional[int] = None  # the `with torch.cuda.graph(...)` around the call, within the caller
    one_time: bool = False  # under a cached-build guard (`if self._x is None:`): spreads no heat
    # What the receiver of an "attr" or "method" call is known to be: ("self", "a", "b") for `self.a.b.m()`;
    # ("Batch", "req") for `batch.req.m()` where `batch: Batch`; ("Batch()",) for `b.m()` after
    # `b = Batch(...)`, a class or a function whose return annotation names one ("self.make()" for a method).
    receiver: Optional[Tuple[str, ...]] = None


@dataclass
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
    one_time: bool = False  # under a cached-build guard: `if self._x is None:` / `if not hasattr(self, ...)`
    fix: Optional[Fix] = None
    unfixable: Optional[str] = None  # why the rule's fix does not apply here


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
    # Class qualname -> instance attribute -> the classes it is given, as written like `CallRef.receiver`'s
    # root: `self.pool = Pool(...)` "Pool()", `self.pool: Pool` or `pool: Pool` in the class body "Pool",
    # `self.pool = self.make_pool()` "self.make_pool()", `self.pool = pool` with `pool: Pool` "Pool".
    attribute_types: Dict[str, Dict[str, Tuple[str, ...]]] = field(default_factory=dict)

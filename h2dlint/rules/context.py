"""What a rule sees: the kinds of node it may look at, and the context of each one.

A rule declares the node kinds it looks at (`Rule.looks_at`). The checker's single walk calls the rule's
`check_<kind>` method at each such node, with the `Context` of that moment: the enclosing function and
class, the innermost loop, CUDA-graph capture, one-time state, the names in scope and the stream work of the
function. The walk owns the context and updates it as it enters and leaves scopes and regions; rules only
read it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, List, Optional, Sequence, Set, Union

from h2dlint.facts.constructs import stream_work_in
from h2dlint.facts.placement import placement_of
from h2dlint.facts.placement_summary import ModulePlacements
from h2dlint.facts.placement_values import UNKNOWN, Placement
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.summary import MODULE, LoopRegion, PlacementQuery
from h2dlint.facts.syntax import last_name

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]


class NodeKind(Enum):
    """The nodes a rule can look at; the value names the rule's method (`check_call`, ...)."""

    CALL = "call"  # every `ast.Call`
    SUBSCRIPT = "subscript"  # `x[i]` read
    SUBSCRIPT_TARGET = "subscript_target"  # `x[i] = v`, `x[i] += v`, `del x[i]`
    TEST = "test"  # the test of `if`, `while`, `assert`, and of `a if test else b`
    FOR_ITERABLE = "for_iterable"  # what a `for` statement iterates over


class FrameKind(Enum):
    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"


@dataclass
class Frame:
    """A scope the walk is in: the module, a class body or a function body."""

    kind: FrameKind
    qualname: str
    loops: List[LoopRegion] = field(default_factory=list)  # enclosing loops, innermost last
    node: Optional[FunctionNode] = None  # the function, for frames of kind FUNCTION
    stream_work: Optional[str] = None  # memo of `stream_work_in(node)`; "" when there is none
    types: Dict[str, str] = field(default_factory=dict)  # locals of known class (see `receivers.local_types`)
    method_of: Optional[str] = None  # the class, for methods
    has_denoising_loop: Optional[bool] = None  # memo of `FlowWalk._beside_a_denoising_loop`, for functions


class Context:
    """Where the node a rule looks at sits. Filled by the walk; read by rules."""

    def __init__(self, names: NameResolver) -> None:
        self.names = names  # what each name in scope refers to (imports, locals, their values)
        self.frames: List[Frame] = []  # the module, then the classes and functions around the node
        self.captures: List[int] = []  # lines of the enclosing `with torch.cuda.graph(...)` blocks
        self.one_time_guards: List[str] = []  # the ids of the one-time guards around the node, innermost last
        self.per_miss_guards = 0  # how many guards of memos keyed on runtime values (`facts.memo`) enclose it
        self.multimodal_branches: List[int] = []  # lines of the `if pixel_values is not None:` around it
        # Where tensors default to a device: "inside `with torch.device(...)` at line 9", innermost last.
        self.device_contexts: List[str] = []
        self.default_device: Optional[str] = None  # "after `torch.set_default_device(...)` at line 3"
        self.placements: Optional[ModulePlacements] = None  # the module's placement knowledge (`facts.placement`)
        # The questions for the project that the placements asked since the walk last cleared this: a rule's
        # match may hang on their answers (`checker.collector` then tries each).
        self.asked: Set[PlacementQuery] = set()
        # Why syncs are allowed here ("inside `with gpu_sync_allowed(...):` at line 7"), innermost
        # last: the blocks of `sync-allowed-contexts` (`facts.allowed_syncs`).
        self.sync_allowed: List[str] = []
        # The target of the `x[i] op= value` statement being visited, else None: a rule that reports the target
        # need not report the same index read again in the value (`x[m] += y[m]`).
        self.augmented_target: Optional[ast.Subscript] = None
        # The targets of the plain assignment being visited (`seq_lens_cpu = seq_lens.cpu()`), else empty: a
        # remedy must not name as a mirror what this very statement builds.
        self.assigning: Sequence[ast.expr] = ()
        self.assigned: Optional[ast.expr] = None  # and the value it assigns
        # What each call rule found at the call being checked (a `Match`, or None), by code, for a rule that
        # reuses other rules' verdicts (`CopyUnderCapture`): only verdicts that asked the project nothing.
        self.call_matches: Dict[str, object] = {}

    def placement(self, expr: ast.expr) -> Placement:
        """Where the tensor `expr` lives, here, with its evidence (`facts.placement`)."""
        if self.placements is None:
            return UNKNOWN
        scope = self.placements.scope(self.names, self._method_class(), self.function)
        found = placement_of(expr, scope)
        if found.pending is not None:
            self.asked.add(found.pending)
        return found

    def names_a_mask(self, expr: ast.expr) -> bool:
        """Whether the index `expr` is named as a boolean mask (`placement-name-mask-index`)."""
        return self.placements is not None and self.placements.names_a_mask(expr)

    def host_mirror(self, expr: ast.expr) -> Optional[str]:
        """The host mirror in sight of the tensor `expr` reads (`batch.seq_lens_cpu`), as written, or None."""
        if self.placements is None:
            return None
        mirror = self.placements.host_mirror(expr, self.names, self._method_class(), self.function)
        built_here = mirror is not None and any(
            isinstance(t, (ast.Name, ast.Attribute)) and mirror.endswith(last_name(t)) for t in self.assigning
        )
        return None if built_here else mirror

    @property
    def device_context(self) -> Optional[str]:
        """Why factories here default to a device (a `with torch.device(...)` block, a default device), or None."""
        return self.device_contexts[-1] if self.device_contexts else self.default_device

    def _method_class(self) -> Optional[str]:
        """The class whose `self` the node sees: that of the innermost method around it."""
        for frame in reversed(self.frames):
            if frame.method_of is not None:
                return frame.method_of
        return None

    @property
    def function(self) -> Optional[FunctionNode]:
        """The innermost function whose body holds the node; None at module level and in class bodies
        outside any function."""
        frame = self._innermost(FrameKind.FUNCTION)
        return frame.node if frame is not None else None

    @property
    def function_name(self) -> str:
        """The qualname of `function`, or MODULE."""
        frame = self._innermost(FrameKind.FUNCTION)
        return frame.qualname if frame is not None else MODULE

    @property
    def class_name(self) -> Optional[str]:
        """The qualname of the innermost class whose body (or a method of which) holds the node."""
        frame = self._innermost(FrameKind.CLASS)
        return frame.qualname if frame is not None else None

    @property
    def loop(self) -> Optional[LoopRegion]:
        """The innermost loop or comprehension around the node, within its function."""
        loops = self.frames[-1].loops
        return loops[-1] if loops else None

    @property
    def capture_line(self) -> Optional[int]:
        """The line of the outermost `with torch.cuda.graph(...)` block around the node, within its function."""
        return self.captures[0] if self.captures else None

    @property
    def one_time(self) -> Optional[str]:
        """The id of the innermost one-time guard around the node (`one-time-guard-none`, ...), or None."""
        return self.one_time_guards[-1] if self.one_time_guards else None

    def _innermost(self, kind: FrameKind) -> Optional[Frame]:
        for frame in reversed(self.frames):
            if frame.kind is kind:
                return frame
        return None

    @property
    def multimodal_branch(self) -> Optional[int]:
        """The line of the innermost branch taken only with images, audio or video around the node
        (`facts.multimodal_branches`), unless a one-time guard is nearer."""
        return self.multimodal_branches[-1] if self.multimodal_branches and not self.one_time else None

    @property
    def per_miss(self) -> bool:
        """Under the guard of a memo keyed on a runtime value, and no one-time guard: runs on each miss."""
        return self.per_miss_guards > 0 and not self.one_time

    def stream_work(self) -> str:
        """What the current function does with streams (`waits on another stream`), or "": computed once
        per function, on first use."""
        frame = self.frames[-1]
        if frame.node is None:
            return ""
        if frame.stream_work is None:
            frame.stream_work = stream_work_in(frame.node, self.names) or ""
        return frame.stream_work

"""The walk's control flow (a mixin of `walk.Walk`): loops and comprehensions, whose per-iteration parts run in
a loop region; `with` blocks, which open device contexts, sync-allowed regions and CUDA-graph capture; and `if`
statements, whose cached builds and flag-selected branches run under a one-time guard, and whose bodies taken
only with images, audio or video are multimodal branches.
"""

from __future__ import annotations

import ast
from contextlib import contextmanager, nullcontext
from typing import Callable, ContextManager, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union

from h2dlint.facts.allowed_syncs import sync_allowed_region
from h2dlint.facts.error_paths import ERROR_PATH, leads_to_raise
from h2dlint.facts.guards import (
    cached_build_guard,
    flag_branch,
    guarded_attribute,
    is_dropped,
    is_once_flag_guard,
    tested_value,
)
from h2dlint.facts.iteration import is_fixed_iteration, iterates_requests, iterates_timesteps, runs_until_stopped
from h2dlint.facts.memo import runtime_memo_key
from h2dlint.facts.multimodal_branches import tests_multimodal_presence
from h2dlint.facts.placement_exports import statements_within
from h2dlint.facts.placement_regions import device_context
from h2dlint.facts.registrations import is_graph_capture
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.settings import Settings
from h2dlint.facts.summary import LoopKind, LoopRegion
from h2dlint.facts.syntax import dotted_name, isinstance_of
from h2dlint.rules.context import Context, Frame, FrameKind, NodeKind

# Cached builds that a function dropping the cache (`self._meta = None` outside `__init__`) makes run again.
_DROPPABLE_CACHES = frozenset({"one-time-guard-none", "one-time-guard-memo"})
_Comprehension = Union[ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp]


class FlowWalk:
    """The part of the walk that enters loops, `with` blocks and `if` branches (a mixin of `walk.Walk`, which
    provides what is declared here)."""

    context: Context
    _frames: List[Frame]
    _captures: List[int]
    _names: NameResolver
    _module: ast.Module
    _settings: Settings
    _enabled: Callable[[str], bool]
    _once_flags: Callable[[], FrozenSet[str]]
    _records: Set[str]
    _multimodal_branches: bool
    _request_loop_names: Tuple[str, ...]
    _service_loop_names: Tuple[str, ...]
    _denoising_loop_names: Tuple[str, ...]
    _checks_iterables: bool
    _check: Callable[[NodeKind, ast.AST], None]
    _check_test: Callable[[ast.expr], None]
    _visit: Callable[[ast.AST], None]
    _visit_all: Callable[[Iterable[ast.AST]], None]
    _visit_guarded: Callable[[Sequence[ast.AST], str, bool], None]
    _source: Callable[[], str]

    # --- loops: only the parts that run once per iteration ---------------------------------------------------

    def _visit_in_region(self, nodes: Iterable[ast.AST], region: LoopRegion) -> None:
        """Visit `nodes` as code that runs once per iteration of a loop or comprehension."""
        loops = self._frames[-1].loops
        loops.append(self._within_denoising(region))
        self._visit_all(nodes)
        loops.pop()

    def _visit_for(self, node: Union[ast.For, ast.AsyncFor]) -> None:
        self._visit(node.target)
        if self._checks_iterables:
            self._check(NodeKind.FOR_ITERABLE, node.iter)
        self._visit(node.iter)
        if self._is_fixed_iteration(node.iter):
            self._visit_all(node.body)
        else:
            self._visit_in_region(node.body, (self._for_kind(node), node.lineno))
        self._visit_all(node.orelse)

    def _visit_while(self, node: ast.While) -> None:
        loops = self._frames[-1].loops
        service = runs_until_stopped(node, self._service_loop_names)
        kind = LoopKind.SERVICE if service else self._denoising_kind(node) or LoopKind.LOOP
        loops.append(self._within_denoising((kind, node.lineno)))
        self._check_test(node.test)  # the test runs once per iteration too
        self._visit_all([node.test, *node.body])
        loops.pop()
        self._visit_all(node.orelse)

    def _for_kind(self, node: Union[ast.For, ast.AsyncFor]) -> LoopKind:
        over_requests = iterates_requests(node.target, node.iter, self._request_loop_names)
        return self._denoising_kind(node) or (LoopKind.REQUESTS if over_requests else LoopKind.LOOP)

    def _denoising_kind(self, loop: Union[ast.For, ast.AsyncFor, ast.While]) -> Optional[LoopKind]:
        """A denoising loop (`while i < len(timesteps):` too), or a pipeline's other loop beside one; else None."""
        if iterates_timesteps(_repeated(loop), self._denoising_loop_names):
            return LoopKind.STEPS
        return LoopKind.PER_REQUEST if self._beside_a_denoising_loop() else None

    def _comprehension_kind(self) -> LoopKind:
        """A comprehension of a pipeline's `__call__` outside its loops, beside its denoising loop, goes over the
        request's items as its other loops do."""
        loops = self._frames[-1].loops
        return LoopKind.PER_REQUEST if not loops and self._beside_a_denoising_loop() else LoopKind.COMPREHENSION

    def _within_denoising(self, region: LoopRegion) -> LoopRegion:
        """`region`, or the denoising loop around it: what runs in a loop inside one runs at least once per step;
        or the per-request loop of a pipeline that holds it, unless it is a denoising loop or another such."""
        loops = self._frames[-1].loops
        around = loops[-1] if loops else None
        if around is None or around[0] not in _DENOISING:
            return region
        return around if around[0] is LoopKind.STEPS or region[0] not in _DENOISING else region

    def _beside_a_denoising_loop(self) -> bool:
        """Whether the function walked, one whose loops are taken for its denoising steps (a pipeline's `__call__`:
        `Settings.loops_taken_for_steps`), has a denoising loop: then its other loops (over reference images,
        video segments, which may hold that denoising loop) repeat per request."""
        frame = self._frames[-1]
        if frame.kind is not FrameKind.FUNCTION or frame.node is None or not self._denoising_loop_names:
            return False
        if frame.has_denoising_loop is None:
            class_name = frame.method_of.rsplit(".", 1)[-1] if frame.method_of else None
            frame.has_denoising_loop = self._settings.loops_taken_for_steps(frame.node.name, class_name) and any(
                isinstance(statement, _LOOPS) and iterates_timesteps(_repeated(statement), self._denoising_loop_names)
                for statement in statements_within(frame.node.body)  # not the loops of functions it defines
            )
        return frame.has_denoising_loop

    def _visit_comprehension(self, node: _Comprehension) -> None:
        """The element and the filters run per item; the outermost iterable runs once."""
        self._names.note_comprehension(node)
        # A generator's parentheses may be a call's (`sum(x for x in y)`), so it is placed at its element.
        line = node.elt.lineno if isinstance(node, ast.GeneratorExp) else node.lineno
        region = (self._comprehension_kind(), line)
        first, *inner = node.generators
        elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        if not inner and self._is_fixed_iteration(first.iter):
            self._visit_all([*elements, first.target, first.iter, *first.ifs])
            return
        self._visit_in_region(elements, region)
        self._visit(first.target)
        self._visit(first.iter)
        self._visit_in_region([*first.ifs, *inner], region)

    def _is_fixed_iteration(self, iterable: ast.expr) -> bool:
        return is_fixed_iteration(iterable, self._names) and self._enabled("one-time-fixed-iteration")

    # --- CUDA-graph capture blocks -------------------------------------------------------------------------

    def _visit_with(self, node: Union[ast.With, ast.AsyncWith]) -> None:
        self._visit_all(node.items)
        devices = [d for d in (device_context(i.context_expr, self._names) for i in node.items) if d is not None]
        allowed = self._sync_allowed_regions(node)
        self.context.device_contexts.extend(devices)
        self.context.sync_allowed.extend(allowed)
        if not any(is_graph_capture(item.context_expr, self._names) for item in node.items):
            self._visit_all(node.body)
        else:
            self._captures.append(node.lineno)
            self._visit_all(node.body)
            self._captures.pop()
        del self.context.device_contexts[len(self.context.device_contexts) - len(devices) :]
        del self.context.sync_allowed[len(self.context.sync_allowed) - len(allowed) :]

    def _sync_allowed_regions(self, node: Union[ast.With, ast.AsyncWith]) -> List[str]:
        allowed = self._settings.sync_allowed_contexts
        found = (sync_allowed_region(item.context_expr, allowed) for item in node.items)
        return [why for why in found if why is not None]

    # --- one-time cached builds: `if self._x is None:` / `if not hasattr(self, "_x"):` ---------------------------

    def _visit_if(self, node: ast.If) -> None:
        self._check_test(node.test)
        self._visit(node.test)
        guarded = tested_value(node.test, self._names)
        guard = cached_build_guard(node.test, node.body, guarded)
        dropped = guard in _DROPPABLE_CACHES and is_dropped(
            guarded_attribute(node.test, guarded), self._module, self._source(), self._settings.is_cold_name
        )
        if dropped:
            guard = None  # a cache that per-call code drops (`self._meta = None` per forward) is rebuilt each time
        if guard == "one-time-guard-none" and self._frames[-1].method_of in self._records:
            guard = None  # a record caches once per record, and records are built per step (`metadata.seq_lens_cpu`)
        if guard is None and is_once_flag_guard(node.test, self._once_flags):
            guard = "one-time-guard-once-flag"
        guard = self._switched_on(guard)
        if guard is not None:
            with self._narrowed(node.test):
                self._visit_guarded(node.body, guard, runtime_memo_key(node.test, node.body, self._names.value_at))
            self._visit_all(node.orelse)
        else:
            self._visit_branches(node.test, node.body, node.orelse)

    def _visit_branches(self, test: ast.expr, body: Sequence[ast.AST], orelse: Sequence[ast.AST]) -> None:
        """The two branches of `if test:`, the one that a capture or debugging flag selects under its one-time
        guard, and a body taken only with images, audio or video as such."""
        flagged = flag_branch(test, self._enabled)
        multimodal = self._multimodal_branches and tests_multimodal_presence(test)
        with self._narrowed(test):
            if multimodal and flagged is None:
                self.context.multimodal_branches.append(test.lineno)
                self._visit_all(body)
                self.context.multimodal_branches.pop()
            else:
                self._visit_branch(body, flagged, True)
        self._visit_branch(orelse, flagged, False)

    def _narrowed(self, test: ast.expr) -> ContextManager[None]:
        """In the body of `if isinstance(meta, FlashMeta):`, `meta` is a `FlashMeta`, for the classes of the
        receivers of its calls (type checkers narrow it so)."""
        narrowed = isinstance_of(test)
        written = dotted_name(narrowed[1]) if narrowed is not None else None
        if narrowed is None or written is None or self._frames[-1].kind is not FrameKind.FUNCTION:
            return _UNCHANGED
        return _typed_as(self._frames[-1].types, narrowed[0], written)

    def _visit_branch(self, branch: Sequence[ast.AST], flagged: Optional[Tuple[str, bool]], is_body: bool) -> None:
        """`branch` (the body, or the `else`) under the guard of `flagged` (`flag_branch`) when that selects it,
        or as an error path when it ends in `raise` (`facts.error_paths.leads_to_raise`)."""
        if leads_to_raise(branch) and self._enabled(ERROR_PATH):
            self._visit_guarded(branch, ERROR_PATH, False)
        elif flagged is not None and flagged[1] is is_body:
            self._visit_guarded(branch, flagged[0], False)
        else:
            self._visit_all(branch)

    def _switched_on(self, guard: Optional[str]) -> Optional[str]:
        return guard if guard is not None and self._enabled(guard) else None


_UNCHANGED = nullcontext()


@contextmanager
def _typed_as(types: Dict[str, str], name: str, written: str) -> Iterator[None]:
    """`types` with `name` of the class `written` for the time of a block."""
    before = types.get(name)
    types[name] = written
    try:
        yield
    finally:
        if before is None:
            del types[name]
        else:
            types[name] = before


_DENOISING = (LoopKind.STEPS, LoopKind.PER_REQUEST)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _repeated(loop: Union[ast.For, ast.AsyncFor, ast.While]) -> ast.expr:
    """What decides how often `loop` repeats: what a `for` iterates, the test of a `while`."""
    return loop.test if isinstance(loop, ast.While) else loop.iter


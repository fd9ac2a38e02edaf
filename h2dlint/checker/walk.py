"""The single walk over a module's `ast`: frames (module, class, function) and the regions around each node
(loops, comprehensions, CUDA-graph capture blocks, one-time guards), kept in the `Context` that rules read.
At each node of a kind some rule looks at (`rules.context.NodeKind`) it calls `_check`; `collector.py`
records what the rules match and what the walk meets.

`walk_flow.py` holds the handlers of loops, comprehensions, `with` blocks and `if` statements, which enter
those regions.

The walk visits children in source order (where `ast`'s field order differs: decorators, call arguments,
dict items, conditional expressions), so calls and sites are recorded in the order they are written.
"""

from __future__ import annotations

import ast
from typing import (
    AbstractSet,
    Callable,
    ClassVar,
    Dict,
    Iterable,
    List,
    Optional,
    Sequence,
    Set,
    TypeVar,
    Union,
)

from h2dlint.checker.walk_flow import FlowWalk
from h2dlint.facts.class_attributes import accelerator_attributes, host_default_attributes
from h2dlint.facts.guards import flag_branch, lazy_build_return, once_flags, returns_unless_flag
from h2dlint.facts.memo import runtime_lazy_memo_key
from h2dlint.facts.multimodal_branches import returns_unless_multimodal
from h2dlint.facts.placement_fields import is_record
from h2dlint.facts.placement_conventions import conventions_from, mirror_names
from h2dlint.facts.placement_regions import default_device, regions_possible
from h2dlint.facts.placement_summary import ModulePlacements
from h2dlint.facts.receivers import local_types
from h2dlint.facts.bindings import Bindings, class_bindings, function_bindings, module_bindings
from h2dlint.facts.comprehensions import Comprehensions
from h2dlint.facts.error_paths import ERROR_PATH
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.settings import Settings
from h2dlint.facts.syntax import child_nodes
from h2dlint.rules.context import Context, Frame, FrameKind, NodeKind

T = TypeVar("T")

Handler = Callable[["Walk", ast.AST], None]


class Walk(FlowWalk):
    """Visits a module once, keeping the frames and regions around the current node. A subclass records
    classes and functions (`_record_class`, `_record_function`) and adds handlers for the nodes it reads."""

    HANDLERS: ClassVar[Dict[type, Handler]] = {}

    def __init__(self, lines: Sequence[str], kinds: AbstractSet[NodeKind], resolve_names: bool, settings: Settings):
        """`kinds`: the node kinds that the rules look at, for which the walk calls `_check`. `settings` says
        which heuristics are switched off: their regions are left unmarked."""
        self._lines = lines
        self._text: Optional[str] = None
        self._enabled = settings.enabled  # heuristics switched off leave their regions unmarked
        self._settings = settings
        self._multimodal_branches = settings.multimodal_branches_per_request()
        self._request_loop_names = settings.request_loop_names()
        self._service_loop_names = settings.service_loop_names()
        self._denoising_loop_names = settings.denoising_loop_names()
        self._resolve_names = resolve_names  # without rules, names need no bindings
        self._names = NameResolver()
        self.context = Context(self._names)
        self._frames = self.context.frames
        self._captures = self.context.captures
        self._walrus = any(":=" in line for line in lines)  # without `:=`, only statements bind names
        self._kinds = kinds
        self._checks_tests = NodeKind.TEST in kinds  # asked at every `if`: a flag, not a set lookup
        self._checks_iterables = NodeKind.FOR_ITERABLE in kinds
        self._handlers = _handlers_for(type(self).HANDLERS, kinds)
        self._module = ast.Module(body=[], type_ignores=[])  # the module walked, set by `_walk_module`
        self._records: Set[str] = set()  # the record classes (`placement_fields.is_record`) met so far, by qualname

    def _walk_module(self, module: ast.Module) -> None:
        self._once_flags = _once(lambda: once_flags(module))
        self._module = module
        bindings = module_bindings(module, self._walrus) if self._resolve_names else Bindings()
        self._names.push(bindings)
        if self._resolve_names:
            self.context.placements = _placements(module, bindings, self._settings, self._walrus, self._source())
            self.context.default_device = default_device(module, self._names)
        self._frames.append(Frame(FrameKind.MODULE, ""))
        self._visit_all(module.body)

    def module_placements(self, module: ast.Module) -> Optional[ModulePlacements]:
        """The placement knowledge of a module walked without rules, for the attributes its classes hold
        (`ModulePlacements.attribute_names`); None when it uses no torch, so can build no tensor."""
        return placements_of(module, self._lines, self._settings, self._source())

    def _source(self) -> str:
        """The source as one text, joined once: the text checks before placement read it whole."""
        if self._text is None:
            self._text = "\n".join(self._lines)
        return self._text

    def _record_class(self, node: ast.ClassDef, qualname: str) -> None:
        raise NotImplementedError

    def _record_function(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef], qualname: str) -> None:
        raise NotImplementedError

    def _check(self, kind: NodeKind, node: ast.AST) -> None:
        """Let the rules that look at `kind` check `node`, in the current context."""
        raise NotImplementedError

    # --- the walk -----------------------------------------------------------------------------------------

    def _visit(self, node: ast.AST) -> None:
        handler = self._handlers.get(type(node))
        if handler is not None:
            handler(self, node)
        else:
            self._visit_all(child_nodes(node))

    def _visit_all(self, nodes: Iterable[ast.AST]) -> None:
        for node in nodes:
            self._visit(node)

    def _visit_optional(self, node: Optional[ast.AST]) -> None:
        if node is not None:
            self._visit(node)

    # --- scopes -------------------------------------------------------------------------------------------

    def _visit_class(self, node: ast.ClassDef) -> None:
        qualname = self._child_qualname(node.name)
        self._record_class(node, qualname)
        if is_record(node):
            self._records.add(qualname)
        bindings = class_bindings(node, self._walrus) if self._resolve_names else Bindings()
        bindings.accelerator_attributes = _once(lambda: accelerator_attributes(node, self._names))
        bindings.host_default_attributes = _once(lambda: host_default_attributes(node, self._names))
        self._names.push(bindings)
        self._frames.append(Frame(FrameKind.CLASS, qualname, loops=list(self._frames[-1].loops)))
        self._visit_all(node.decorator_list)
        self._visit_all(node.bases)
        self._visit_all(node.keywords)
        self._visit_all(node.body)
        self._leave_scope()

    def _visit_function(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> None:
        qualname = self._child_qualname(node.name)
        enclosing = self._frames[-1]
        self._record_function(node, qualname)
        bindings = function_bindings(node, self._walrus)
        bindings.comprehensions = Comprehensions.fed()  # told of each comprehension as the walk enters it
        if self.context.placements is not None:
            self.context.placements.share_bindings(node, bindings)
        method_of = enclosing.qualname if enclosing.kind is FrameKind.CLASS else None
        self._names.push(bindings)
        types = local_types(node, bindings)
        self._frames.append(Frame(FrameKind.FUNCTION, qualname, node=node, types=types, method_of=method_of))
        # Decorators, defaults and annotations count as the function's own code, as they always have.
        self._visit_all(node.decorator_list)
        self._visit_arguments(node.args)
        self._visit_optional(node.returns)
        self._visit_body(node.body)
        self._leave_scope()

    def _visit_body(self, body: Sequence[ast.stmt]) -> None:
        """A function's statements; those after an early return of a lazy build, or of a debugging switch that
        is off (`if not envs.DEBUG_X.get(): return`), are one-time; those after an early return without images,
        audio or video (`if pixel_values is None: return None`) run only with them."""
        for index, statement in enumerate(body):
            self._visit(statement)
            guard = self._switched_on(lazy_build_return(statement, body[index + 1 :], self._names.value_at))
            if guard is not None:
                per_miss = runtime_lazy_memo_key(statement, self._names.value_at)
                self._visit_guarded(body[index + 1 :], guard, per_miss)
                return
            flag = returns_unless_flag(statement, self._enabled)
            if flag is not None:
                self._visit_guarded(body[index + 1 :], flag, False)
                return
            if self._multimodal_branches and returns_unless_multimodal(statement):
                self.context.multimodal_branches.append(statement.lineno)
                self._visit_body(body[index + 1 :])
                self.context.multimodal_branches.pop()
                return

    def _visit_guarded(self, nodes: Sequence[ast.AST], guard: str, per_miss: bool) -> None:
        """Visit `nodes` under the one-time guard `guard` (a heuristic's id) or, when the guard is a memo
        keyed on a runtime value, as code that reruns on each cache miss."""
        if per_miss:
            self.context.per_miss_guards += 1
        else:
            self.context.one_time_guards.append(guard)
        self._visit_all(nodes)
        if per_miss:
            self.context.per_miss_guards -= 1
        else:
            self.context.one_time_guards.pop()

    def _visit_arguments(self, args: ast.arguments) -> None:
        """Annotations and defaults in source order: each parameter's annotation, then its default."""
        positional = [*args.posonlyargs, *args.args]
        defaults: List[Optional[ast.expr]] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        parts: List[Optional[ast.AST]] = []
        for arg, default in zip(positional, defaults):
            parts += [arg.annotation, default]
        parts.append(args.vararg.annotation if args.vararg else None)
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            parts += [arg.annotation, default]
        parts.append(args.kwarg.annotation if args.kwarg else None)
        self._visit_all(part for part in parts if part is not None)

    def _leave_scope(self) -> None:
        self._names.pop()
        self._frames.pop()

    def _child_qualname(self, name: str) -> str:
        frame = self._frames[-1]
        if frame.kind is FrameKind.MODULE:
            return name
        if frame.kind is FrameKind.CLASS:
            return f"{frame.qualname}.{name}"
        return f"{frame.qualname}.<locals>.{name}"

    def _owner(self) -> str:
        """The function whose body the current node runs in, or MODULE."""
        return self.context.function_name

    # --- expressions whose fields are not in source order ----------------------------------------------------

    def _visit_dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values):
            self._visit_optional(key)  # None for `**mapping`
            self._visit(value)

    def _visit_if_expression(self, node: ast.IfExp) -> None:
        flagged = flag_branch(node.test, self._enabled)
        self._visit_branch([node.body], flagged, True)
        self._check_test(node.test)
        self._visit(node.test)
        self._visit_branch([node.orelse], flagged, False)

    # --- nodes visited only for the rules that look at them ---------------------------------------------------

    def _check_test(self, test: ast.expr) -> None:
        if self._checks_tests:
            self._check(NodeKind.TEST, test)

    def _visit_assert(self, node: ast.Assert) -> None:
        self._check_test(node.test)
        self._visit(node.test)
        if node.msg is not None:
            self._visit_error_path([node.msg])

    def _visit_raise(self, node: ast.Raise) -> None:
        self._visit_error_path(child_nodes(node))

    def _visit_except_handler(self, node: ast.ExceptHandler) -> None:
        """`except E: log(t.tolist()); raise`: a handler that ends in `raise` is on the way to an exception."""
        self._visit_optional(node.type)
        self._visit_branch(node.body, None, True)

    def _visit_error_path(self, nodes: Iterable[ast.AST]) -> None:
        """`nodes`, which run only on the way to an exception (`facts.error_paths`), under that one-time guard."""
        if self._enabled(ERROR_PATH):
            self._visit_guarded(list(nodes), ERROR_PATH, False)
        else:
            self._visit_all(nodes)

    def _visit_augmented_assignment(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Subscript):
            self.context.augmented_target = node.target
        self._visit(node.target)
        self._visit(node.value)
        self.context.augmented_target = None

    def _visit_subscript(self, node: ast.Subscript) -> None:
        kind = NodeKind.SUBSCRIPT if isinstance(node.ctx, ast.Load) else NodeKind.SUBSCRIPT_TARGET
        if kind in self._kinds:
            self._check(kind, node)
        self._visit_all(child_nodes(node))


def _once(compute: Callable[[], T]) -> Callable[[], T]:
    """`compute`, run on the first call only; later calls return its first result."""
    results: List[T] = []

    def first_result() -> T:
        if not results:
            results.append(compute())
        return results[0]

    return first_result


def placements_of(
    module: ast.Module, lines: Sequence[str], settings: Settings, source: Optional[str] = None
) -> Optional[ModulePlacements]:
    """A fresh placement knowledge of `module` (whose `lines` join to `source`), as the walk builds it but
    sharing nothing with a walk: for what it tells other files (`ModulePlacements.exports`). None when it uses
    no torch, so can build no tensor."""
    if not any("torch" in line for line in lines):
        return None
    text = "\n".join(lines) if source is None else source
    walrus = any(":=" in line for line in lines)
    return _placements(module, module_bindings(module, walrus), settings, walrus, text)


def _placements(
    module: ast.Module, bindings: Bindings, settings: Settings, walrus: bool, text: str
) -> ModulePlacements:
    """The placement knowledge of `module` (source `text`); only the mirrors of the names like a host mirror
    (`seq_lens_cpu`) that the source uses are looked for."""
    return ModulePlacements(module, bindings, conventions_from(settings), walrus, mirror_names(text),
                            regions_possible(text), text)


def _handlers_for(handlers: Dict[type, Handler], kinds: AbstractSet[NodeKind]) -> Dict[type, Handler]:
    """`handlers`, plus those of the nodes that only rules looking at them need: visiting every subscript
    through a handler would cost every file, for rules that most runs do not select."""
    extra: Dict[type, Handler] = {}
    if NodeKind.SUBSCRIPT in kinds or NodeKind.SUBSCRIPT_TARGET in kinds:
        extra[ast.Subscript] = Walk._visit_subscript  # type: ignore[assignment]
        extra[ast.AugAssign] = Walk._visit_augmented_assignment  # type: ignore[assignment]
    return {**handlers, **extra} if extra else handlers


WALK_HANDLERS: Dict[type, Handler] = {
    ast.ClassDef: Walk._visit_class,
    ast.FunctionDef: Walk._visit_function,
    ast.AsyncFunctionDef: Walk._visit_function,
    ast.For: Walk._visit_for,
    ast.AsyncFor: Walk._visit_for,
    ast.While: Walk._visit_while,
    ast.ListComp: Walk._visit_comprehension,
    ast.SetComp: Walk._visit_comprehension,
    ast.GeneratorExp: Walk._visit_comprehension,
    ast.DictComp: Walk._visit_comprehension,
    ast.With: Walk._visit_with,
    ast.AsyncWith: Walk._visit_with,
    ast.Dict: Walk._visit_dict,
    ast.IfExp: Walk._visit_if_expression,
    ast.If: Walk._visit_if,
    ast.Assert: Walk._visit_assert,
    ast.Raise: Walk._visit_raise,
    ast.ExceptHandler: Walk._visit_except_handler,
}  # type: ignore[dict-item]

"""What the single walk (`walk.py`) records into a `ModuleSummary`: classes and functions, imports, the
classes of instance attributes, calls between functions, custom-op registrations, and the rules' matches.

The facts it reads are pure functions of the file's `ast` in `h2dlint.facts`: one-time guards (`guards`),
receiver types (`receivers`), registrations (`registrations`) and marker comments (`markers`).
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from h2dlint.checker.attribute_reads import PropertyReads
from h2dlint.checker.capture import with_capture_marks
from h2dlint.checker.walk import WALK_HANDLERS, Walk
from h2dlint.facts.arguments import borrowed_device
from h2dlint.facts.dispatch import class_aliases, declares_interface, method_aliases, record_table, table_called
from h2dlint.facts.error_paths import always_raises
from h2dlint.facts.markers import find_marker, header_end, may_hold_markers
from h2dlint.facts.multimodal_inputs import declared_fields
from h2dlint.facts.placement_fields import REPLACE, stored_attributes
from h2dlint.facts.placement_values import UNKNOWN, Place, Placement
from h2dlint.facts.positions import span_of
from h2dlint.facts.receivers import call_result, call_target, is_self_alias, receiver, returned_class, written_type
from h2dlint.facts.registrations import (
    cache_decorator,
    compile_decorator,
    custom_op_decorator,
    is_property,
    registered_function,
    registered_op_function,
)
from h2dlint.facts.settings import Settings
from h2dlint.facts.summary import (
    MODULE,
    PENDING_EVIDENCE,
    CallKind,
    CallRef,
    ClassInfo,
    Fix,
    FunctionInfo,
    Marker,
    ModuleSummary,
    PlacedVariant,
    PlacementQuery,
    Site,
    Span,
)
from h2dlint.facts.syntax import child_nodes, forward_input, is_self, last_name
from h2dlint.rules import Match, Rule
from h2dlint.rules.context import Frame, FrameKind, NodeKind
from h2dlint.rules.rewrites import Rewrite

FixPlanner = Callable[[Rewrite, str], Tuple[Optional[Fix], Optional[str]]]  # the fix, or why none


def summarize(
    module: ast.Module,
    lines: Sequence[str],
    rules: Sequence[Rule],
    plan_fix: Optional[FixPlanner] = None,
    settings: Settings = Settings(),
) -> ModuleSummary:
    """`lines` are the source's lines as Python numbers them (see `positions.source_lines`).

    `plan_fix` turns a rule's `Rewrite` into a `Fix` record; without it, sites carry no fixes. `settings` says
    which heuristics of the walk are switched off (loops, one-time guards, site markers).
    """
    collector = _Collector(lines, rules, plan_fix, settings)
    collector.run(module)
    return with_capture_marks(collector.summary)


class _Collector(Walk, PropertyReads):
    def __init__(self, lines: Sequence[str], rules: Sequence[Rule], plan_fix: Optional[FixPlanner], settings: Settings):
        self._checks = {
            kind: [(rule, getattr(rule, f"check_{kind.value}")) for rule in rules if kind in rule.looks_at]
            for kind in NodeKind
        }
        self._call_checks = sorted(self._checks[NodeKind.CALL], key=lambda check: check[0].reuses_call_matches)
        kinds = frozenset(kind for kind, checks in self._checks.items() if checks)
        super().__init__(lines, kinds, bool(rules), settings)
        self.summary = ModuleSummary()
        self._plan_fix = plan_fix
        self._registered_ops: List[Tuple[str, str, str]] = []  # (registering scope, function name, how)
        self._start_property_reads()
        self._has_markers = may_hold_markers(self._source())

    def run(self, module: ast.Module) -> None:
        self._walk_module(module)
        self._add_registered_custom_ops()
        self._add_property_reads()
        placements = self.context.placements or self.module_placements(module)
        if placements is not None:
            self.summary.attribute_names, self.summary.filled_records = placements.attribute_names()
        fields = placements.multimodal_fields() if placements is not None else declared_fields(module, self._source())
        self.summary.multimodal_fields = {name: kept for name, (_, kept) in fields.items()}

    # --- scopes -------------------------------------------------------------------------------------------

    def _record_class(self, node: ast.ClassDef, qualname: str) -> None:
        bases = tuple(last_name(base) for base in node.bases)
        marker = self._header_marker(node)
        self.summary.classes[qualname] = ClassInfo(qualname, tuple(b for b in bases if b), marker)

    def _record_function(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef], qualname: str) -> None:
        enclosing, owner = self._frames[-1], self._owner()
        method_class = enclosing.qualname if enclosing.kind is FrameKind.CLASS else None
        self.summary.functions[qualname] = FunctionInfo(
            qualname=qualname,
            name=node.name,
            line=node.lineno,
            class_qualname=method_class,
            parent=owner if owner != MODULE else None,
            marker=self._header_marker(node),
            cache_decorator=cache_decorator(node.decorator_list),
            end_line=node.end_lineno or node.lineno,
            returns=written_type(node.returns) if node.returns is not None else returned_class(node, method_class),
            custom_op=custom_op_decorator(node.decorator_list),
            compiled_by=compile_decorator(node.decorator_list, self._names),
            interface=self._declares_interface(node, enclosing),
            error_path=always_raises(node),
            is_property=is_property(node.decorator_list),
            first_input=forward_input(node) if method_class else None,
        )

    def _declares_interface(self, node: ast.FunctionDef | ast.AsyncFunctionDef, enclosing: Frame) -> bool:
        return enclosing.kind is FrameKind.CLASS and declares_interface(node, self._class_bases(enclosing.qualname))

    def _class_bases(self, qualname: str) -> Tuple[str, ...]:
        cls = self.summary.classes.get(qualname)
        return cls.bases if cls is not None else ()

    # --- imports, for resolving calls across the files of a project ----------------------------------------

    def _visit_import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname is not None:
                self._import(alias.asname, alias.name)
            else:
                top = alias.name.split(".")[0]
                self._import(top, top)

    def _visit_import_from(self, node: ast.ImportFrom) -> None:
        base = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                self.summary.star_imports.append(base)
            else:
                joined = f"{base}.{alias.name}" if node.module else f"{base}{alias.name}"
                self._import(alias.asname or alias.name, joined)

    def _import(self, name: str, target: str) -> None:
        self.summary.imports[name] = target
        frame = self._frames[-1]
        if frame.kind is FrameKind.FUNCTION:
            self.summary.scoped_imports.setdefault(frame.qualname, {})[name] = target

    # --- the classes of instance attributes, for resolving `self.pool.alloc()` across files ----------------

    def _visit_assign(self, node: ast.Assign) -> None:
        if len(node.targets) > 1 or not isinstance(node.targets[0], ast.Name):  # most assignments bind one name
            self.summary.stored_attributes.update(stored_attributes(node.targets))
        elif self._frames[-1].kind is FrameKind.CLASS:
            self._declare_field(node.targets[0].id)
        if len(node.targets) == 1:
            self._record_attribute_type(node.targets[0], self._value_type(node.value))
            record_table(self.summary.tables, node.targets[0], node.value)
            self._record_method_aliases(node.targets[0], node.value)
        self.context.assigning, self.context.assigned = node.targets, node.value
        self._visit_all(child_nodes(node))
        self.context.assigning, self.context.assigned = (), None

    def _visit_annotated_assign(self, node: ast.AnnAssign) -> None:
        self.summary.stored_attributes.update(stored_attributes([node.target]))
        written = written_type(node.annotation)
        frame = self._frames[-1]
        if frame.kind is FrameKind.CLASS and isinstance(node.target, ast.Name):
            self._declare_field(node.target.id)
        if frame.kind is FrameKind.CLASS and isinstance(node.target, ast.Name) and written:
            self._add_attribute_type(frame.qualname, node.target.id, written)  # a class-body / dataclass field
        else:
            self._record_attribute_type(node.target, written)
        self._visit_all(child_nodes(node))

    def _value_type(self, value: ast.expr) -> Optional[str]:
        """The class `value` is an instance of, as written: `Pool(...)`, or a local of known class."""
        if isinstance(value, ast.Call):
            return call_result(value)
        written = self._frames[-1].types.get(value.id) if isinstance(value, ast.Name) else None
        return written if written is not None and not is_self_alias(written) else None

    def _record_attribute_type(self, target: ast.expr, written: Optional[str]) -> None:
        """`self.x = ...` in a method: `x` may hold a `written`."""
        frame = self._frames[-1]
        if written and frame.method_of is not None and isinstance(target, ast.Attribute) and is_self(target.value):
            self._add_attribute_type(frame.method_of, target.attr, written)

    def _record_method_aliases(self, target: ast.expr, value: ast.expr) -> None:
        """`self.update = self.update_sliding_window` in a method: calls of `update` reach that method."""
        cls = self._frames[-1].method_of
        for attribute, method in method_aliases(target, value) if cls is not None else ():
            known = self.summary.method_aliases.setdefault(cls, {})  # type: ignore[arg-type]
            if method not in known.get(attribute, ()):
                known[attribute] = known.get(attribute, ()) + (method,)

    def _add_attribute_type(self, cls: str, attribute: str, written: str) -> None:
        known = self.summary.attribute_types.setdefault(cls, {})
        if written not in known.get(attribute, ()):
            known[attribute] = known.get(attribute, ()) + (written,)

    # --- calls --------------------------------------------------------------------------------------------

    def _visit_call(self, node: ast.Call) -> None:
        self._record_call_ref(node)
        called = last_name(node.func)
        if called:
            self.summary.called_names.add(called)
            if called == REPLACE:
                self.summary.stored_attributes.update(k.arg for k in node.keywords if k.arg is not None)
        self._record_custom_op_registration(node)
        matches = self.context.call_matches = {}
        for rule, check in self._call_checks:
            if self._kept_on_purpose(rule):
                continue
            found = check(node, self.context)
            if found is not None:
                self._record_site(rule, found)
            if self.context.asked:
                self._record_pending(rule, check, node, found)
            else:
                matches[rule.code] = found
        self.context.call_matches = {}
        self._call_func = node.func  # an attribute there is called, not read
        self._visit(node.func)
        self._visit_all(_arguments_in_source_order(node))

    def _check(self, kind: NodeKind, node: ast.AST) -> None:
        for rule, check in self._checks[kind]:
            if self._kept_on_purpose(rule):
                continue
            found = check(node, self.context)
            if found is not None:
                self._record_site(rule, found)
            if self.context.asked:
                self._record_pending(rule, check, node, found)

    def _kept_on_purpose(self, rule: Rule) -> bool:
        """Whether `rule` stays quiet here: inside a `sync-allowed-contexts` block the project keeps syncs."""
        return rule.quiet_where_syncs_allowed and bool(self.context.sync_allowed)

    def _record_pending(self, rule: Rule, check: Callable[..., Optional[Match]], node: ast.AST, found: Any) -> None:
        """A rule found nothing at `node` while placements there were pending on questions for the project:
        when the rule's verdict hangs on one of them (the others may ask of a config value, not the tensor),
        record what it reports for each answer, as a site the project resolves (`project.placement_links`)."""
        asked = sorted(self.context.asked, key=repr) if found is None else []
        self.context.asked.clear()
        if self.context.placements is None or not 0 < len(asked) <= _MAX_QUESTIONS:
            return
        deciding = [(query, tried) for query in asked if (tried := self._answers(check, node, query))[1] is not None]
        if len(deciding) == 1:
            query, (variants, first) = deciding[0]
            self._record_site(rule, replace(first, rewrite=None), query, variants)  # type: ignore[arg-type]

    def _answers(
        self, check: Callable[..., Optional[Match]], node: ast.AST, query: PlacementQuery
    ) -> Tuple[Tuple[PlacedVariant, ...], Optional[Match]]:
        """What the rule reports at `node` for each answer to `query`, and its first match (None: none)."""
        placements = self.context.placements
        matches, self.context.call_matches = self.context.call_matches, {}  # each verdict worked out again
        variants, first = [], None
        for place in _ANSWERS:
            answer = UNKNOWN if place is Place.UNKNOWN else Placement(place, PENDING_EVIDENCE)
            placements.assume(query, answer)  # type: ignore[union-attr]
            match = check(node, self.context)
            self.context.asked.clear()
            if match is not None:
                variants.append(PlacedVariant(place.value, match.problem, match.remedy, match.unfixable,
                                              match.placement))
                first = first or match
        placements.assume(None)  # type: ignore[union-attr]
        self.context.call_matches = matches  # the verdicts at this call under no assumption
        return tuple(variants), first

    def _record_site(
        self, rule: Rule, found: Match, query: Optional[PlacementQuery] = None, variants: Tuple[PlacedVariant, ...] = ()
    ) -> None:
        span = span_of(found.node, self._lines)
        fix, unfixable = self._fix(found)
        loops = self._frames[-1].loops
        self.summary.sites.append(
            Site(
                code=rule.code,
                problem=found.problem,
                remedy=found.remedy,
                span=span,
                function=self._owner(),
                loop=loops[-1] if loops and self._enabled("hot-in-loop") else None,
                marked_cold=self._marked_cold(span),
                in_graph_capture=bool(self._captures),
                capture=_capture_reason(self._captures),
                one_time=self.context.one_time,
                per_miss=self.context.per_miss,
                multimodal_branch=self.context.multimodal_branch,
                borrowed_device=borrowed_device(found.node, self.context.names.value_at),
                fix=fix,
                unfixable=unfixable,
                placement=found.placement,
                query=query,
                variants=variants,
            )
        )

    def _marked_cold(self, span: Span) -> bool:
        if not self._has_markers:
            return False
        return find_marker(self._lines, span.row, span.end_row) is Marker.COLD and self._enabled("cold-marker")

    def _header_marker(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]) -> Optional[Marker]:
        """The marker comment of a `def` or `class` header; none where the file has no marker at all, without
        scanning each header for its end."""
        return find_marker(self._lines, node.lineno, header_end(node, self._lines)) if self._has_markers else None

    def _fix(self, found: Match) -> Tuple[Optional[Fix], Optional[str]]:
        if found.rewrite is None or self._plan_fix is None or any(self._captures):
            # A pinned copy captured into a CUDA graph would read memory the graph does not own.
            return None, found.unfixable
        return self._plan_fix(found.rewrite, self.context.stream_work())

    def _record_call_ref(self, node: ast.Call) -> None:
        table = table_called(node.func)
        ref = (CallKind.TABLE, table, None) if table is not None else call_target(node.func)
        if ref is None:
            return
        kind, name, owner = ref
        receiver_of = receiver(node.func, self._frames[-1].types) if kind in _TYPED_RECEIVER_KINDS else None
        self.summary.calls.append(self._call_ref(kind, name, node.lineno, owner, receiver_of))
        for built in class_aliases(node.func, self.context.names.value_at) if kind is CallKind.NAME else ():
            self.summary.calls.append(self._call_ref(kind, built, node.lineno, None, None))

    def _call_ref(
        self, kind: CallKind, name: str, line: int, owner: Optional[str], receiver_of: Optional[Tuple[str, ...]],
        reads_attribute: bool = False,
    ) -> CallRef:
        """A call of `name` at `line` from the function being walked, with the loops and guards around it."""
        loops = self._frames[-1].loops
        return CallRef(
            caller=self._owner(),
            kind=kind,
            name=name,
            owner=owner,
            line=line,
            loop_line=loops[-1][1] if loops else None,
            loop_kind=loops[-1][0] if loops else None,
            one_time=self.context.one_time,
            per_miss=self.context.per_miss,
            multimodal_branch=self.context.multimodal_branch,
            capture_line=self._captures[0] if self._captures else None,
            receiver=receiver_of,
            reads_attribute=reads_attribute,
        )

    def _record_custom_op_registration(self, node: ast.Call) -> None:
        registered = registered_op_function(node)
        if registered is not None:
            how = f"`{ast.unparse(node.func)}(...)` at line {node.lineno}"
            self._registered_ops.append((self._owner(), registered, how))

    def _add_registered_custom_ops(self) -> None:
        """Record the functions registered by calls (`direct_register_custom_op(op_func=f)`, often after `f`)
        as custom ops: `f` nested in the registering function, or else defined at module level."""
        functions = self.summary.functions
        for owner, name, how in self._registered_ops:
            function = registered_function(functions, owner, name)
            if function is not None and function.custom_op is None:
                functions[function.qualname] = replace(function, custom_op=how)


# The answers a pending placement may get, each tried in turn (`_record_pending`).
_MAX_QUESTIONS = 4  # questions tried one by one at a node: each costs the rule's check once per answer
# What the project may answer a pending question with; UNKNOWN when no file of it knows (or it lies outside the
# project): the verdict then is the one with that one piece of evidence missing, not none at all.
_ANSWERS = (Place.PAGEABLE, Place.PINNED, Place.HOST, Place.DEVICE, Place.UNKNOWN)
_TYPED_RECEIVER_KINDS = (CallKind.ATTR, CallKind.METHOD)  # calls whose receiver's class may be known


def _capture_reason(captures: Sequence[int]) -> Optional[str]:
    return f"inside `with torch.cuda.graph(...)` at line {captures[0]}" if captures else None


def _arguments_in_source_order(node: ast.Call) -> List[ast.AST]:
    # `f(a, k=1, *rest)`: a starred argument may follow a keyword.
    if node.keywords and any(isinstance(arg, ast.Starred) for arg in node.args):
        return sorted([*node.args, *node.keywords], key=lambda n: (n.lineno, n.col_offset))  # type: ignore
    return [*node.args, *node.keywords]


_Collector.HANDLERS = {
    **WALK_HANDLERS,
    ast.Call: _Collector._visit_call,
    ast.Attribute: PropertyReads._visit_attribute,
    ast.Assign: _Collector._visit_assign,
    ast.AnnAssign: _Collector._visit_annotated_assign,
    ast.Import: _Collector._visit_import,
    ast.ImportFrom: _Collector._visit_import_from,
}  # type: ignore[dict-item]

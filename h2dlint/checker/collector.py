"""One walk over an `ast` tree that builds a `ModuleSummary`: functions, calls between them, and rule matches.

The walk visits children in source order (where `ast`'s field order differs: decorators, call arguments,
dict items, conditional expressions), so calls and sites are recorded in the order they are written.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar, Union

from h2dlint.facts.constructs import accelerator_attributes, stream_work_in
from h2dlint.facts.positions import span_of
from h2dlint.facts.scopes import Bindings, NameResolver, class_bindings, function_bindings, module_bindings
from h2dlint.facts.summary import MODULE, CallRef, ClassInfo, Fix, FunctionInfo, ModuleSummary, Site
from h2dlint.facts.syntax import child_nodes
from h2dlint.rules import Match, Rule
from h2dlint.rules.rewrites import Rewrite

T = TypeVar("T")

FixPlanner = Callable[[Rewrite, str], Tuple[Optional[Fix], Optional[str]]]  # the fix, or why none

MARKER = re.compile(r"#\s*h2dlint:\s*(hot|cold)\b")

_MAX_RECEIVER_PATH = 3  # attributes followed from the root: `self.runner.backend.plan()` follows 2

_GRAPH_CAPTURE = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})

# Decorators that run a function's body once per distinct argument: a build cached this way is one-time.
_CACHE_DECORATORS = frozenset({"cache", "lru_cache", "cached_property", "cached"})

# Registrations of a function as a torch custom op, by the registering decorator's or function's name:
# `@torch.library.custom_op`, sglang's `@register_custom_op`, vllm's `direct_register_custom_op(op_func=f)`.
_CUSTOM_OP_REGISTRATION = re.compile(r"(custom_op|^(direct_)?register(_\w+)?_op)$")

_Scope = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]
_Comprehension = Union[ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp]


def summarize(
    module: ast.Module, lines: Sequence[str], rules: Sequence[Rule], plan_fix: Optional[FixPlanner] = None
) -> ModuleSummary:
    """`lines` are the source's lines as Python numbers them (see `positions.source_lines`).

    `plan_fix` turns a rule's `Rewrite` into a `Fix` record; without it, sites carry no fixes.
    """
    collector = _Collector(lines, rules, plan_fix)
    collector.run(module)
    return collector.summary


def find_marker(lines: Sequence[str], first: int, last: int) -> Optional[str]:
    """The `# h2dlint: hot|cold` marker on 1-based lines first..last, if any."""
    for line in lines[first - 1 : last]:
        found = MARKER.search(line)
        if found:
            return found.group(1)
    return None


@dataclass
class _Frame:
    kind: str  # "module", "class" or "function"
    qualname: str
    loops: List[Tuple[str, int]] = field(default_factory=list)
    node: Optional[ast.AST] = None  # the function, for frames of kind "function"
    stream_work: Optional[str] = None  # memo of `stream_work_in(node)`; "" when there is none
    types: Dict[str, str] = field(default_factory=dict)  # locals of known class (see `_local_types`)
    method_of: Optional[str] = None  # the class, for methods


class _Collector:
    def __init__(self, lines: Sequence[str], rules: Sequence[Rule], plan_fix: Optional[FixPlanner]):
        self.summary = ModuleSummary()
        self._plan_fix = plan_fix
        self._lines = lines
        self._rules = rules
        self._names = NameResolver()
        self._frames: List[_Frame] = []
        self._captures: List[int] = []  # the lines of the enclosing `with torch.cuda.graph(...)` blocks
        self._one_time = 0  # how many cached-build guards (`if self._x is None:`) enclose the current node
        self._walrus = any(":=" in line for line in lines)  # without `:=`, only statements bind names
        self._registered_ops: List[Tuple[str, str, str]] = []  # (registering scope, function name, how)

    def run(self, module: ast.Module) -> None:
        self._once_flags = _once(lambda: once_flags(module))
        self._names.push(module_bindings(module, self._walrus) if self._rules else Bindings())
        self._frames.append(_Frame("module", ""))
        self._visit_all(module.body)
        self._mark_custom_ops()

    # --- the walk -----------------------------------------------------------------------------------------

    def _visit(self, node: ast.AST) -> None:
        handler = _HANDLERS.get(type(node))
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

    def _visit_in_region(self, nodes: Iterable[ast.AST], region: Tuple[str, int]) -> None:
        """Visit `nodes` as code that runs once per iteration of a loop or comprehension."""
        loops = self._frames[-1].loops
        loops.append(region)
        self._visit_all(nodes)
        loops.pop()

    # --- scopes -------------------------------------------------------------------------------------------

    def _visit_class(self, node: ast.ClassDef) -> None:
        qualname = self._child_qualname(node.name)
        bases = tuple(_last_name(base) for base in node.bases)
        marker = find_marker(self._lines, node.lineno, self._header_end(node))
        self.summary.classes[qualname] = ClassInfo(qualname, tuple(b for b in bases if b), marker)
        bindings = class_bindings(node, self._walrus) if self._rules else Bindings()
        bindings.accelerator_attributes = _once(lambda: accelerator_attributes(node, self._names))
        self._names.push(bindings)
        self._frames.append(_Frame("class", qualname, loops=list(self._frames[-1].loops)))
        self._visit_all(node.decorator_list)
        self._visit_all(node.bases)
        self._visit_all(node.keywords)
        self._visit_all(node.body)
        self._leave_scope()

    def _visit_function(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> None:
        qualname = self._child_qualname(node.name)
        enclosing, owner = self._frames[-1], self._owner()
        self.summary.functions[qualname] = FunctionInfo(
            qualname=qualname,
            name=node.name,
            line=node.lineno,
            class_qualname=enclosing.qualname if enclosing.kind == "class" else None,
            parent=owner if owner != MODULE else None,
            marker=find_marker(self._lines, node.lineno, self._header_end(node)),
            cache_decorator=_cache_decorator(node.decorator_list),
            end_line=node.end_lineno or node.lineno,
            returns=_written_type(node.returns) if node.returns is not None else None,
            custom_op=_custom_op_decorator(node.decorator_list),
            compiled_by=_compile_decorator(node.decorator_list, self._names),
        )
        bindings = function_bindings(node, self._walrus)
        method_of = enclosing.qualname if enclosing.kind == "class" else None
        self._names.push(bindings)
        types = _local_types(node, bindings)
        self._frames.append(_Frame("function", qualname, node=node, types=types, method_of=method_of))
        # Decorators, defaults and annotations count as the function's own code, as they always have.
        self._visit_all(node.decorator_list)
        self._visit_arguments(node.args)
        self._visit_optional(node.returns)
        self._visit_body(node.body)
        self._leave_scope()

    def _visit_body(self, body: Sequence[ast.stmt]) -> None:
        """A function's statements; those after an early return of a lazy build are one-time."""
        for index, statement in enumerate(body):
            self._visit(statement)
            if _is_lazy_build_return(statement, body[index + 1 :], self._names.value_at):
                self._one_time += 1
                self._visit_all(body[index + 1 :])
                self._one_time -= 1
                return

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
        if frame.kind == "module":
            return name
        if frame.kind == "class":
            return f"{frame.qualname}.{name}"
        return f"{frame.qualname}.<locals>.{name}"

    def _owner(self) -> str:
        """The function whose body the current node runs in, or MODULE."""
        for frame in reversed(self._frames):
            if frame.kind == "function":
                return frame.qualname
        return MODULE

    # --- loops: only the parts that run once per iteration ---------------------------------------------------

    def _visit_for(self, node: Union[ast.For, ast.AsyncFor]) -> None:
        self._visit(node.target)
        self._visit(node.iter)
        if _is_fixed_iteration(node.iter, self._names):
            self._visit_all(node.body)
        else:
            self._visit_in_region(node.body, ("loop", node.lineno))
        self._visit_all(node.orelse)

    def _visit_while(self, node: ast.While) -> None:
        self._visit_in_region([node.test, *node.body], ("loop", node.lineno))
        self._visit_all(node.orelse)

    def _visit_comprehension(self, node: _Comprehension) -> None:
        """The element and the filters run per item; the outermost iterable runs once."""
        # A generator's parentheses may be a call's (`sum(x for x in y)`), so it is placed at its element.
        line = node.elt.lineno if isinstance(node, ast.GeneratorExp) else node.lineno
        region = ("comprehension", line)
        first, *inner = node.generators
        elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        if not inner and _is_fixed_iteration(first.iter, self._names):
            self._visit_all([*elements, first.target, first.iter, *first.ifs])
            return
        self._visit_in_region(elements, region)
        self._visit(first.target)
        self._visit(first.iter)
        self._visit_in_region([*first.ifs, *inner], region)

    # --- CUDA-graph capture blocks -------------------------------------------------------------------------

    def _visit_with(self, node: Union[ast.With, ast.AsyncWith]) -> None:
        self._visit_all(node.items)
        if not any(self._is_graph_capture(item.context_expr) for item in node.items):
            self._visit_all(node.body)
            return
        self._captures.append(node.lineno)
        self._visit_all(node.body)
        self._captures.pop()

    def _is_graph_capture(self, expr: ast.expr) -> bool:
        return isinstance(expr, ast.Call) and self._names.qualify(expr.func) in _GRAPH_CAPTURE

    # --- one-time cached builds: `if self._x is None:` / `if not hasattr(self, "_x"):` ---------------------------

    def _visit_if(self, node: ast.If) -> None:
        self._visit(node.test)
        tested_value = self._value_read_by(node.test)
        guard = _is_cached_build_guard(node.test, node.body, tested_value) or self._is_once_flag_guard(node.test)
        self._one_time += guard
        self._visit_all(node.body)
        self._one_time -= guard
        self._visit_all(node.orelse)

    def _is_once_flag_guard(self, test: ast.expr) -> bool:
        """`if not X.done:` where this module only ever sets `done` to True (outside `__init__` and class
        bodies, which give the default): the block runs until the flag is set, once."""
        if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
            return False
        flag = test.operand
        is_attribute = isinstance(flag, ast.Attribute) and isinstance(flag.value, ast.Name)
        return is_attribute and flag.attr in self._once_flags()  # type: ignore[union-attr]

    def _value_read_by(self, test: ast.expr) -> Optional[ast.expr]:
        """What the local tested by `if t is None:` holds there, when known (`t = self._t` before it)."""
        is_none_test = isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
        if is_none_test and isinstance(test.left, ast.Name):  # type: ignore[attr-defined]
            return self._names.value_at(test.left)  # type: ignore[attr-defined]
        return None

    # --- imports, for resolving calls across the files of a project ----------------------------------------

    def _visit_import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname is not None:
                self.summary.imports[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                self.summary.imports[top] = top

    def _visit_import_from(self, node: ast.ImportFrom) -> None:
        base = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                self.summary.star_imports.append(base)
            else:
                joined = f"{base}.{alias.name}" if node.module else f"{base}{alias.name}"
                self.summary.imports[alias.asname or alias.name] = joined

    # --- the classes of instance attributes, for resolving `self.pool.alloc()` across files ----------------

    def _visit_assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1:
            self._record_attribute_type(node.targets[0], self._value_type(node.value))
        self._visit_all(child_nodes(node))

    def _visit_annotated_assign(self, node: ast.AnnAssign) -> None:
        written = _written_type(node.annotation)
        frame = self._frames[-1]
        if frame.kind == "class" and isinstance(node.target, ast.Name) and written:
            self._add_attribute_type(frame.qualname, node.target.id, written)  # a class-body / dataclass field
        else:
            self._record_attribute_type(node.target, written)
        self._visit_all(child_nodes(node))

    def _value_type(self, value: ast.expr) -> Optional[str]:
        """The class `value` is an instance of, as written: `Pool(...)`, or a local of known class."""
        if isinstance(value, ast.Call):
            return _call_result(value)
        if isinstance(value, ast.Name):
            return self._frames[-1].types.get(value.id)
        return None

    def _record_attribute_type(self, target: ast.expr, written: Optional[str]) -> None:
        """`self.x = ...` in a method: `x` may hold a `written`."""
        frame = self._frames[-1]
        if written and frame.method_of is not None and isinstance(target, ast.Attribute) and _is_self(target.value):
            self._add_attribute_type(frame.method_of, target.attr, written)

    def _add_attribute_type(self, cls: str, attribute: str, written: str) -> None:
        known = self.summary.attribute_types.setdefault(cls, {})
        if written not in known.get(attribute, ()):
            known[attribute] = known.get(attribute, ()) + (written,)

    # --- expressions whose fields are not in source order ----------------------------------------------------

    def _visit_dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values):
            self._visit_optional(key)  # None for `**mapping`
            self._visit(value)

    def _visit_if_expression(self, node: ast.IfExp) -> None:
        self._visit(node.body)
        self._visit(node.test)
        self._visit(node.orelse)

    # --- calls --------------------------------------------------------------------------------------------

    def _visit_call(self, node: ast.Call) -> None:
        self._record_call_ref(node)
        self._record_custom_op_registration(node)
        for rule in self._rules:
            found = rule.match(node, self._names)
            if found is not None:
                self._record_site(rule, found)
        self._visit(node.func)
        self._visit_all(_arguments_in_source_order(node))

    def _record_site(self, rule: Rule, found: Match) -> None:
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
                loop=loops[-1] if loops else None,
                marked_cold=find_marker(self._lines, span.row, span.end_row) == "cold",
                in_graph_capture=bool(self._captures),
                capture=_capture_reason(self._captures),
                one_time=self._one_time > 0,
                fix=fix,
                unfixable=unfixable,
            )
        )

    def _fix(self, found: Match) -> Tuple[Optional[Fix], Optional[str]]:
        if found.rewrite is None or self._plan_fix is None or any(self._captures):
            # A pinned copy captured into a CUDA graph would read memory the graph does not own.
            return None, found.unfixable
        return self._plan_fix(found.rewrite, self._stream_work())

    def _stream_work(self) -> str:
        frame = self._frames[-1]
        if frame.node is None:
            return ""
        if frame.stream_work is None:
            frame.stream_work = stream_work_in(frame.node, self._names) or ""
        return frame.stream_work

    def _record_call_ref(self, node: ast.Call) -> None:
        ref = _call_target(node.func)
        if ref is None:
            return
        kind, name, owner = ref
        frame = self._frames[-1]
        loops = frame.loops
        call = CallRef(
            caller=self._owner(),
            kind=kind,
            name=name,
            owner=owner,
            line=node.lineno,
            loop_line=loops[-1][1] if loops else None,
            one_time=self._one_time > 0,
            capture_line=self._captures[0] if self._captures else None,
            receiver=_receiver(node.func, frame.types) if kind in ("attr", "method") else None,
        )
        self.summary.calls.append(call)

    def _record_custom_op_registration(self, node: ast.Call) -> None:
        registered = _registered_op_function(node)
        if registered is not None:
            how = f"`{ast.unparse(node.func)}(...)` at line {node.lineno}"
            self._registered_ops.append((self._owner(), registered, how))

    def _mark_custom_ops(self) -> None:
        """Mark the functions registered by calls (`direct_register_custom_op(op_func=f)`) as custom ops: `f`
        nested in the registering function, or else defined at module level."""
        functions = self.summary.functions
        for owner, name, how in self._registered_ops:
            nested = functions.get(f"{owner}.<locals>.{name}")
            top = functions.get(name)
            function = nested or (top if top is not None and top.class_qualname is None else None)
            if function is not None and function.custom_op is None:
                function.custom_op = how

    # --- positions ----------------------------------------------------------------------------------------

    def _header_end(self, node: _Scope) -> int:
        """The last line of a `def`/`class` header (the line of its `:`), where a marker comment may sit."""
        row, column = _header_tail_start(node)
        for index in range(row, min(node.body[0].lineno, len(self._lines)) + 1):
            line = self._lines[index - 1]
            code = line.encode("utf-8")[column:].decode("utf-8", errors="replace") if index == row else line
            if ":" in code.split("#", 1)[0]:
                return index
        return node.body[0].lineno


def _header_tail_start(node: _Scope) -> Tuple[int, int]:
    """Where the last part of a header that may contain `:` or `#` of its own ends (row, byte offset):
    after that, only `)`, `->`, `:` and comments remain."""
    if isinstance(node, ast.ClassDef):
        parts: List[ast.AST] = [*node.bases, *(k.value for k in node.keywords)]
    else:
        args = node.args
        parts = [
            *(a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.annotation),
            *args.defaults,
            *(d for d in args.kw_defaults if d is not None),
            *(a.annotation for a in (args.vararg, args.kwarg) if a is not None and a.annotation),
            *([node.returns] if node.returns is not None else []),
        ]
    if not parts:
        return node.lineno, node.col_offset
    last = max(parts, key=lambda p: (p.end_lineno, p.end_col_offset))  # type: ignore[attr-defined]
    return last.end_lineno, last.end_col_offset  # type: ignore[attr-defined]


def _is_fixed_iteration(iterable: ast.expr, names: NameResolver) -> bool:
    """Whether a loop over `iterable` repeats steps written in the source rather than running once per item
    of data: a literal tuple, list or set (`for v in (hosts, gpus, sizes): ...`), or a table of constants,
    written in place (`[1, 2, 4] + list(range(8, 256, 8))`) or in a local the function assigns once
    (`sizes = [2048, 4096]`). Such a loop does not make its body per-step: setup code walks grids of sizes
    this way (autotuning, warmup inputs), while per-step code loops over requests, tokens or layers, whose
    number is data. A bare `range(n)` still counts as a loop: it is how code repeats an action n times."""
    if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)) and not any(
        isinstance(element, ast.Starred) for element in iterable.elts
    ):
        return True
    if isinstance(iterable, ast.Name):
        value = names.local_value(iterable.id)
        return value is not None and not _is_counted_range(value) and _is_constant_collection(value)
    return isinstance(iterable, ast.BinOp) and _is_constant_collection(iterable)


def _is_counted_range(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "range"


_CONSTANT_COLLECTION_CALLS = frozenset({"range", "list", "tuple", "sorted", "reversed"})


def _is_constant_collection(expr: ast.expr, depth: int = 0) -> bool:
    """`expr` is built from number and string literals only: literals, `+`/`*` of them, and `range`/`list`
    (and the like) of them."""
    if depth > 8:
        return False
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, (int, float, str)) and not isinstance(expr.value, bool)
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_constant_collection(e, depth + 1) for e in expr.elts)
    if isinstance(expr, ast.UnaryOp):
        return _is_constant_collection(expr.operand, depth + 1)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Mult, ast.Sub, ast.FloorDiv)):
        return _is_constant_collection(expr.left, depth + 1) and _is_constant_collection(expr.right, depth + 1)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and not expr.keywords:
        return expr.func.id in _CONSTANT_COLLECTION_CALLS and bool(expr.args) and all(
            _is_constant_collection(a, depth + 1) for a in expr.args
        )
    return False


def _arguments_in_source_order(node: ast.Call) -> List[ast.AST]:
    # `f(a, k=1, *rest)`: a starred argument may follow a keyword.
    if node.keywords and any(isinstance(arg, ast.Starred) for arg in node.args):
        return sorted([*node.args, *node.keywords], key=lambda n: (n.lineno, n.col_offset))  # type: ignore
    return [*node.args, *node.keywords]


def _call_target(func: ast.expr) -> Optional[Tuple[str, str, Optional[str]]]:
    """How a call may name a function of this module: (kind, name, owner class)."""
    if isinstance(func, ast.Name):
        return ("name", func.id, None)
    if not isinstance(func, ast.Attribute):
        return None
    receiver, attr = func.value, func.attr
    if isinstance(receiver, ast.Name):
        if receiver.id in ("self", "cls"):
            return ("self", attr, None)
        return ("attr", attr, receiver.id)
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
        return ("super", attr, None)
    return ("method", attr, None)


def _receiver(func: ast.expr, types: Dict[str, str]) -> Optional[Tuple[str, ...]]:
    """What is known of the object a method is called on (see `CallRef.receiver`)."""
    path: List[str] = []
    node = func.value if isinstance(func, ast.Attribute) else None
    while isinstance(node, ast.Attribute) and len(path) < _MAX_RECEIVER_PATH:
        path.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    root = "self" if _is_self(node) else types.get(node.id)
    if root is None or (root == "self" and not path):
        return None
    return (root, *reversed(path))


def _local_types(node: Union[ast.FunctionDef, ast.AsyncFunctionDef], bindings: Bindings) -> Dict[str, str]:
    """Names of a function that hold an instance of one class, as written: parameters annotated with it
    (`batch: Batch`), locals bound once, from a call (`pool = Pool(...)`, `pool = make_pool()`), locals
    declared with it (`relay: Relay = batch.spec_info`, however often rebound), and the variable of a loop
    over a collection annotated with it (`for entry in entries:` with `entries: List[Row]`)."""
    args = node.args
    annotations = {
        arg.arg: arg.annotation
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs)
        if arg.annotation is not None and arg.arg in bindings.stable_parameters
    }
    annotations.update(bindings.declared)
    types = {name: written for name, annotation in annotations.items() if (written := _written_type(annotation))}
    for name, value in bindings.single_values.items():
        written = _call_result(value) if isinstance(value, ast.Call) and name not in bindings.declared else None
        if written:
            types[name] = written
    for name, iterable in bindings.loop_iterables.items():
        collection = annotations.get(iterable.id) if isinstance(iterable, ast.Name) else None
        written = _element_type(collection) if collection is not None else None
        if written:
            types[name] = written
    return types


# Annotations of a collection whose elements are all of the one type they name (`List[Row]`, `tuple[Row, ...]`).
_HOMOGENEOUS_COLLECTIONS = frozenset(
    "List list Sequence MutableSequence Iterable Iterator Collection Set set FrozenSet frozenset Deque deque".split()
)


def _element_type(annotation: ast.expr) -> Optional[str]:
    """The one class the elements of an annotated collection are: `Row` for `List[Row]`, `Sequence["Row"]`,
    `tuple[Row, ...]`, also inside `Optional[...]` or `... | None`; None for anything else."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [side for side in (annotation.left, annotation.right) if not _is_none(side)]
        return _element_type(sides[0]) if len(sides) == 1 else None
    if not isinstance(annotation, ast.Subscript):
        return None
    kind, element = _last_name(annotation.value), annotation.slice
    if kind == "Optional":
        return _element_type(element)
    if kind in ("Tuple", "tuple") and isinstance(element, ast.Tuple) and len(element.elts) == 2:
        item, ellipsis = element.elts
        is_variadic = isinstance(ellipsis, ast.Constant) and ellipsis.value is Ellipsis
        return _written_type(item) if is_variadic else None
    return _written_type(element) if kind in _HOMOGENEOUS_COLLECTIONS else None


def _written_type(annotation: ast.expr) -> Optional[str]:
    """The one class an annotation names: `Batch`, `mod.Batch`, `"Batch"`, `Optional[Batch]`, `Batch | None`."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Subscript) and _last_name(annotation.value) == "Optional":
        return _written_type(annotation.slice)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [side for side in (annotation.left, annotation.right) if not _is_none(side)]
        return _written_type(sides[0]) if len(sides) == 1 else None
    return _dotted_name(annotation)


def _call_result(call: ast.Call) -> Optional[str]:
    """What a call returns, as written: "Pool()" for `Pool(...)`, "mod.make()" for `mod.make(...)`,
    "self.make()" for `self.make(...)`; the index keeps those that give a class (see `CallRef.receiver`)."""
    written = _dotted_name(call.func)
    if not written:
        return None
    root, _, rest = written.partition(".")
    if root in ("self", "cls"):
        return f"self.{rest}()" if rest and "." not in rest else None
    return f"{written}()"


def _dotted_name(expr: ast.expr) -> Optional[str]:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        base = _dotted_name(expr.value)
        return f"{base}.{expr.attr}" if base else None
    return None


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def once_flags(module: ast.Module) -> FrozenSet[str]:
    """Attributes that the functions of `module` set only to True, at least once (`cls.has_set_value = True`),
    apart from `__init__`, which gives the default."""
    verdicts: Dict[str, bool] = {}
    for statement in _statements(module.body):
        for attribute, value in _attribute_assignments(statement):
            is_true = isinstance(value, ast.Constant) and value.value is True
            verdicts[attribute] = verdicts.get(attribute, True) and is_true
    return frozenset(attribute for attribute, only_true in verdicts.items() if only_true)


_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case) if hasattr(ast, "match_case") else (ast.stmt, ast.excepthandler)


def _statements(body: Sequence[ast.stmt]) -> Iterator[ast.AST]:
    """Every statement in `body` and the statements nested in it (function and class bodies, branches,
    loops, handlers), except the bodies of `__init__`; assignments are statements, so no expression is
    walked."""
    stack = list(reversed(body))
    while stack:
        statement = stack.pop()
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == "__init__":
            continue
        yield statement
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            nested = getattr(statement, field, None)
            if isinstance(nested, list):  # `except` handlers and `match` cases are blocks of statements too
                stack.extend(reversed([n for n in nested if isinstance(n, _BLOCKS)]))


def _attribute_assignments(node: ast.AST) -> Iterable[Tuple[str, Optional[ast.expr]]]:
    """(attribute name, value) for each attribute `node` assigns; the value is None for an augmented
    assignment or when the target is unpacked."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Attribute):
                yield target.attr, node.value
            elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
                yield from ((n.attr, None) for n in ast.walk(target) if isinstance(n, ast.Attribute))
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Attribute):
        yield node.target.attr, node.value if isinstance(node, ast.AnnAssign) else None


def _is_cached_build_guard(test: ast.expr, body: Sequence[ast.stmt], tested_value: Optional[ast.expr] = None) -> bool:
    """`self._x is None`, `getattr(self, "_x", None) is None` or `not hasattr(self, "_x")` (also `cls.`),
    or a memo: `if t is None:` whose body stores `t` in a cache (`cache[key] = t`) or back in the attribute it
    was read from (`tested_value`: `t = self._t` before, `self._t = t` in the body), or `if key not in cache:`
    whose body fills `cache[...]`, or a cache that grows on demand (see `_grows_on_demand`)."""
    if _grows_on_demand(test, body):
        return True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _is_attribute_lookup(test.operand, "hasattr")
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotIn):
        return any(_fills(statement, test.comparators[0]) for statement in body)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)):
        return False
    if not (isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
        return False
    subject = test.left
    if isinstance(subject, ast.Attribute):
        return _is_self(subject.value)
    if isinstance(subject, ast.Name):
        return any(
            _stores_in_cache(statement, subject.id) or _stores_back(statement, subject.id, tested_value)
            for statement in body
        )
    return _is_attribute_lookup(subject, "getattr")


def _grows_on_demand(test: ast.expr, body: Sequence[ast.stmt]) -> bool:
    """`if n > self.max_size: self.max_size = n; self._rebuild()`: the guarded block raises the very bound it
    compares against, so it runs only when a new maximum arrives, not per step."""
    ordering = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
    if not any(isinstance(node, ast.Compare) and isinstance(node.ops[0], ordering) for node in ast.walk(test)):
        return False
    bounds = {node.attr for node in ast.walk(test) if isinstance(node, ast.Attribute) and _is_self(node.value)}
    return any(
        isinstance(target, ast.Attribute) and _is_self(target.value) and target.attr in bounds
        for statement in body
        if isinstance(statement, (ast.Assign, ast.AugAssign))
        for target in (statement.targets if isinstance(statement, ast.Assign) else [statement.target])
    )


def _is_lazy_build_return(
    statement: ast.stmt, rest: Sequence[ast.stmt], value_at: Callable[[ast.Name], Optional[ast.expr]]
) -> bool:
    """`if layer._wrapper is not None: return ...` followed by code that sets `layer._wrapper`: what follows
    runs once, on the first call. The guard may read a local copied from the attribute just before
    (`context = self._context` then `if context is not None: return context`). A memo lookup is the same
    once per key: `if (ptrs := _PTR_CACHE.get(key)) is not None: return ptrs` (or `if ptrs := ...:`, or
    `_PTR_CACHE[key]`) followed by code that fills `_PTR_CACHE[...]`."""
    if not (isinstance(statement, ast.If) and not statement.orelse and isinstance(statement.body[-1], ast.Return)):
        return False
    subject = _lookup_tested_for_a_value(statement.test)
    bare_name = statement.test is subject and isinstance(subject, ast.Name)
    if subject is None or (bare_name and not _returns(statement, subject)):  # type: ignore[arg-type]
        return False  # a bare `if x: return` is a memo only when it returns `x`
    looked_up = (value_at(subject) or subject) if isinstance(subject, ast.Name) else subject
    guarded, cache = _attribute_of_name(looked_up), _memo_table(looked_up)
    if guarded is None and cache is None:
        return False
    later = (node for statement in rest for node in ast.walk(statement))
    if guarded is not None:
        return any(isinstance(node, ast.Assign) and guarded in map(_attribute_of_name, node.targets) for node in later)
    return any(_fills(node, cache) for node in later)  # type: ignore[arg-type]


def _lookup_tested_for_a_value(test: ast.expr) -> Optional[ast.expr]:
    """What `test` checks holds a value: `x` for `x is not None` or a bare `x`; `d.get(k)` for
    `(x := d.get(k)) is not None` or `x := d.get(k)`."""
    if isinstance(test, ast.Compare):
        if len(test.ops) != 1 or not isinstance(test.ops[0], ast.IsNot) or not _is_none(test.comparators[0]):
            return None
        test = test.left
    if isinstance(test, ast.NamedExpr):
        return test.value
    return test if isinstance(test, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else None


def _returns(statement: ast.If, name: ast.Name) -> bool:
    last = statement.body[-1]
    return isinstance(last, ast.Return) and isinstance(last.value, ast.Name) and last.value.id == name.id


def _memo_table(lookup: ast.expr) -> Optional[ast.expr]:
    """The mapping `lookup` reads an entry of: `cache` for `cache.get(key)` or `cache[key]`."""
    if isinstance(lookup, ast.Subscript):
        return lookup.value
    is_get = isinstance(lookup, ast.Call) and isinstance(lookup.func, ast.Attribute) and lookup.func.attr == "get"
    return lookup.func.value if is_get else None  # type: ignore[union-attr]


def _attribute_of_name(target: ast.expr) -> Optional[Tuple[str, str]]:
    """("layer", "_wrapper") for `layer._wrapper`."""
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return (target.value.id, target.attr)
    return None


def _stores_in_cache(statement: ast.stmt, name: str) -> bool:
    """`cache[key] = name` (a memo table keeps what the guarded block built)."""
    return (
        isinstance(statement, ast.Assign)
        and isinstance(statement.value, ast.Name)
        and statement.value.id == name
        and any(isinstance(target, ast.Subscript) for target in statement.targets)
    )


def _stores_back(statement: ast.stmt, name: str, read_from: Optional[ast.expr]) -> bool:
    """`self._t = name`, where `name` was read from `self._t` (`read_from`)."""
    if not (isinstance(read_from, ast.Attribute) and _is_self(read_from.value)):
        return False
    return (
        isinstance(statement, ast.Assign)
        and isinstance(statement.value, ast.Name)
        and statement.value.id == name
        and _attribute_of_name(read_from) in map(_attribute_of_name, statement.targets)
    )


def _fills(statement: ast.stmt, cache: ast.expr) -> bool:
    """`cache[...] = ...`, the mapping written as in the guard (`self._tables`, `_CACHE`)."""
    return isinstance(statement, ast.Assign) and any(
        isinstance(target, ast.Subscript) and ast.dump(target.value) == ast.dump(cache)
        for target in statement.targets
    )


def _is_attribute_lookup(expr: ast.expr, function: str) -> bool:
    """`hasattr(self, ...)` / `getattr(self, ...)` (or on `cls`)."""
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == function
        and bool(expr.args)
        and _is_self(expr.args[0])
    )


def _is_self(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Name) and expr.id in ("self", "cls")


def _capture_reason(captures: Sequence[int]) -> Optional[str]:
    return f"inside `with torch.cuda.graph(...)` at line {captures[0]}" if captures else None


def _cache_decorator(decorators: Sequence[ast.expr]) -> Optional[str]:
    """The decorator, as written, that caches a function's results (`@functools.lru_cache(...)`, `@cache`)."""
    for decorator in decorators:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _last_name(target) in _CACHE_DECORATORS:
            return ast.unparse(target)
    return None


def _custom_op_decorator(decorators: Sequence[ast.expr]) -> Optional[str]:
    """The decorator, as written, that registers a function as a torch custom op (`@register_custom_op(...)`)."""
    for decorator in decorators:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _CUSTOM_OP_REGISTRATION.search(_last_name(target)):
            return f"`@{ast.unparse(target)}`"
    return None


def _compile_decorator(decorators: Sequence[ast.expr], names: NameResolver) -> Optional[str]:
    """`torch.compile` when a decorator is `@torch.compile` or `@torch.compile(...)` (however torch is imported)."""
    for decorator in decorators:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if names.qualify(target) == "torch.compile":
            return "torch.compile"
    return None


def _registered_op_function(call: ast.Call) -> Optional[str]:
    """The function name a registering call makes a custom op of: `direct_register_custom_op("op", f)` or
    `direct_register_custom_op(op_name="op", op_func=f)` give `f`."""
    name = _last_name(call.func)
    if not name.endswith("op") or not _CUSTOM_OP_REGISTRATION.search(name):  # the test first: most calls fail it
        return None
    given = [k.value for k in call.keywords if k.arg == "op_func"] or call.args[1:2]
    return given[0].id if given and isinstance(given[0], ast.Name) else None


def _once(compute: Callable[[], T]) -> Callable[[], T]:
    """`compute`, run on the first call only; later calls return its first result."""
    results: List[T] = []

    def first_result() -> T:
        if not results:
            results.append(compute())
        return results[0]

    return first_result


def _last_name(expr: ast.expr) -> str:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return ""


_HANDLERS: Dict[type, Callable[[_Collector, ast.AST], None]] = {
    ast.ClassDef: _Collector._visit_class,
    ast.FunctionDef: _Collector._visit_function,
    ast.AsyncFunctionDef: _Collector._visit_function,
    ast.For: _Collector._visit_for,
    ast.AsyncFor: _Collector._visit_for,
    ast.While: _Collector._visit_while,
    ast.ListComp: _Collector._visit_comprehension,
    ast.SetComp: _Collector._visit_comprehension,
    ast.GeneratorExp: _Collector._visit_comprehension,
    ast.DictComp: _Collector._visit_comprehension,
    ast.With: _Collector._visit_with,
    ast.AsyncWith: _Collector._visit_with,
    ast.Dict: _Collector._visit_dict,
    ast.IfExp: _Collector._visit_if_expression,
    ast.Call: _Collector._visit_call,
    ast.If: _Collector._visit_if,
    ast.Assign: _Collector._visit_assign,
    ast.AnnAssign: _Collector._visit_annotated_assign,
    ast.Import: _Collector._visit_import,
    ast.ImportFrom: _Collector._visit_import_from,
}  # type: ignore[dict-item]

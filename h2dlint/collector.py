"""One walk over a libcst tree that builds a `ModuleSummary`: functions, calls between them, and rule matches."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from h2dlint.rules import Rule
from h2dlint.scopes import NameResolver, class_bindings, function_bindings, module_bindings
from h2dlint.summary import MODULE, CallRef, ClassInfo, FunctionInfo, ModuleSummary, Site, Span

MARKER = re.compile(r"#\s*h2dlint:\s*(hot|cold)\b")

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
_GRAPH_CAPTURE = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})


def summarize(module: cst.Module, lines: Sequence[str], rules: Sequence[Rule]) -> ModuleSummary:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    collector = _Collector(wrapper.resolve(PositionProvider), lines, rules)
    module.visit(collector)
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


class _Collector(cst.CSTVisitor):
    def __init__(self, positions: Dict[cst.CSTNode, CodeRange], lines: Sequence[str], rules: Sequence[Rule]):
        self.summary = ModuleSummary()
        self._positions = positions
        self._lines = lines
        self._rules = rules
        self._names = NameResolver()
        self._frames: List[_Frame] = []
        self._loop_regions: Dict[int, Tuple[str, int]] = {}
        self._captures: List[bool] = []  # one entry per enclosing `with`: does it capture a CUDA graph?

    # --- scopes -------------------------------------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> None:
        self._names.push(module_bindings(node))
        self._frames.append(_Frame("module", ""))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        qualname = self._child_qualname(node.name.value)
        bases = tuple(_last_name(arg.value) for arg in node.bases if arg.keyword is None)
        marker = find_marker(self._lines, self._line(node), self._header_end(node))
        self.summary.classes[qualname] = ClassInfo(qualname, tuple(b for b in bases if b), marker)
        self._names.push(class_bindings(node))
        self._frames.append(_Frame("class", qualname, loops=list(self._frames[-1].loops)))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._leave_scope()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        qualname = self._child_qualname(node.name.value)
        enclosing, owner = self._frames[-1], self._owner()
        self.summary.functions[qualname] = FunctionInfo(
            qualname=qualname,
            name=node.name.value,
            line=self._line(node),
            class_qualname=enclosing.qualname if enclosing.kind == "class" else None,
            parent=owner if owner != MODULE else None,
            marker=find_marker(self._lines, self._line(node), self._header_end(node)),
        )
        self._names.push(function_bindings(node))
        self._frames.append(_Frame("function", qualname))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._leave_scope()

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

    def visit_For(self, node: cst.For) -> None:
        self._loop_regions[id(node.body)] = ("loop", self._line(node))

    def visit_While(self, node: cst.While) -> None:
        region = ("loop", self._line(node))
        self._loop_regions[id(node.test)] = region
        self._loop_regions[id(node.body)] = region

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _COMPREHENSIONS):
            self._mark_comprehension(node)
        region = self._loop_regions.get(id(node))
        if region is not None:
            self._frames[-1].loops.append(region)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        if self._loop_regions.pop(id(original_node), None) is not None:
            self._frames[-1].loops.pop()

    def _mark_comprehension(self, node: cst.BaseComp) -> None:
        region = ("comprehension", self._line(node))
        per_item: List[cst.CSTNode] = [node.key, node.value] if isinstance(node, cst.DictComp) else [node.elt]
        per_item.extend(node.for_in.ifs)
        if node.for_in.inner_for_in is not None:
            per_item.append(node.for_in.inner_for_in)
        for part in per_item:
            self._loop_regions[id(part)] = region

    # --- CUDA-graph capture blocks -------------------------------------------------------------------------

    def visit_With(self, node: cst.With) -> None:
        self._captures.append(any(self._is_graph_capture(item.item) for item in node.items))

    def leave_With(self, original_node: cst.With) -> None:
        self._captures.pop()

    def _is_graph_capture(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and self._names.qualify(expr.func) in _GRAPH_CAPTURE

    # --- calls --------------------------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        self._record_call_ref(node)
        for rule in self._rules:
            found = rule.match(node, self._names)
            if found is not None:
                self._record_site(rule, found.node, found.problem, found.remedy)

    def _record_site(self, rule: Rule, node: cst.CSTNode, problem: str, remedy: str) -> None:
        where = self._positions[node]
        span = Span(where.start.line, where.start.column + 1, where.end.line, where.end.column + 1)
        loops = self._frames[-1].loops
        self.summary.sites.append(
            Site(
                code=rule.code,
                problem=problem,
                remedy=remedy,
                span=span,
                function=self._owner(),
                loop=loops[-1] if loops else None,
                marked_cold=find_marker(self._lines, span.row, span.end_row) == "cold",
                in_graph_capture=any(self._captures),
            )
        )

    def _record_call_ref(self, node: cst.Call) -> None:
        ref = _call_target(node.func)
        if ref is None:
            return
        kind, name, owner = ref
        loops = self._frames[-1].loops
        self.summary.calls.append(
            CallRef(
                caller=self._owner(),
                kind=kind,
                name=name,
                owner=owner,
                line=self._line(node),
                loop_line=loops[-1][1] if loops else None,
            )
        )

    # --- positions ----------------------------------------------------------------------------------------

    def _line(self, node: cst.CSTNode) -> int:
        return self._positions[node].start.line

    def _header_end(self, node: cst.CSTNode) -> int:
        """The last line of a `def`/`class` header, where a trailing marker comment may sit."""
        body = node.body  # type: ignore[attr-defined]
        if isinstance(body, cst.IndentedBlock) and body.body:
            first = body.body[0]
            return self._positions[first].start.line - len(getattr(first, "leading_lines", ())) - 1
        return self._positions[body].start.line


def _call_target(func: cst.BaseExpression) -> Optional[Tuple[str, str, Optional[str]]]:
    """How a call may name a function of this module: (kind, name, owner class)."""
    if isinstance(func, cst.Name):
        return ("name", func.value, None)
    if not isinstance(func, cst.Attribute):
        return None
    receiver, attr = func.value, func.attr.value
    if isinstance(receiver, cst.Name):
        if receiver.value in ("self", "cls"):
            return ("self", attr, None)
        return ("attr", attr, receiver.value)
    if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super":
        return ("super", attr, None)
    return None


def _last_name(expr: cst.BaseExpression) -> str:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return ""

"""The regions of a function whose code says where tensors live: `with torch.device(...)` blocks (a tensor
built there defaults to that device), and branches that test a tensor's device.

`with torch.device(...)` and `with t.device:` name a device for what is built inside (`device_context`), as
`torch.set_default_device(...)` does for a whole module (`default_device`).

A branch proves placement: in `x.cpu() if x.is_cuda else x` the first `x` is on the device, and in
`if ids.device.type == "cpu": ids = ids.to(dev)` the copied `ids` on the host (memory unknown); so does an
assertion in a function's body (`assert ids.device.type == "cpu"`) for the statements after it. Only the side a
test names is decided: not CUDA may still be XPU or NPU, so the `else` of `x.is_cuda` says nothing. A name counts
only while no other binding reaches it (not rebound in the branch before the use); an attribute as written.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from h2dlint.facts.arguments import keyword_value, positional_args
from h2dlint.facts.constructs import is_host_device
from h2dlint.facts.placement_values import Place, Placement, short
from h2dlint.facts.positions import line_starts, row_at
from h2dlint.facts.scopes import NameResolver

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Position = Tuple[int, int]  # (line, column)


# Without these words a source has no device test, and without a `with` header naming a device no
# device-context block: the regions of such a file are never looked for (walking every function for them would
# cost a tenth of a cold run). A header may span lines (`with (\n torch.device(...),\n):`).
DEVICE_TEST_WORDS = ("is_cuda", "is_cpu", "device.type")


def regions_possible(text: str) -> Tuple[bool, bool]:
    """(whether the source `text` may hold device-context blocks, whether it may hold device tests)."""
    return _has_device_block_header(text), any(word in text for word in DEVICE_TEST_WORDS)


def _has_device_block_header(text: str) -> bool:
    """Whether a `with` is followed by `device` before the next colon (a header may span lines), found with
    `str.find`: a regular expression over every source costs more than the walk it saves."""
    at = text.find("with")
    while at != -1:
        colon = text.find(":", at)
        if "device" in text[at : colon if colon != -1 else len(text)]:
            return True
        at = text.find("with", at + 4)
    return False


class Regions:
    """Per function of one module, computed on first use: its device-context blocks and its device tests."""

    def __init__(
        self, default_device: Optional[str], possible: Tuple[bool, bool] = (True, True), source: Optional[str] = None
    ) -> None:
        """`default_device`: why the module's tensors default to a device (`torch.set_default_device`), or None;
        `possible`: `regions_possible` of its source (which regions to look for); `source`: the module's text,
        when known: a function's device tests are then looked for only on its lines that name a test's word."""
        self._default_device = default_device
        self._blocks_possible, self._tests_possible = possible
        self._source = source
        self._test_rows: Optional[List[int]] = None  # the lines of `source` that name a word of a device test
        self._blocks: Dict[int, List[Tuple[int, int, str]]] = {}  # by id of the function node
        self._tests: Dict[int, List["DeviceTest"]] = {}

    def device_context(self, function: Optional[FunctionNode], node: ast.AST, names: NameResolver) -> Optional[str]:
        """Why a tensor built at `node` of `function` defaults to a device: the innermost `with torch.device(...)`
        block around it, else the module's default device."""
        line = getattr(node, "lineno", 0)
        inside = [(start, why) for start, end, why in self._device_blocks(function, names) if start <= line <= end]
        return max(inside)[1] if inside else self._default_device

    def tested(self, function: Optional[FunctionNode], expr: ast.expr, names: NameResolver) -> Optional[Placement]:
        """What the innermost `x.is_cuda`-like test around `expr` says of it, when it tests the same value."""
        if not self._tests_possible:
            return None
        key = id(function)
        if key not in self._tests:
            rows = self._test_rows_in(function) if function is not None else []
            if function is None or rows == []:
                self._tests[key] = []
            else:  # assertions first: an `if` inside their span is the innermost test
                self._tests[key] = asserted_placements(function) + device_tests(own_nodes(function, rows))
        written = None
        for test in reversed(self._tests[key]):
            if not test.covers(expr):
                continue
            written = written or ast.unparse(expr)
            if ast.unparse(test.tested) == written:
                holds = _same_value(expr, test.tested, names) and not _rebound_before(expr, written, test.nodes)
                return Placement(test.place, test.why()) if holds else None
        return None

    def _test_rows_in(self, function: FunctionNode) -> Optional[List[int]]:
        """The lines of `function` that name a word of a device test (`DEVICE_TEST_WORDS`); None: any line."""
        if self._source is None:
            return None
        if self._test_rows is None:
            self._test_rows = rows_naming(self._source, DEVICE_TEST_WORDS)
        first, last = function.lineno, function.end_lineno or function.lineno
        return self._test_rows[bisect.bisect_left(self._test_rows, first) : bisect.bisect_right(self._test_rows, last)]

    def _device_blocks(self, function: Optional[FunctionNode], names: NameResolver) -> List[Tuple[int, int, str]]:
        key = id(function)
        if not self._blocks_possible:
            return []
        if key not in self._blocks:
            self._blocks[key] = [
                (node.lineno, node.end_lineno or node.lineno, why)
                for node in (own_nodes(function) if function is not None else ())
                if isinstance(node, (ast.With, ast.AsyncWith))
                for why in (device_context(item.context_expr, names) for item in node.items)
                if why is not None
            ]
        return self._blocks[key]


def rows_naming(text: str, words: Sequence[str]) -> List[int]:
    """The line numbers (from 1, as `ast` counts them) of the lines of `text` that hold one of `words`,
    ascending, found with `str.find`."""
    starts = line_starts(text)
    rows = set()
    for word in words:
        at = text.find(word)
        while at != -1:
            rows.add(row_at(starts, at))
            at = text.find(word, at + len(word))
    return sorted(rows)


def spans_any(lines: Sequence[int], first: int, last: int) -> bool:
    """Whether one of `lines` (ascending) is in `first..last`."""
    at = bisect.bisect_left(lines, first)
    return at < len(lines) and lines[at] <= last


def own_nodes(function: FunctionNode, lines: Optional[Sequence[int]] = None) -> Iterator[ast.AST]:
    """The nodes of `function`'s body, not those of functions, lambdas or classes nested in it; with `lines`
    (ascending), only those whose lines hold one of them (a node with no position, such as `arguments`, is
    descended into)."""
    pending: List[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        start = getattr(node, "lineno", None) if lines is not None else None
        if start is not None and not spans_any(lines, start, node.end_lineno or start):  # type: ignore[arg-type]
            continue
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            pending.extend(ast.iter_child_nodes(node))


def _same_value(use: ast.expr, tested: ast.expr, names: NameResolver) -> bool:
    """Whether no other binding of the name `use` reaches it than the one tested (attributes: as written)."""
    if isinstance(use, ast.Name) and isinstance(tested, ast.Name):
        return names.value_at(use) is names.value_at(tested)
    return True


def _rebound_before(use: ast.expr, written: str, nodes: Sequence[ast.AST]) -> bool:
    """Whether the branch `nodes` binds `written` (a name, or an attribute as written) before `use` runs: an
    assignment that ends before it, a loop, `with` or walrus target, or a comprehension or lambda around it
    that binds the name anew."""
    here = (use.lineno, use.col_offset)
    for node in (sub for top in nodes for sub in ast.walk(top)):
        if not any(ast.unparse(target) == written for target in _targets(node)):
            continue
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)):
            if _start(node) <= here <= (node.end_lineno, node.end_col_offset):  # type: ignore[operator]
                return True
        elif _bound_at(node) <= here:
            return True
    return False


def _targets(node: ast.AST) -> List[ast.expr]:
    """What `node` binds: assignment, loop, `with` and walrus targets (unpacked), comprehension and lambda names."""
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        targets = [generator.target for generator in node.generators]
    elif isinstance(node, ast.Lambda):
        return [ast.Name(arg.arg) for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
    else:
        return []
    return [sub for target in targets for sub in ast.walk(target) if isinstance(sub, (ast.Name, ast.Attribute))]


def _start(node: ast.AST) -> Position:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def _bound_at(node: ast.AST) -> Position:
    """Where a binding takes effect: an assignment or walrus once its value is computed (its end); a loop or
    `with` target before its body (its start)."""
    if isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
        return _start(node)
    return (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined, return-value]


@dataclass(frozen=True)
class DeviceTest:
    """A branch (`nodes`, from `start` to `end`) where the tensor `tested` is at `place`: the device or the host."""

    start: Position
    end: Position
    tested: ast.expr
    place: Place
    test: ast.expr
    nodes: Tuple[ast.AST, ...]

    def covers(self, node: ast.expr) -> bool:
        return self.start <= (node.lineno, node.col_offset) and (node.end_lineno, node.end_col_offset) <= self.end  # type: ignore[operator]

    def why(self) -> str:
        side = "on the device" if self.place is Place.DEVICE else "on the host"
        return f"is tested to be {side} (`{ast.unparse(self.test)}` at line {self.test.lineno})"


Sides = Tuple[Optional[Place], Optional[Place]]  # where the tested tensor is when the test is true, when false


def device_tests(nodes: Iterable[ast.AST]) -> List[DeviceTest]:
    """The branches of `nodes` (a function's own nodes) whose placement a device test decides."""
    found: List[DeviceTest] = []
    for node in nodes:
        if isinstance(node, (ast.If, ast.IfExp)):
            decided = _decides(node.test)
            if decided is not None:
                found += _regions(node, *decided)
    return found


def asserted_placements(function: FunctionNode) -> List[DeviceTest]:
    """`assert x.device.type == "cpu"` (or `x.is_cuda`, ...) in the body of `function`: the statements after it
    see `x` where the assertion says, as the branch of an `if` would; so do those before it, for a name (a local
    or parameter: `tested` then checks that the same binding reaches the use)."""
    found: List[DeviceTest] = []
    body = function.body
    for at, statement in enumerate(body):
        decided = _decides(statement.test) if isinstance(statement, ast.Assert) else None
        if decided is None or decided[1][0] is None:
            continue
        covered = [s for s in body if s is not statement] if isinstance(decided[0], ast.Name) else body[at + 1 :]
        if covered:
            first, last = covered[0], covered[-1]
            start, end = (first.lineno, first.col_offset), (last.end_lineno, last.end_col_offset)
            tested, place = decided[0], decided[1][0]
            found.append(DeviceTest(start, end, tested, place, statement.test, tuple(covered)))  # type: ignore
    return found


def _regions(node: ast.AST, tested: ast.expr, sides: Sides) -> List[DeviceTest]:
    branches = ((node.body, sides[0]), (node.orelse, sides[1]))  # type: ignore[attr-defined]
    regions = []
    for branch, place in branches:
        parts = tuple(branch) if isinstance(branch, list) else (branch,)
        if parts and place is not None:
            first, last = parts[0], parts[-1]
            start, end = (first.lineno, first.col_offset), (last.end_lineno, last.end_col_offset)
            regions.append(DeviceTest(start, end, tested, place, node.test, parts))  # type: ignore[arg-type, attr-defined]
    return regions


# Not CUDA is not the host (XPU, NPU, MPS), and not the CPU is some device: only a test that names the side
# decides it.
_IS_CUDA: Sides = (Place.DEVICE, None)
_IS_CPU: Sides = (Place.HOST, Place.DEVICE)


def _decides(test: ast.expr) -> Optional[Tuple[ast.expr, Sides]]:
    """(the tensor tested, where it is when the test is true and when false), or None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _decides(test.operand)
        return (inner[0], (inner[1][1], inner[1][0])) if inner is not None else None
    if isinstance(test, ast.Attribute) and test.attr in ("is_cuda", "is_cpu"):
        return test.value, _IS_CUDA if test.attr == "is_cuda" else _IS_CPU
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
        left, right = test.left, test.comparators[0]
        kind = right.value if isinstance(right, ast.Constant) else None
        is_type = isinstance(left, ast.Attribute) and left.attr == "type" and isinstance(left.value, ast.Attribute)
        if is_type and left.value.attr == "device" and kind in ("cuda", "cpu"):  # type: ignore[union-attr]
            sides = _IS_CUDA if kind == "cuda" else _IS_CPU
            equal = isinstance(test.ops[0], ast.Eq)
            return left.value.value, sides if equal else (sides[1], sides[0])  # type: ignore[union-attr]
    return None


def device_context(expr: ast.expr, names: NameResolver) -> Optional[str]:
    """Why tensors built in `with expr:` default to a device, or None: `torch.device(<not the CPU>)`, or a
    tensor's `.device` (`with hidden.device:`)."""
    if isinstance(expr, ast.Call) and names.qualify(expr.func) == "torch.device":
        device = next(iter(positional_args(expr)), None) or keyword_value(expr, "type")
        if device is None or is_host_device(device, names):
            return None
        return f"inside `with torch.device({short(device, 24)}):` at line {expr.lineno}"
    if isinstance(expr, ast.Attribute) and expr.attr == "device":
        return f"inside `with {short(expr, 24)}:` at line {expr.lineno}"
    return None


def default_device(module: ast.Module, names: NameResolver) -> Optional[str]:
    """Why tensors of this module default to a device: a module-level `torch.set_default_device(<not the CPU>)`."""
    for statement in module.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if isinstance(call, ast.Call) and names.qualify(call.func) == "torch.set_default_device" and call.args:
            if not is_host_device(call.args[0], names):
                return f"after `torch.set_default_device(...)` at line {call.lineno}"
    return None

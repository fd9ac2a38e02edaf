"""The D2H sync constructs one file's `ast` shows, by name only (the scanner of `benchmarks/d2h_scan.py`).

No import resolution, no placement, no hotness: each construct that can read a device tensor back to the host
is listed wherever it appears, except in annotations and class bases (types, not tensors).
"""

from __future__ import annotations

import ast
from typing import List, NamedTuple, Optional, Sequence

# Method calls without arguments that copy to the host; `numpy` is listed as a trap (it raises on CUDA).
NO_ARG_METHODS = {"tolist": "tolist", "item": "item", "cpu": "cpu", "numpy": "numpy"}
# Calls by their last name, whatever the receiver (`x.nonzero()`, `torch.nonzero(x)`, `np.argwhere`).
NAMED_CALLS = {"nonzero": "nonzero", "argwhere": "nonzero", "bincount": "bincount", "unique": "unique"}
NAMED_CALLS["unique_consecutive"] = "unique"
PY_NUMBER_BUILTINS = frozenset({"int", "float", "bool"})
PY_REDUCTIONS = frozenset({"any", "all", "sum", "max", "min"})
CONDITION_METHODS = frozenset({"any", "all"})
CONDITION_FUNCTIONS = frozenset({"equal", "allclose"})
# Builtin type names, which in `a | b` make a union of types rather than a mask.
BUILTIN_TYPES = frozenset({"int", "float", "bool", "str", "bytes", "list", "dict", "tuple", "set", "type", "object"})
# A name that says it holds a boolean mask.
MASK_WORD = "mask"
class Construct(NamedTuple):
    path: str  # relative to the tree
    line: int
    kind: str
    detail: str
    function: str  # enclosing qualname, "<module>" at top level


def _last_name(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_literal(node.operand)
    return isinstance(node, ast.Constant)


def _is_cpu_device(node: ast.AST) -> bool:
    """`"cpu"` or `torch.device("cpu")`."""
    if isinstance(node, ast.Constant):
        return node.value == "cpu"
    if isinstance(node, ast.Call) and _last_name(node.func) == "device" and node.args:
        return _is_cpu_device(node.args[0])
    return False


def _keyword(call: ast.Call, name: str) -> Optional[ast.AST]:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_mask_index(index: ast.AST) -> bool:
    if isinstance(index, ast.Compare):
        return True
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.Invert):
        return True
    if isinstance(index, ast.BinOp) and isinstance(index.op, (ast.BitAnd, ast.BitOr)):
        return not _is_type_union(index)
    name = _last_name(index)
    # A capitalised name is a class (`dict[str, BlockMask]` in a cast), not a mask tensor.
    return name is not None and MASK_WORD in name.lower() and not name[:1].isupper()


def _is_type_union(node: ast.AST) -> bool:
    """`A | None`, `int | str`, `tuple[int, A] | bytes`: a union of types (alias, generic call), not a mask."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _is_type_union(node.left) and _is_type_union(node.right)
    if isinstance(node, ast.Constant):
        return node.value is None
    if isinstance(node, ast.Subscript):  # `tuple[int, Out] | bytes`
        node = node.value
    name = _last_name(node)
    return name is not None and (name[:1].isupper() or name in BUILTIN_TYPES)


def _index_parts(index: ast.AST) -> List[ast.AST]:
    return list(index.elts) if isinstance(index, ast.Tuple) else [index]


def _end_argument(call: ast.Call) -> Optional[ast.AST]:
    """The end of `range(...)` / `arange(...)`: the only argument, or the second."""
    end = _keyword(call, "end")
    if end is not None:
        return end
    if len(call.args) == 1:
        return call.args[0]
    if len(call.args) >= 2:
        return call.args[1]
    return None


def _one_bare_operand(call: ast.Call) -> bool:
    """`any(x)`, `sum(self.lens)`: iterating a bare name or attribute, which may be a tensor."""
    return len(call.args) == 1 and isinstance(call.args[0], (ast.Name, ast.Attribute))


def _condition_kind(test: ast.AST) -> Optional[str]:
    """`x.any()`, `x.all()`, `torch.equal(a, b)`, `torch.allclose(a, b)`, under `not` / `and` / `or`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _condition_kind(test.operand)
    if isinstance(test, ast.BoolOp):
        kinds = [k for k in map(_condition_kind, test.values) if k]
        return kinds[0] if kinds else None
    if not isinstance(test, ast.Call) or not isinstance(test.func, ast.Attribute):
        return None
    if test.func.attr in CONDITION_METHODS and not test.args:
        return f".{test.func.attr}()"
    if test.func.attr in CONDITION_FUNCTIONS and _last_name(test.func.value) == "torch":
        return f"torch.{test.func.attr}"
    return None


class _Scanner(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.scopes: List[str] = []
        self.found: List[Construct] = []

    def _add(self, node: ast.AST, kind: str, detail: str = "") -> None:
        function = ".".join(self.scopes) or "<module>"
        self.found.append(Construct(self.path, node.lineno, kind, detail, function))

    def _scope(self, name: str, outside: Sequence[Optional[ast.AST]], body: Sequence[ast.stmt]) -> None:
        """Visit what is evaluated outside the scope, then the body inside it; annotations and bases are skipped."""
        for child in outside:
            if child is not None:
                self.visit(child)
        self.scopes.append(name)
        for statement in body:
            self.visit(statement)
        self.scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        # Annotations are types, not tensors: `list[A | B]`, `Optional[Mask]` are no mask indexing.
        self._scope(node.name, (*node.decorator_list, *node.args.defaults, *node.args.kw_defaults), node.body)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        # Bases are types too: `class Flat(MutableSequence[Entry | None])`.
        self._scope(node.name, (*node.decorator_list, *(k.value for k in node.keywords)), node.body)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        self._method_call(node)
        self._named_call(node)
        self._python_number_call(node)
        self._fill_value(node)
        self._tensor_of_elements(node)
        self.generic_visit(node)

    def _method_call(self, node: ast.Call) -> None:
        if not isinstance(node.func, ast.Attribute):
            return
        attr = node.func.attr
        if attr in NO_ARG_METHODS and not node.args and not node.keywords:
            self._add(node, NO_ARG_METHODS[attr])
        elif attr == "to":
            target = node.args[0] if node.args else _keyword(node, "device")
            if target is not None and _is_cpu_device(target):
                self._add(node, "to-cpu")
        elif attr == "repeat_interleave":
            self._repeat_interleave(node)

    def _repeat_interleave(self, node: ast.Call) -> None:
        if _keyword(node, "output_size") is not None:
            return
        # `x.repeat_interleave(repeats)` or `torch.repeat_interleave(x, repeats)`.
        on_torch = _last_name(node.func.value) == "torch"  # type: ignore[attr-defined]
        positional = node.args[1:] if on_torch else node.args
        repeats = _keyword(node, "repeats") or (positional[0] if positional else None)
        if repeats is None:
            detail = "repeats=none"
        elif _is_literal(repeats):
            detail = "repeats=int-literal"
        elif isinstance(repeats, ast.Name):
            detail = "repeats=name"
        else:
            detail = "repeats=expr"
        self._add(node, "repeat_interleave", detail)

    def _named_call(self, node: ast.Call) -> None:
        name = _last_name(node.func)
        if name in NAMED_CALLS:
            self._add(node, NAMED_CALLS[name], name)
        elif name == "where" and len(node.args) == 1 and not node.keywords:
            self._add(node, "nonzero", "where-1-arg")
        elif isinstance(node.func, ast.Name) and name in PY_REDUCTIONS and _one_bare_operand(node):
            self._add(node, "py-reduce", name)

    def _python_number_call(self, node: ast.Call) -> None:
        name = _last_name(node.func)
        if isinstance(node.func, ast.Name) and name in PY_NUMBER_BUILTINS:
            if node.args and not _is_literal(node.args[0]):
                self._add(node, "py-number", f"{name}()")
        elif name == "range" and isinstance(node.func, ast.Name) or name == "arange":
            end = _end_argument(node)
            if isinstance(end, (ast.Subscript, ast.Attribute)):
                self._add(node, "py-number", f"{name}-end")

    def _fill_value(self, node: ast.Call) -> None:
        value = _keyword(node, "fill_value")
        if value is None and _last_name(node.func) == "full" and len(node.args) >= 2:
            value = node.args[1]
        if value is not None and not _is_literal(value):
            self._add(node, "py-number", "fill_value")

    def _tensor_of_elements(self, node: ast.Call) -> None:
        if not (isinstance(node.func, ast.Attribute) and node.func.attr == "tensor"):
            return
        if _last_name(node.func.value) != "torch" or not node.args:
            return
        values = node.args[0]
        if isinstance(values, (ast.List, ast.Tuple)) and any(
            isinstance(e, (ast.Subscript, ast.Call)) for e in values.elts
        ):
            self._add(node, "tensor-of-elements")

    def visit_Subscript(self, node: ast.Subscript) -> None:
        for part in _index_parts(node.slice):
            if _is_mask_index(part):
                self._add(node, "mask-index", "target" if isinstance(node.ctx, ast.Store) else "read")
            elif isinstance(part, ast.Slice):
                bounds = (part.lower, part.upper)
                if any(isinstance(b, ast.Subscript) for b in bounds):
                    self._add(node, "py-number", "slice-bound")
        self.generic_visit(node)

    def _test(self, node: ast.AST, test: ast.AST) -> None:
        kind = _condition_kind(test)
        if kind:
            self._add(node, "condition", f"{type(node).__name__.lower()} {kind}")

    def visit_If(self, node: ast.If) -> None:
        self._test(node, node.test)
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self._test(node, node.test)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._test(node, node.test)
        self.generic_visit(node)


def scan_source(source: str, relative: str) -> List[Construct]:
    scanner = _Scanner(relative)
    scanner.visit(ast.parse(source, filename=relative))
    return sorted(scanner.found, key=lambda c: (c.line, c.kind, c.detail))



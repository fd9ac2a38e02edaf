"""The one libcst transformer that makes every fix: `--fix`, `--diff`, the pre-commit fix hook, the JSON and
SARIF edits and the codemod face all run it.

Analysis (on `ast`) says what to rewrite, by position (`Fix` records). The transformer finds the call at each
position, confirms with libcst's scope analysis that its callee is torch's constructor in that scope, and
rebuilds it; comments, parentheses and continuations come out right because libcst keeps them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider, ScopeProvider

from h2dlint.facts.recursion import on_deep_stack
from h2dlint.facts.sources import SourceError
from h2dlint.facts.summary import Fix, Span
from h2dlint.fixing.helper_import import with_helper_import
from h2dlint.fixing.helper_names import HelperName, helper_name

FILLS = frozenset({"full", "zeros", "ones"})  # `Fix.target`s that are torch functions, not runtime helpers
NOT_TORCH = "libcst's scope analysis does not resolve the callee to `{constructor}` here"


def span_of_range(found: CodeRange) -> Span:
    return Span(found.start.line, found.start.column + 1, found.end.line, found.end.column + 1)


@dataclass
class RewritePlan:
    """The fixes to make in one module and how it names each helper."""

    fixes: Sequence[Fix]
    helper_module: str
    names: Dict[str, HelperName] = field(default_factory=dict)  # helper function -> how the file calls it
    helper_first_party: bool = False  # the helper is a module of the project (isort's first-party section)

    @classmethod
    def for_source(
        cls, text: str, fixes: Sequence[Fix], helper_module: str, first_party: bool = False
    ) -> "RewritePlan":
        helpers = {fix.target for fix in fixes if fix.target not in FILLS}
        tree = ast.parse(text) if helpers else None
        names = {h: helper_name(tree, helper_module, h) for h in helpers}  # type: ignore[arg-type]
        return cls(fixes, helper_module, names, first_party)

    def with_import(self, module: cst.Module, aliases: Sequence[Tuple[str, str]]) -> cst.Module:
        """`module` importing the helper functions `aliases` names."""
        return with_helper_import(module, self.helper_module, aliases, self.helper_first_party)


class HostToDeviceRewrites(cst.CSTTransformer):
    """Rewrites the calls that `plan` names. Mixed into libcst's codemod command too (`faces/codemod.py`)."""

    # Scopes, not `QualifiedNameProvider`: that one visits every node of the module to attach a lazy lookup,
    # which costs as much as the scope analysis itself; the rewrite asks about a few callees only.
    METADATA_DEPENDENCIES = (PositionProvider, ScopeProvider)

    def start_rewrites(self, plan: RewritePlan) -> None:
        self.plan = plan
        self._by_call = {fix.call: fix for fix in plan.fixes}
        self._by_absorbed = {fix.absorbed: fix for fix in plan.fixes if fix.absorbed is not None}
        self._devices: Dict[Span, cst.BaseExpression] = {}  # constructor call -> the device of its `.to(...)`
        self.applied: List[Fix] = []
        self.rejected: List[Tuple[Fix, str]] = []
        self.replacements: Dict[Fix, Tuple[Span, cst.CSTNode]] = {}  # what each fix replaced, with what
        self._done: Set[Span] = set()
        self._string_quotes: List[str] = []  # the quotes of the f-strings around the node being visited
        spans = (*self._by_call, *self._by_absorbed)
        self._targets = [((span.row, span.column), (span.end_row, span.end_column)) for span in spans]

    def _span(self, node: cst.CSTNode) -> Span:
        return span_of_range(self.get_metadata(PositionProvider, node))

    def on_visit(self, node: cst.CSTNode) -> bool:
        """A line of simple statements that holds no call to rewrite is not walked into: most of a fixed file holds
        none. (Not compound statements: libcst's range of a `def` starts after its decorators, and that of an
        `if` may end before its `else`.)"""
        if isinstance(node, cst.SimpleStatementLine) and not self._holds_a_target(node):
            return False
        return super().on_visit(node)

    def _holds_a_target(self, node: cst.CSTNode) -> bool:
        found = self.get_metadata(PositionProvider, node)
        start, end = (found.start.line, found.start.column + 1), (found.end.line, found.end.column + 1)
        return any(start <= first and last <= end for first, last in self._targets)

    def visit_Call(self, node: cst.Call) -> Optional[bool]:
        fix = self._by_absorbed.get(self._span(node))
        if fix is not None and isinstance(fix.device, Span):
            device = next((a.value for a in node.args if self._span(a.value) == fix.device), None)
            if device is not None:
                self._devices[fix.call] = _as_keyword_value(device)
        return True

    def visit_FormattedString(self, node: cst.FormattedString) -> Optional[bool]:
        self._string_quotes.append(node.quote)
        return True

    def leave_FormattedString(
        self, original_node: cst.FormattedString, updated_node: cst.FormattedString
    ) -> cst.BaseExpression:
        self._string_quotes.pop()
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        span = self._span(original_node)
        fix = self._by_call.get(span)
        if fix is not None:
            return self._rewrite_constructor(original_node, updated_node, fix)
        fix = self._by_absorbed.get(span)
        if fix is None or fix.call not in self._done:
            return updated_node
        # A call needs no parentheses of its own: those around the constructor were there for `.to(...)`
        # (unless a comment lives in them).
        inner = updated_node.func.value  # type: ignore[attr-defined]
        if "#" not in "".join(cst.Module([]).code_for_node(p) for p in (*inner.lpar, *inner.rpar)):
            inner = inner.with_changes(lpar=[], rpar=[])
        self.replacements[fix] = (span, inner)
        return inner.with_changes(lpar=[*updated_node.lpar, *inner.lpar], rpar=[*inner.rpar, *updated_node.rpar])

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        aliases = self.needed_imports()
        return self.plan.with_import(updated_node, aliases) if aliases else updated_node

    def needed_imports(self) -> List[Tuple[str, str]]:
        names = self.plan.names
        needed = {fix.target for fix in self.applied if fix.target in names and names[fix.target].import_as}
        return [(target, names[target].import_as) for target in sorted(needed)]  # type: ignore[misc]

    def _rewrite_constructor(self, original: cst.Call, updated: cst.Call, fix: Fix) -> cst.BaseExpression:
        problem = self._callee_problem(original, fix)
        if problem is None and isinstance(fix.device, Span) and fix.call not in self._devices:
            problem = "the device argument of the copy was not found"
        if problem is None and isinstance(fix.device, str) and self._device_literal(fix.device) is None:
            problem = "inside f-strings that use both quotes, a device literal cannot be written before Python 3.12"
        if problem is not None:
            self.rejected.append((fix, problem))
            return updated
        new = _fill_call(updated, fix, self._device(fix)) if fix.target in FILLS else self._helper_call(updated, fix)
        self.applied.append(fix)
        self._done.add(fix.call)
        if fix.absorbed is None:
            self.replacements[fix] = (fix.call, new)
        return new

    def _callee_problem(self, original: cst.Call, fix: Fix) -> Optional[str]:
        if fix.constructor not in self._qualified_names(original.func):
            return NOT_TORCH.format(constructor=fix.constructor)
        if fix.target in FILLS:
            module = original.func.value if isinstance(original.func, cst.Attribute) else None
            if module is None or "torch" not in self._qualified_names(module):
                return f"`torch.{fix.target}` cannot be named through the callee here"
        return None

    def _qualified_names(self, node: cst.CSTNode) -> Set[str]:
        """What `QualifiedNameProvider` would give for `node`: its scope's qualified names for it."""
        scope = self.get_metadata(ScopeProvider, node, None)
        return {q.name for q in scope.get_qualified_names_for(node)} if scope is not None else set()

    def _device(self, fix: Fix) -> Optional[cst.BaseExpression]:
        if isinstance(fix.device, str):
            return cst.parse_expression(self._device_literal(fix.device) or fix.device)
        return self._devices.get(fix.call) if fix.device is not None else None

    def _device_literal(self, literal: str) -> Optional[str]:
        """The device string `literal` (`"cuda"`) in a quote that the f-strings around it do not use: before
        Python 3.12 an f-string's expressions cannot hold its own quote. None when they use both."""
        used = "".join(self._string_quotes)
        quote = next((q for q in ('"', "'") if q not in used), None)
        return None if quote is None else quote + ast.literal_eval(literal) + quote

    def _helper_call(self, updated: cst.Call, fix: Fix) -> cst.Call:
        new = updated.with_changes(func=cst.parse_expression(self.plan.names[fix.target].reference))
        device = self._device(fix)
        if device is None:
            return new
        return new.with_changes(args=_inserted_arg(new.args, len(new.args), _keyword("device", device)))


def _fill_call(updated: cst.Call, fix: Fix, device: Optional[cst.BaseExpression]) -> cst.Call:
    """`torch.tensor(v, ...)` -> `torch.full((), v, ...)`, or `torch.zeros((), ...)` / `torch.ones((), ...)`."""
    func = updated.func
    assert isinstance(func, cst.Attribute)
    data, rest = updated.args[0], list(updated.args[1:])
    shape = data.with_changes(value=cst.Tuple([]), keyword=None)
    args = [shape, data, *rest] if fix.target == "full" else [shape, *rest]
    if fix.target == "full" and not isinstance(shape.comma, cst.Comma):
        args[0] = shape.with_changes(comma=cst.MaybeSentinel.DEFAULT)
    if fix.dtype is not None:
        dtype = cst.Attribute(value=func.value.with_changes(lpar=[], rpar=[]), attr=cst.Name(fix.dtype))  # type: ignore[attr-defined]
        args = _inserted_arg(args, 2 if fix.target == "full" else 1, _keyword("dtype", dtype))
    if device is not None:
        args = _inserted_arg(args, len(args), _keyword("device", device))
    return updated.with_changes(func=func.with_changes(attr=cst.Name(fix.target)), args=args)


def _keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        value=value, keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )


def _inserted_arg(args: Sequence[cst.Arg], index: int, new: cst.Arg) -> List[cst.Arg]:
    """`args` with `new` at `index`. Appended after a trailing comma, it takes that comma (so a call with one
    argument per line keeps that layout) and the argument before it takes its predecessor's."""
    args = list(args)
    if index < len(args) or not args:
        return [*args[:index], new, *args[index:]]
    last = args[-1]
    # The blanks before `)` belong to the last argument; they stay before `)`.
    new, last = new.with_changes(whitespace_after_arg=last.whitespace_after_arg), last.with_changes(
        whitespace_after_arg=cst.SimpleWhitespace("")
    )
    if not isinstance(last.comma, cst.Comma):
        return [*args[:-1], last, new]
    between = _without_comment(args[-2].comma) if len(args) > 1 else None
    between = between or cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [*args[:-1], last.with_changes(comma=between), new.with_changes(comma=last.comma)]


def _without_comment(comma) -> Optional[cst.Comma]:
    """The comma, minus a comment it ends its line with (the comment stays with its own argument)."""
    if not isinstance(comma, cst.Comma):
        return None
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        after = after.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return comma.with_changes(whitespace_after=after)


def _as_keyword_value(device: cst.BaseExpression) -> cst.BaseExpression:
    """`device=` cannot take an unparenthesized `d := x`."""
    if isinstance(device, cst.NamedExpr) and not device.lpar:
        return device.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return device


class _Transformer(HostToDeviceRewrites):
    def __init__(self, plan: RewritePlan) -> None:
        super().__init__()
        self.start_rewrites(plan)


@dataclass
class Rewritten:
    """What the transformer did to one module's text."""

    module: cst.Module  # the original, parsed (with `\n` for each `\r` of a file with classic Mac line endings)
    code: str
    applied: List[Fix]
    rejected: List[Tuple[Fix, str]]
    transformer: HostToDeviceRewrites
    carriage_returns: bool = False  # the file breaks its lines with a lone `\r` (classic Mac)

    def as_written(self, code: str) -> str:
        """`code` made from `module` (a rebuilt call, import lines) with the file's own line breaks."""
        return code.replace("\n", "\r") if self.carriage_returns else code


def rewrite_source(text: str, fixes: Sequence[Fix], helper_module: str, first_party: bool = False) -> Rewritten:
    """Make `fixes` in `text` (`first_party`: `helper_module` is the project's own). Raises SourceError when
    libcst cannot parse it."""
    try:  # libcst recurses per nesting level
        return on_deep_stack(_rewrite_source, text, fixes, helper_module, first_party)
    except RecursionError:
        raise SourceError("too deeply nested for libcst; not fixed") from None


def _rewrite_source(text: str, fixes: Sequence[Fix], helper_module: str, first_party: bool) -> Rewritten:
    # libcst does not keep a file whose lines end in a lone `\r`: it drops the blank lines of parenthesised
    # continuations and at the end. Such a file holds no `\n`, so each `\r` becomes one there and back.
    carriage_returns = only_carriage_returns(text)
    module = parse_module(text.replace("\r", "\n") if carriage_returns else text)
    transformer = _Transformer(RewritePlan.for_source(text, fixes, helper_module, first_party))
    fixed = MetadataWrapper(module, unsafe_skip_copy=True).visit(transformer)
    rewritten = Rewritten(module, fixed.code, transformer.applied, transformer.rejected, transformer, carriage_returns)
    return replace(rewritten, code=rewritten.as_written(fixed.code))


def only_carriage_returns(text: str) -> bool:
    """Whether `text` breaks its lines with a lone carriage return only (classic Mac line endings)."""
    return "\r" in text and "\n" not in text


def parse_module(text: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise SourceError(f"libcst cannot parse this file ({error.message}); not fixed") from None


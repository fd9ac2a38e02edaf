"""The one rewrite every fix makes: a torch constructor call becomes a call of a runtime helper
(`h2d_tensor` / `h2d_as_tensor`) with the same arguments, optionally absorbing a `.to(device)` / `.cuda()`
that followed it.

Rules describe the rewrite with ast nodes (`Rewrite`); `plan_fix` turns it into text edits while the source
is at hand, so that a fix is plain data (cacheable, printable as JSON/SARIF) by the time it is reported.
Only the flagged expression changes: arguments, comments and layout inside the constructor call are kept.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

from h2dlint.facts.arguments import has_star_args, is_false_literal, keyword_arg, keyword_value, positional_args
from h2dlint.facts.constructs import DATA_CONSTRUCTORS
from h2dlint.facts.positions import skip_trivia, source_segment, span_of
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.summary import Edit, Fix, Span
from h2dlint.rules.helper_import import helper_reference

# The keywords each helper takes; anything else (`pin_memory=`, `names=`, `**kwargs`) is left alone.
HELPER_KEYWORDS = {
    "h2d_tensor": frozenset({"dtype", "device", "requires_grad"}),
    "h2d_as_tensor": frozenset({"dtype", "device"}),
}


@dataclass(frozen=True)
class Rewrite:
    helper: str  # "h2d_tensor" or "h2d_as_tensor"
    constructor: ast.Call  # the torch call whose callee becomes the helper
    device: Union[ast.expr, str, None] = None  # a device argument to add: an expression to copy, or source text
    absorbed: Optional[ast.Call] = None  # the `.to(...)` / `.cuda(...)` call around `constructor`, removed


HIDDEN_ARGUMENTS = "`*args`/`**kwargs` are passed through, so the fix cannot see every argument"
FixPlan = Tuple[Optional[Rewrite], Optional[str]]  # the rewrite, or why there is none

# The constructors a helper replaces exactly. `torch.from_numpy` and `torch.asarray` share the caller's memory,
# which cannot be pinned at construction, so they have no helper.
HELPER_FOR = {"torch.tensor": "h2d_tensor", "torch.as_tensor": "h2d_as_tensor"}


def constructor_rewrite(call: ast.Call, helper: str) -> FixPlan:
    """`torch.tensor(data, dtype=..., device=...)` -> `h2d_tensor(data, dtype=..., device=...)`."""
    problem = constructor_problem(call, helper)
    return (None, problem) if problem else (Rewrite(helper, call), None)


def copy_rewrite(copy_call: ast.Call, names: NameResolver) -> FixPlan:
    """`torch.tensor(data, dtype=...).to(device, non_blocking=True)` -> `h2d_tensor(data, dtype=..., device=...)`,
    and the same for `.cuda(...)` and for `torch.as_tensor`."""
    constructor = copy_call.func.value  # type: ignore[attr-defined]
    if isinstance(constructor, ast.Name):
        return None, f"`{constructor.id}` is built in another statement; build it there with the helper"
    if not isinstance(constructor, ast.Call) or names.qualify(constructor.func) not in DATA_CONSTRUCTORS:
        return None, "methods run on the host between the constructor and the copy"
    helper = HELPER_FOR.get(names.qualify(constructor.func) or "")
    if helper is None:
        return None, f"`{names.qualify(constructor.func)}` shares the caller's memory, which cannot be pinned"
    problem = constructor_problem(constructor, helper) or _built_as_the_original(constructor)
    device, copy_problem = _copy_target(copy_call, names)
    if problem or copy_problem:
        return None, problem or copy_problem
    return Rewrite(helper, constructor, device=device, absorbed=copy_call), None


def constructor_problem(call: ast.Call, helper: str) -> Optional[str]:
    """Why `call`'s arguments cannot be passed to `helper` unchanged, or None when they can."""
    if has_star_args(call):
        return HIDDEN_ARGUMENTS
    if len(call.args) != 1:
        return "the call does not pass its data as the one positional argument"
    if isinstance(call.args[0], ast.GeneratorExp):
        return "its data is a generator expression"
    extra = sorted(k.arg for k in call.keywords if k.arg not in HELPER_KEYWORDS[helper])
    if extra:
        return f"`{helper}` does not take `{extra[0]}=`"
    return None


def _built_as_the_original(constructor: ast.Call) -> Optional[str]:
    if keyword_arg(constructor, "device") is not None:
        return "the constructor already names a device"
    requires_grad = keyword_value(constructor, "requires_grad")
    if requires_grad is not None and not is_false_literal(requires_grad):
        return "with `requires_grad` the original result is a copy, not a leaf"
    return None


def _copy_target(copy_call: ast.Call, names: NameResolver) -> Tuple[Union[ast.expr, str, None], Optional[str]]:
    """The device that `.to(...)` / `.cuda(...)` copies to, or why the call does more than copy."""
    method = copy_call.func.attr  # type: ignore[attr-defined]
    positional = positional_args(copy_call)
    if has_star_args(copy_call):
        return None, HIDDEN_ARGUMENTS
    extra = sorted(k.arg for k in copy_call.keywords if k.arg not in ("device", "non_blocking"))
    if method == "to" and (len(positional) > 1 or extra):
        return None, "the copy also converts the dtype or takes other options"
    if method == "cuda" and (len(positional) > 2 or extra):
        return None, f"`.cuda()` also takes `{extra[0]}=`" if extra else "`.cuda()` takes unknown arguments"
    device = keyword_value(copy_call, "device") or (positional[0] if positional else None)
    if method == "cuda":
        return _cuda_device(device)
    if keyword_arg(copy_call, "device") is None and not _names_a_device(device, names):
        return None, f"`{ast.unparse(device)}` may be a tensor or dtype, not a device; write `.to(device=...)`"
    return device, None


def _cuda_device(device: Optional[ast.expr]) -> Tuple[Union[ast.expr, str, None], Optional[str]]:
    if device is None:
        return '"cuda"', None
    if isinstance(device, ast.Constant) and type(device.value) is int:
        return f'"cuda:{device.value}"', None
    if isinstance(device, ast.Constant) and isinstance(device.value, str):
        return device, None
    return None, "`.cuda(None)` means the current device but `device=None` the default one"


def _names_a_device(expr: Optional[ast.expr], names: NameResolver) -> bool:
    """A literal, `torch.device(...)`, or a variable or attribute whose name says it holds a device."""
    if isinstance(expr, ast.Constant) and type(expr.value) in (str, int):
        return True
    if isinstance(expr, ast.Call) and names.qualify(expr.func) == "torch.device":
        return True
    name = expr.attr if isinstance(expr, ast.Attribute) else expr.id if isinstance(expr, ast.Name) else ""
    name = name.lower()
    return "device" in name or name == "dev" or name.endswith("_dev")


def plan_fix(rewrite: Rewrite, tree: ast.Module, text: str, lines: Sequence[str], helper_module: str) -> Fix:
    reference, import_edit = helper_reference(tree, text, lines, helper_module, rewrite.helper)
    edits = [Edit(span_of(rewrite.constructor.func, lines), reference)]
    if rewrite.device is not None:
        call = span_of(rewrite.constructor, lines)
        closing = (call.end_row, call.end_column - 1)  # the call's own `)`
        argument_end = _past_parentheses(lines, _last_argument(rewrite.constructor), closing)
        edits.append(Edit(Span(*argument_end, *argument_end), f", device={_source(rewrite.device, text)}"))
    if rewrite.absorbed is not None:
        call_end = span_of(rewrite.absorbed, lines)
        constructor_end = _past_parentheses(lines, rewrite.constructor, (call_end.end_row, call_end.end_column))
        edits.append(Edit(Span(*constructor_end, call_end.end_row, call_end.end_column), ""))
    if import_edit is not None:
        edits.append(import_edit)
    return Fix(f"Replace with `{reference}(...)`, which copies from pinned memory without blocking", tuple(edits))


def _last_argument(call: ast.Call) -> ast.AST:
    return max([*call.args, *call.keywords], key=lambda node: (node.end_lineno, node.end_col_offset))


def _past_parentheses(lines: Sequence[str], node: ast.AST, stop: Tuple[int, int]) -> Tuple[int, int]:
    """Where `node` ends with the parentheses around it, which its span leaves out: `(ids)` as an argument,
    `(torch.tensor(ids)).to(...)`. Only `)` closing them, blanks and comments lie between, before `stop`."""
    span = span_of(node, lines)
    end = (span.end_row, span.end_column)
    while True:
        row, column, _ = skip_trivia(lines, *end)
        if (row, column) >= stop or lines[row - 1][column - 1] != ")":
            return end
        end = (row, column + 1)


def _source(value: Union[ast.expr, str], text: str) -> str:
    if isinstance(value, str):
        return value
    segment = source_segment(text, value)
    return segment if isinstance(value, (ast.Name, ast.Attribute, ast.Constant, ast.Call)) else f"({segment})"

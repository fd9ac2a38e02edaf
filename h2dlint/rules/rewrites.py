"""What a fix rewrites: a torch constructor call becomes a call of a runtime helper (`h2d_tensor` /
`h2d_as_tensor`) with the same arguments, optionally absorbing a `.to(device)` / `.cuda()` that followed it.

Rules describe the rewrite with ast nodes (`Rewrite`); `h2dlint.rules.fix_plan` turns it into a `Fix`
record of positions and decides how safe it is. The libcst transformer in `h2dlint.fixing` does the rewrite.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional, Tuple, Union

from h2dlint.facts.arguments import has_star_args, is_false_literal, keyword_arg, keyword_value, positional_args
from h2dlint.facts.constructs import DATA_CONSTRUCTORS
from h2dlint.facts.scopes import NameResolver

# The keywords each helper takes; anything else (`pin_memory=`, `names=`, `**kwargs`) is left alone.
HELPER_KEYWORDS = {
    "h2d_tensor": frozenset({"dtype", "device", "requires_grad"}),
    "h2d_as_tensor": frozenset({"dtype", "device"}),
}


@dataclass(frozen=True)
class Rewrite:
    helper: str  # "h2d_tensor" or "h2d_as_tensor"
    constructor: ast.Call  # the torch call whose callee becomes the helper
    qualified: str  # what the constructor's callee is: "torch.tensor" or "torch.as_tensor"
    device: Union[ast.expr, str, None] = None  # a device argument to add: an expression to copy, or source text
    absorbed: Optional[ast.Call] = None  # the `.to(...)` / `.cuda(...)` call around `constructor`, removed


HIDDEN_ARGUMENTS = "`*args`/`**kwargs` are passed through, so the fix cannot see every argument"
FixPlan = Tuple[Optional[Rewrite], Optional[str]]  # the rewrite, or why there is none

# The constructors a helper replaces exactly. `torch.from_numpy` and `torch.asarray` share the caller's memory,
# which cannot be pinned at construction, so they have no helper.
HELPER_FOR = {"torch.tensor": "h2d_tensor", "torch.as_tensor": "h2d_as_tensor"}
CONSTRUCTOR_OF = {helper: constructor for constructor, helper in HELPER_FOR.items()}


def constructor_rewrite(call: ast.Call, helper: str) -> FixPlan:
    """`torch.tensor(data, dtype=..., device=...)` -> `h2d_tensor(data, dtype=..., device=...)`."""
    problem = constructor_problem(call, helper)
    return (None, problem) if problem else (Rewrite(helper, call, CONSTRUCTOR_OF[helper]), None)


# Why a copy of a host tensor made elsewhere is report-only: the fix would have to change where it is built.
BUILT_ELSEWHERE = "the host tensor is not built in this expression: pin it where it is made"


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
    return Rewrite(helper, constructor, CONSTRUCTOR_OF[helper], device=device, absorbed=copy_call), None


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



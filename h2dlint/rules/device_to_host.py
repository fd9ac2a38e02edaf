"""What the device-to-host rules (HTD2xx) share: finding a device operand, naming its host mirror, the message,
and the documentation blocks they have in common.

A D2H rule recognises a construct that reads a tensor's values on the host. It reports only where the placement
analysis (`facts.placement`) knows the operand is on the device, never where it is unknown, and never inside a
`sync-allowed-contexts` block (`facts.allowed_syncs`). Heat is decided for all rules by the project.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from h2dlint.facts.heat import Heat, site_cold_reason
from h2dlint.facts.placement_values import Place, Placement, clause, explanation
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.summary import LoopKind, Site
from h2dlint.facts.syntax import dotted_name
from h2dlint.facts.tensor_ops import TENSOR_FUNCTIONS, TENSOR_METHODS
from h2dlint.rules.base import Match, Rule
from h2dlint.rules.context import Context
from h2dlint.rules.docs import KNOWN_HEAT_LIMITS

_NAME_STEPS = 6  # names and subscripts followed back when asking whether a value is only named


@dataclass(frozen=True)
class DeviceOperand:
    """A tensor a construct reads on the host, known to be on the device, with its host mirror when in sight."""

    expr: ast.expr
    placement: Placement
    mirror: Optional[str]


# Decorators of functions whose body Python never runs as written: Triton and Numba kernels compile it, and
# there `x.to(tl.int64)`, `if mask:` and `tl.sum(x)` are kernel code, not host reads of device tensors.
KERNEL_DECORATOR_ROOTS = frozenset({"triton", "tl", "numba", "cuda"})
KERNEL_DECORATOR_NAMES = frozenset({"jit", "njit", "autotune", "heuristics"})


def device_operand(expr: Optional[ast.expr], context: Context, may_be_number: bool = False) -> Optional[DeviceOperand]:
    """`expr` as a device operand, or None: not known to be on the device, or in a kernel.

    `may_be_number`: the construct takes Python values as well (`int(x)`, `range(n)`, `if x:`, a slice bound).
    There the placement says where a tensor would live, not that `expr` is one (`num_gpu`, `use_cuda`, a list of
    device tensors): `expr` must be a tensor by construction as well (`tensor_by_construction`)."""
    if expr is None:
        return None
    if may_be_number and not tensor_by_construction(expr, context.names, 0):
        return None  # checked first: it reads the syntax only, and most `if` tests and bounds fail it
    placed = context.placement(expr)
    if placed.place is not Place.DEVICE or in_kernel(context):
        return None
    return DeviceOperand(expr, placed, context.host_mirror(expr))


def tensor_by_construction(expr: ast.expr, names: NameResolver, steps: int) -> bool:
    """Whether `expr` is certainly a tensor: a tensor method's or a torch function's result, arithmetic or a
    comparison with one, a subscript of one, or a local name bound to one. A bare name or attribute is not."""
    if steps > _NAME_STEPS:
        return False
    if isinstance(expr, ast.Subscript):
        return tensor_by_construction(expr.value, names, steps + 1)
    if isinstance(expr, ast.Name):
        value = names.value_at(expr)
        return value is not None and tensor_by_construction(value, names, steps + 1)
    if isinstance(expr, (ast.BinOp, ast.Compare)):
        operands = (expr.left, expr.right) if isinstance(expr, ast.BinOp) else (expr.left, *expr.comparators)
        return any(tensor_by_construction(operand, names, steps + 1) for operand in operands)
    if isinstance(expr, ast.UnaryOp):
        return tensor_by_construction(expr.operand, names, steps + 1)
    if isinstance(expr, ast.Call):
        qualified = names.qualify(expr.func)
        if qualified is not None:
            return qualified in TENSOR_FUNCTIONS
        return isinstance(expr.func, ast.Attribute) and expr.func.attr in TENSOR_METHODS
    return False


def in_kernel(context: Context) -> bool:
    """Whether the node is in a function decorated as a Triton or Numba kernel (`KERNEL_DECORATOR_*`)."""
    function = context.function
    return function is not None and any(_is_kernel_decorator(d) for d in function.decorator_list)


def _is_kernel_decorator(decorator: ast.expr) -> bool:
    written = dotted_name(decorator.func if isinstance(decorator, ast.Call) else decorator) or ""
    parts = written.split(".")
    return parts[0] in KERNEL_DECORATOR_ROOTS or (len(parts) == 1 and parts[0] in KERNEL_DECORATOR_NAMES)


def sync_match(node: ast.AST, what: str, operand: DeviceOperand, remedy: str, effect: str = "") -> Match:
    """The finding: `what` (the construct, "`.item()` of a device tensor"), what it makes (`effect`, by default a
    copy to the host and a stream sync), the evidence, and the remedy (the host mirror first, when in sight)."""
    effect = effect or "copies to the host and waits for the device (a stream sync) on every call"
    return Match(
        node=node,
        problem=f"{what} {effect} ({clause(operand.expr, operand.placement)})",
        remedy=mirror_remedy(operand.mirror, remedy),
        placement=explanation(operand.expr, operand.placement),
    )


def mirror_remedy(mirror: Optional[str], remedy: str) -> str:
    """`remedy` as a sentence, led by the host mirror `mirror` (`batch.seq_lens_cpu`) when there is one."""
    if not mirror:
        return remedy[:1].upper() + remedy[1:]
    if remedy.startswith(MIRROR_LEAD):
        return remedy  # it names the mirror in sight already
    return f"{MIRROR_LEAD} `{mirror}` instead, or {remedy[:1].lower()}{remedy[1:]}"


MIRROR_LEAD = "Use the host mirror"


DEFER_REMEDY = (
    "defer the read: copy it with `.to('cpu', non_blocking=True)` (pinned), record an event, and read it after"
    " `event.synchronize()` later in the step"
)

WHY_D2H = """
    Reading a device tensor's values on the host is a device-to-host copy that must wait for every kernel queued
    before it: the host stalls until the GPU catches up (`cudaStreamSynchronize` or its equivalent), and then the
    GPU idles until the host queues more work. Once per step this costs the overlap of CPU scheduling with GPU
    compute, most visibly at small batch sizes; vLLM ran a series of pull requests to eliminate such syncs, and
    sglang many single fixes. `torch.cuda.set_sync_debug_mode("warn")` reports them at run time, on a GPU, on the
    paths a workload reaches.
    """
D2H_FIX_SAFETY = """
    There is no automatic fix: each remedy (a host mirror, static-shape device code, a deferred copy) changes
    what the code computes or when, and needs the author's knowledge of the surrounding step. The message names
    the remedy that fits, and the host mirror by name when one is in sight.
    """
KNOWN_D2H_PLACEMENT = """
    Only operands that the placement analysis knows are on the device are reported: built with `device=` or
    moved with `.cuda()`/`.to(dev)` in this file, an attribute every method assigns a device tensor, a function's
    device return value, what a submodule the class builds returns (`self.proj(x)` with `self.proj =
    Linear(...)`, not one item unpacked from it), a name such as `*_gpu`, a tensor whose `<name>_cpu` mirror is
    in sight, or a field of
    an object of known class (`meta: Metadata`, `meta = cast(Metadata, m)`, `assert isinstance(meta, Metadata)`,
    or a parameter spelt like one class, `forward_batch`) that the
    class assigns on the device or keeps a `<name>_cpu` mirror of, or what such an object's method returns. A parameter, a field or a helper's return
    value of unknown placement is not reported; name them in `accelerator-tensors` to widen the rule. Syncs that depend on configuration or on properties that copy on
    access are not visible statically: `h2dlint trace` confirms syncs at run time.
    """
KNOWN_D2H_REGIONS = """
    A `sync-allowed-contexts` block quiets the syncs written inside it, not those in the functions it calls.
    """
KNOWN_D2H_LOOPS = """
    A read in a loop is reported only where the function around the loop is known to run per step or per
    request (by its name, a marker, its callers or a traced run). A loop alone, which makes a host-to-device copy
    hot (`hot-in-loop`), does not: loops over layers, pages or ranks in setup and debug checks read device
    tensors too. The same holds one call away: a function called in a loop (`hot-called-in-loop`) of code
    not known to be hot is not hot for these rules. Name such a function in `extend-hot-functions` when it
    does run per step.
    """
D2H_OPTIONS = ("sync-allowed-contexts", "accelerator-tensors", "host-tensors", "extend-hot-functions",
               "extend-cold-functions")
D2H_REFERENCES = ("sync-debug-mode", "cuda-sync", "hotness")


# A loop alone does not make a device-to-host read hot: the family reports a read in a loop only where the
# function around it is known to be hot (a copy in a loop, HTD1, keeps `hot-in-loop`). Evidence, at main
# 6f707f4 on the five census trees: the 20 HTD2 findings that the loop alone made hot include 8 blind-labelled
# ones (`benchmarks/d2h_labels.tsv`, `d2h_finding_labels.tsv`), and 6 of those are setup, debug checks or dead
# code; 2 are per-step syncs in functions that the call graph does not reach.
LOOP_IN_UNKNOWN_CODE = "it is in a loop, but the code around it is not known to run per step or per request"
CALLED_IN_UNKNOWN_LOOP = "it is {reason}, but the code around that loop is not known to run per step or per request"
ON_ARRIVAL = (
    "the code around it runs only as a request arrives, on host tensors in the tokenizer's process "
    "(`cold-sync-on-request-arrival`)"
)


class DeviceToHostRule(Rule):
    """A D2H rule: the documentation the family shares, which a rule extends where its construct needs more."""

    why_bad = WHY_D2H
    fix_availability = "never"
    fix_safety = D2H_FIX_SAFETY
    known_problems = (KNOWN_HEAT_LIMITS, KNOWN_D2H_PLACEMENT, KNOWN_D2H_REGIONS, KNOWN_D2H_LOOPS)
    options = D2H_OPTIONS
    references = D2H_REFERENCES
    quiet_where_syncs_allowed = True

    @classmethod
    def report_reason(cls, site: Site, owner: Optional[Heat], module: str = "") -> Optional[str]:
        return None if _hot_by_loop_alone(site, owner) else super().report_reason(site, owner, module)

    @classmethod
    def unreported_reason(cls, site: Site, owner: Optional[Heat]) -> str:
        if _hot_by_loop_alone(site, owner) and site_cold_reason(site) is None:
            return LOOP_IN_UNKNOWN_CODE if owner is None else CALLED_IN_UNKNOWN_LOOP.format(reason=owner.reason)
        return super().unreported_reason(site, owner)

    @classmethod
    def on_arrival_reason(cls, site: Site) -> Optional[str]:
        """Every device-to-host read is quiet where only request arrival reaches: its tensors are on the host."""
        return ON_ARRIVAL


def _hot_by_loop_alone(site: Site, owner: Optional[Heat]) -> bool:
    """Whether only a loop would make `site` hot: the loop around it, in a function whose heat is not known, or
    the loop its function is called in, in code not known to be hot (`LOOP_IN_UNKNOWN_CODE`). A service loop
    around the site (`hot-service-loop`) is known heat, wherever its function is called."""
    if site.loop is not None and site.loop[0] is LoopKind.SERVICE:
        return False
    if owner is not None:
        return owner.hot and owner.loop_alone
    return site.loop is not None

"""HTD202: indexing with a boolean mask on the device (`x[mask]`, `x[mask] = v`, `x[m] += y[m]`), in hot code."""

from __future__ import annotations

import ast
from typing import Optional

from h2dlint.facts.arguments import keyword_value, positional_args
from h2dlint.facts.placement_values import Place
from h2dlint.facts.scopes import NameResolver
from h2dlint.facts.syntax import index_parts
from h2dlint.rules.base import Invalid, Match, Valid
from h2dlint.rules.context import Context, NodeKind
from h2dlint.rules.device_to_host import (
    D2H_FIX_SAFETY,
    DeviceToHostRule,
    KNOWN_D2H_PLACEMENT,
    KNOWN_D2H_REGIONS,
    WHY_D2H,
    device_operand,
    sync_match,
    tensor_by_construction,
)
from h2dlint.rules.docs import KNOWN_HEAT_LIMITS

EFFECT = "makes PyTorch count the mask's true elements on the host (`nonzero`): a device-to-host sync on every call"
INDEXED_EFFECT = (
    "syncs on every call: PyTorch counts a device mask's true elements on the host (`nonzero`), or copies a host "
    "mask's indices from pageable memory to the device"
)
READ_REMEDY = "keep the shape static: `torch.where(mask, x, other)` or `x.masked_fill(~mask, value)`"
WRITE_REMEDY = "write without a sync: `x.masked_fill_(mask, value)`, or `torch.where(mask, value, x)`"
UPDATE_REMEDY = "update without a sync: `x += torch.where(mask, y, 0)` (or `torch.where(mask, x + y, x)`)"
_MAX_STEPS = 6
_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_BOOL_METHODS = frozenset("bool eq ne lt le gt ge logical_not logical_and logical_or logical_xor isnan isinf isfinite "
                          "isneginf isposinf".split())
_BOOL_FUNCTIONS = frozenset("torch." + n for n in "eq ne lt le gt ge logical_not logical_and logical_or logical_xor "
                            "isnan isinf isfinite isin isclose".split())


class MaskIndexing(DeviceToHostRule):
    code = "HTD202"
    name = "boolean-mask-indexing"
    summary = "`x[mask]` with a boolean mask on the device, in hot code: the result's size is read on the host."
    triggers = (("[",),)
    looks_at = frozenset({NodeKind.SUBSCRIPT, NodeKind.SUBSCRIPT_TARGET})

    what_it_does = """
        Checks for indexing with a boolean mask that lives on the device, in code that runs per step or per
        request: a read `x[mask]`, a write `x[mask] = v` of a value known to be a tensor (of a Python number it is
        `masked_fill_` and does not sync), and a masked update `x[mask] += y[mask]` (reported once, at its
        target). The index (or one part of it, `x[:, mask]`) must be a boolean tensor: by construction (a
        comparison `x > 0`, `ids == pad`, `~m`, `m1 & m2`, `m1 | m2`, `.bool()`, `torch.isin(...)`, `.isnan()` and
        the like, or a local name bound to one) or by its name (`mask`, `*_mask`: `placement-name-mask-index`).
        Either the mask or the indexed tensor must be known to be on the device. An index tensor of integers does
        not sync (a gather) and is not reported.
        """
    why_bad = WHY_D2H + """
        A boolean mask gives a result whose size is the number of true elements, known only on the device: PyTorch
        runs `nonzero` and copies the count to the host before it can allocate the result. A host mask indexing a
        device tensor waits too: its indices are copied to the device from pageable memory.
        """
    example = """
        def forward(self, logits_gpu, ids_gpu, bias_gpu, pad):
            logits_gpu[ids_gpu == pad] = bias_gpu.max()
            return logits_gpu
        """
    use_instead = """
        def forward(self, logits_gpu, ids_gpu, bias_gpu, pad):
            return torch.where(ids_gpu == pad, bias_gpu.max(), logits_gpu)
        """

    fix_safety = (
        D2H_FIX_SAFETY,
        """
        A masked read-modify-write `x[m] += y[m]` equals `x += torch.where(m, y, 0)` only when `y` has `x`'s shape
        and the sum keeps `x`'s dtype; a linter cannot prove either, so it is not rewritten.
        """,
    )
    known_problems = (
        KNOWN_HEAT_LIMITS,
        KNOWN_D2H_PLACEMENT,
        """
        A mask passed in as a parameter or kept in an attribute is not known to be boolean and is not reported.
        """,
        KNOWN_D2H_REGIONS,
    )

    VALID = (
        # A host tensor indexed with a mask of unknown placement: nothing in sight is on the device.
        Valid("""
            import torch

            def forward(images, keep_mask):
                sizes = torch.tensor([len(i) for i in images])
                return sizes[keep_mask]
            """),
        # An integer index tensor gathers on the device; a mask of unknown kind or placement is not reported.
        Valid("""
            import torch

            def forward(hidden, dev, keep):
                idx = torch.arange(4, device=dev)
                return hidden[idx], hidden[keep]
            """),
        # A mask built on the host (CPU-only preprocessing).
        Valid("""
            import torch

            def forward(lens, images):
                sizes = torch.tensor([len(i) for i in images])
                return sizes[sizes > 0]
            """),
        # Static-shape device code; `x[mask] = <number>` is `masked_fill_` (no `nonzero`).
        Valid("""
            import torch

            def forward(logits_gpu, ids_gpu, bias_gpu, pad, value):
                logits_gpu[ids_gpu == pad] = -1e9
                logits_gpu[ids_gpu == pad] = value
                logits_gpu.masked_fill_(ids_gpu == pad, -1e9)
                return torch.where(ids_gpu == pad, bias_gpu, logits_gpu)
            """),
        # The calls of a private function disagree on where its parameter lives; a public one may be called
        # from other modules too.
        Valid("""
            import torch

            def forward(hidden, lens, dev):
                return _select(hidden, lens.to(dev)), _select(hidden, lens.cpu()), select(hidden, lens.to(dev))

            def _select(hidden, lens):
                return hidden[lens > 0]

            def select(hidden, lens):
                return hidden[lens > 0]
            """),
        # `hidden_states` outside a model: an engine's output processing names its host copies alike.
        Valid("""
            import torch

            class OutputProcessor:
                def process(self, hidden_states, keep_mask):
                    return hidden_states[keep_mask]
            """),
    )
    INVALID = (
        # In a model (a class that defines `forward`), `hidden_states` are its activations, on the device.
        Invalid(
            """
            import torch

            class DecoderLayer:
                def forward(self, hidden_states, mask):
                    return hidden_states[mask]  # HTD202
            """,
            column=16,
            reason="is named like a device tensor (`hidden_states`)",
        ),
        # An index named as a mask is a boolean mask; a device tensor indexed with it syncs wherever the mask lives
        # (a host mask's indices are copied to the device from pageable memory).
        Invalid(
            """
            import torch

            def forward(hidden_gpu, visual_token_mask):
                return hidden_gpu[visual_token_mask]  # HTD202
            """,
            column=12,
            reason="is named like a device tensor (`*_gpu`)",
        ),
        # A parameter of a private function lives where every call of it in its module passes it.
        Invalid(
            """
            import torch

            def forward(hidden, lens, dev):
                return _select(hidden, lens.to(dev))

            def _select(hidden, lens):
                return hidden[lens > 0]  # HTD202
            """,
            column=12,
            reason="at every call of `_select(...)` in this file (line 4), a tensor that is moved to the device",
        ),
        Invalid(
            """
            import torch

            def forward(logits_gpu, ids_gpu, pad, bias_gpu):
                logits_gpu[ids_gpu == pad] = bias_gpu.max()  # HTD202
            """,
            column=5,
            reason="`x.masked_fill_(mask, value)`",
        ),
        Invalid(
            """
            import torch

            def forward(hidden, n, dev):
                lens = torch.zeros(n, device=dev)
                keep = (lens > 0) & ~torch.isnan(lens)
                return hidden[keep]  # HTD202
            """,
            reason="(`keep` is built on the device (`device=dev`) at line 4)",
        ),
        Invalid(
            """
            import torch

            def forward(x, y, n, dev):
                m = torch.zeros(n, device=dev) > 0
                x[m] += y[m]  # HTD202
            """,
            reason="`x += torch.where(mask, y, 0)`",
        ),
        Invalid(
            """
            import torch

            def forward(hidden, batch):
                return hidden[:, batch.seq_lens > 0], batch.seq_lens_cpu  # HTD202
            """,
            reason="has a host mirror `seq_lens_cpu`",
        ),
    )

    def check_subscript(self, subscript: ast.Subscript, context: Context) -> Optional[Match]:
        target = context.augmented_target
        if target is not None and target is not subscript and ast.dump(target.slice) == ast.dump(subscript.slice):
            return None  # `x[m] += y[m]`: one read-modify-write, reported at its target
        return self._masked(subscript, context, READ_REMEDY)

    def check_subscript_target(self, subscript: ast.Subscript, context: Context) -> Optional[Match]:
        update = context.augmented_target is subscript
        if not update and _fills_with_a_number(subscript, context):
            return None
        return self._masked(subscript, context, UPDATE_REMEDY if update else WRITE_REMEDY)

    def _masked(self, subscript: ast.Subscript, context: Context, remedy: str) -> Optional[Match]:
        for part in index_parts(subscript.slice):
            if _is_boolean(part, context.names, 0) or context.names_a_mask(part):
                operand = device_operand(part, context)
                if operand is not None:
                    return sync_match(subscript, "indexing with a boolean mask on the device", operand, remedy, EFFECT)
                indexed = device_operand(subscript.value, context)
                if indexed is not None:
                    return sync_match(subscript, "indexing a device tensor with a boolean mask", indexed, remedy,
                                      INDEXED_EFFECT)
        return None


def _fills_with_a_number(subscript: ast.Subscript, context: Context) -> bool:
    """`x[mask] = 0`: one mask index and a value that may be a Python number, which PyTorch dispatches to
    `masked_fill_` (no `nonzero`, no sync; seen with the profiler on torch 2.13). Only a value known to be a
    tensor (by construction, or by placement) makes the write a sync."""
    if isinstance(subscript.slice, ast.Tuple) or subscript not in context.assigning or context.assigned is None:
        return False
    value = context.assigned
    known = tensor_by_construction(value, context.names, 0) or context.placement(value).place is not Place.UNKNOWN
    return not known


def _is_boolean(expr: ast.expr, names: NameResolver, steps: int) -> bool:
    """Whether `expr` is a boolean tensor by construction (a comparison, `~m`, `m1 & m2`, `.bool()`, ...), or a
    local name bound to one."""
    if steps > _MAX_STEPS:
        return False
    if isinstance(expr, ast.Compare):
        return len(expr.ops) == 1 and isinstance(expr.ops[0], _COMPARISONS)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Invert):
        return _is_boolean(expr.operand, names, steps + 1)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return _is_boolean(expr.left, names, steps + 1) and _is_boolean(expr.right, names, steps + 1)
    if isinstance(expr, ast.Name):
        value = names.value_at(expr)
        return value is not None and _is_boolean(value, names, steps + 1)
    if isinstance(expr, ast.Call):
        return _is_boolean_call(expr, names)
    return False


def _is_boolean_call(call: ast.Call, names: NameResolver) -> bool:
    qualified = names.qualify(call.func)
    if qualified is not None:
        return qualified in _BOOL_FUNCTIONS
    if not isinstance(call.func, ast.Attribute):
        return False
    if call.func.attr in _BOOL_METHODS:
        return True
    dtype = keyword_value(call, "dtype") or next(iter(positional_args(call)), None)
    return call.func.attr == "to" and dtype is not None and names.qualify(dtype) == "torch.bool"

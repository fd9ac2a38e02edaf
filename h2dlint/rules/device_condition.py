"""HTD204: the truth value of a device tensor asked on the host (`if t:`, `while t.any():`, `assert t.all()`,
`bool(t)`, `any(t)`), in hot code."""

from __future__ import annotations

import ast
from typing import Iterator, Optional

from h2dlint.rules.base import Invalid, Match, Valid
from h2dlint.rules.context import Context, NodeKind
from h2dlint.rules.device_to_host import (
    DeviceToHostRule,
    KNOWN_D2H_PLACEMENT,
    KNOWN_D2H_REGIONS,
    WHY_D2H,
    device_operand,
    sync_match,
)
from h2dlint.rules.docs import KNOWN_HEAT_LIMITS

EFFECT = "copies the value to the host and waits for the device (a stream sync) to choose a Python branch"
REMEDY = (
    "decide on the host (a host mirror, a flag the host already knows), hoist a per-layer check to once per step,"
    " or keep both branches on the device with `torch.where`"
)
_TENSOR_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


class DeviceCondition(DeviceToHostRule):
    code = "HTD204"
    name = "device-tensor-condition"
    summary = "`if t:` / `t.any()` / `bool(t)` on a device tensor in hot code: a device-to-host sync per branch."
    triggers = ()
    looks_at = frozenset({NodeKind.TEST, NodeKind.CALL})

    what_it_does = """
        Checks for the truth value of a device tensor asked on the host, in code that runs per step or per
        request: the test of an `if`, `while`, `assert` or conditional expression (each operand of `and`/`or`,
        under `not`), `bool(t)`, and the builtins `any(t)`/`all(t)` iterating a device tensor. The test is a
        device tensor when it is a comparison of one (`(lens == 0)`), a reduction of one (`t.any()`, `t.all()`,
        `(t > 0).sum()`), or a tensor known to be on the device; a name alone that a convention places on the
        device (`use_cuda`, `num_gpu`) is taken for a Python value.
        """
    why_bad = WHY_D2H + """
        Python needs a `bool` to choose a branch, so `Tensor.__bool__` copies the value to the host and waits.
        A check repeated in every layer multiplies the cost.
        """
    example = """
        def forward(self, hidden, lens_gpu):
            if (lens_gpu == 0).any():
                hidden = hidden * 0
            return hidden
        """
    use_instead = """
        def forward(self, hidden, lens_gpu):
            return torch.where((lens_gpu == 0).any(), hidden * 0, hidden)
        """

    known_problems = (
        KNOWN_HEAT_LIMITS,
        KNOWN_D2H_PLACEMENT,
        """
        A one-time flag read in every step (`if self.first_step:`) is a Python value and is not reported; a
        device tensor kept as such a flag and cleared after one step is reported, though it syncs once.
        """,
        KNOWN_D2H_REGIONS,
    )

    VALID = (
        # A loop alone does not make a read hot: `check_pages` is not known to run per step.
        Valid("""
            import torch

            def check_pages(n, dev):
                free = torch.zeros(n, dtype=torch.bool, device=dev)
                for r in range(n):
                    if free[r]:
                        raise RuntimeError(r)
            """),
        # Python values named like device things, shapes and identity tests.
        Valid("""
            import torch

            def forward(x_gpu, use_cuda, num_gpu):
                if use_cuda and num_gpu > 1 and x_gpu is not None and x_gpu.shape[0]:
                    return x_gpu
            """),
        # A host tensor, and an enum's `.all()`.
        Valid("""
            import torch

            def forward(sizes, modality, Modality):
                lens = torch.tensor(sizes)
                if lens.any() or modality in Modality.all():
                    return lens
            """),
        # A capture-only branch: code under `torch.cuda.graph(...)` is not per-step host code.
        Valid("""
            import torch

            def forward(graph, n, dev):
                lens = torch.zeros(n, device=dev)
                with torch.cuda.graph(graph):
                    if lens.any():
                        pass
            """),
    )
    INVALID = (
        # The same loop in a function that runs per step is hot.
        Invalid(
            """
            import torch

            def decode_step(n, dev):
                free = torch.zeros(n, dtype=torch.bool, device=dev)
                for r in range(n):
                    if free[r]:  # HTD204
                        raise RuntimeError(r)
            """,
            reason="`decode_step` runs per step",
        ),
        Invalid(
            """
            import torch

            def forward(hidden, lens_gpu):
                if (lens_gpu == 0).any():  # HTD204
                    hidden = hidden * 0
                return hidden
            """,
            column=8,
            reason="`torch.where`",
        ),
        Invalid(
            """
            import torch

            def forward(n, dev):
                done = torch.zeros(n, dtype=torch.bool, device=dev)
                while not done.all():  # HTD204
                    done = done | True
            """,
        ),
        Invalid(
            """
            import torch

            def forward(batch):
                assert (batch.seq_lens > 0).all(), batch.seq_lens_cpu  # HTD204
            """,
            reason="Use the host mirror `batch.seq_lens_cpu` instead",
        ),
        Invalid(
            """
            import torch

            def forward(logits_gpu):
                return any(logits_gpu.isnan())  # HTD204
            """,
        ),
        Invalid(
            """
            import torch

            def forward(logits_gpu):
                return bool(logits_gpu.isnan().any())  # HTD204
            """,
        ),
    )

    def check_test(self, test: ast.expr, context: Context) -> Optional[Match]:
        for operand in _operands(test):
            found = self._condition(operand, context)
            if found is not None:
                return found
        return None

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        func = call.func
        if not isinstance(func, ast.Name) or func.id not in ("bool", "any", "all") or len(call.args) != 1:
            return None
        if call.keywords or context.names.resolve_name(func.id) is not None:
            return None
        return self._condition(call.args[0], context, f"`{func.id}(...)` of a device tensor")

    def _condition(self, test: ast.expr, context: Context, what: str = "a device tensor as a condition") -> Optional[
        Match
    ]:
        if isinstance(test, ast.Compare) and not (
            len(test.ops) == 1 and isinstance(test.ops[0], _TENSOR_COMPARISONS)
        ):
            return None  # `is`, `in`, chained comparisons: Python values, or a sync HTD204 does not claim
        operand = device_operand(test, context, may_be_number=True)
        return sync_match(test, what, operand, REMEDY, EFFECT) if operand is not None else None


def _operands(test: ast.expr) -> Iterator[ast.expr]:
    """What Python asks the truth value of: the operands of `and`/`or`, under `not`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _operands(test.operand)
    elif isinstance(test, ast.BoolOp):
        for value in test.values:
            yield from _operands(value)
    else:
        yield test

"""Branches that run only for a batch that carries images, audio or video (`hot-per-request-multimodal-branch`).

A serving engine's language model takes its multimodal inputs in the prefill of the requests that bring them:
`if pixel_values is not None:`, `if len(image_inputs) > 0:`, `if need_vision.any():`. Every other forward
(each decode step) skips the branch, so what it runs, and what it calls, runs once per request, not per step.
A test is such a presence test when it, or one of the operands of an `and`, asks whether a local named like
multimodal input (`MULTIMODAL_INPUTS`) is there: `x is not None`, `x` alone, `len(x) > 0` (or `!= 0`, `>= 1`),
`len(x)`, `x.any()`; or whether a batch carries it (`forward_batch.contains_mm_inputs()`). `is None`, `not x`
and `or` say the opposite or nothing: the branch they guard is not taken to be per request. But an early return
on their absence (`if pixel_values is None and image_embeds is None: return None`, vLLM's
`_parse_and_validate_image_input`) makes the rest of the function such a branch (`returns_unless_multimodal`).
Serving defaults only (`Settings.multimodal_branches_per_request`): a trainer takes its images every step.
"""

from __future__ import annotations

import ast
from typing import Optional

from h2dlint.facts.heuristics import BY_ID
from h2dlint.facts.syntax import glob_matcher, is_none

HEURISTIC = "hot-per-request-multimodal-branch"
# The local names (parameters, variables) bound only with new images, audio or video: exact names mostly, as
# `*image*` would take in config flags set every step. Attributes are left out: a request's `req.mm_inputs`
# stays set for every step of its life.
MULTIMODAL_INPUTS = BY_ID[HEURISTIC].patterns
# The methods by which a batch or request says it carries such input: sglang's `forward_batch.contains_mm_inputs()`
# (`ForwardBatch`, `ScheduleBatch`, `GenerateReqInput`), and its image, audio and video forms. Evidence: sglang
# `models/midashenglm.py:578`, whose debug logging of a batch's audio tokens runs in audio prefills only.
PRESENCE_METHODS = ("contains_mm_input", "contains_mm_inputs", "contains_image_inputs", "contains_audio_inputs",
                    "contains_video_inputs")


def tests_multimodal_presence(test: ast.expr) -> bool:
    """Whether `if test:` runs its body only when multimodal input is present (see the module docstring)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(tests_multimodal_presence(value) for value in test.values)
    return _present(test) is not None


def returns_unless_multimodal(statement: ast.stmt) -> bool:
    """Whether `statement` is `if <absent>: ... return`, where the test holds when no multimodal
    input is there (`x is None`, `not x`, `len(x) == 0`; all operands of an `and`, any of an `or`): the function's
    statements after it run only when some is."""
    if not isinstance(statement, ast.If) or not isinstance(statement.body[-1], ast.Return):
        return False
    return _absent(statement.test)


def _absent(test: ast.expr) -> bool:
    if isinstance(test, ast.BoolOp):
        absent = [_absent(value) for value in test.values]
        return all(absent) if isinstance(test.op, ast.And) else any(absent)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _present(test.operand) is not None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, ast.Is) and is_none(right):
            return _multimodal(test.left) is not None
        is_zero = isinstance(right, ast.Constant) and type(right.value) is int and right.value == 0
        return isinstance(op, ast.Eq) and is_zero and _multimodal(_len_argument(test.left)) is not None
    return False


def _present(test: ast.expr) -> Optional[ast.expr]:
    """The value whose presence `test` asks about, when it names multimodal input."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, ast.IsNot) and is_none(right):
            return _multimodal(test.left)
        if _is_nonzero_length_comparison(op, right):
            return _multimodal(_len_argument(test.left))
        return None
    if isinstance(test, ast.Call):
        method = test.func
        if isinstance(method, ast.Attribute) and not (test.args or test.keywords):
            if method.attr == "any":
                return _multimodal(method.value)
            if method.attr in PRESENCE_METHODS:
                return test
        return _multimodal(_len_argument(test))
    return _multimodal(test)


def _is_nonzero_length_comparison(op: ast.cmpop, right: ast.expr) -> bool:
    if not isinstance(right, ast.Constant) or type(right.value) is not int:
        return False
    return (isinstance(op, (ast.Gt, ast.NotEq)) and right.value == 0) or (isinstance(op, ast.GtE) and right.value == 1)


def _len_argument(expr: ast.expr) -> Optional[ast.expr]:
    """`x` of `len(x)`."""
    is_len = isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "len"
    return expr.args[0] if is_len and len(expr.args) == 1 and not expr.keywords else None  # type: ignore[union-attr]


def _multimodal(expr: Optional[ast.expr]) -> Optional[ast.expr]:
    if not isinstance(expr, ast.Name):
        return None
    return expr if glob_matcher(MULTIMODAL_INPUTS)(expr.id) is not None else None

"""Room to recurse for deeply nested code.

The analysis walks `ast` trees recursively, a few Python frames per nesting level, so a machine-generated
expression a few hundred levels deep exceeds Python's default recursion limit, although Python compiles
code nested up to its parser's own limit (about 3,000 levels). Such a file is analysed again on a thread with
a large stack and a raised limit, instead of being refused.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Dict, TypeVar

T = TypeVar("T")

_DEEP_STACK_BYTES = 512 * 1024 * 1024  # reserved, not committed: pages are touched only as deep as the walk goes
_DEEP_RECURSION_LIMIT = 50_000


def with_room_to_recurse(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)`; if it runs out of recursion depth, once more on a thread with a deep stack."""
    try:
        return function(*args)
    except RecursionError:
        return on_deep_stack(function, *args)


def on_deep_stack(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` on a thread with a deep stack and a raised recursion limit. For code that cannot be
    retried when it runs out of depth: libcst turns its own RecursionErrors into other errors."""
    outcome: Dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = function(*args)
        except BaseException as error:  # re-raised on the calling thread
            outcome["error"] = error

    previous_stack, previous_limit = threading.stack_size(_DEEP_STACK_BYTES), sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous_limit, _DEEP_RECURSION_LIMIT))
    try:
        thread = threading.Thread(target=run, name="h2dlint-deep")
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous_stack)
        sys.setrecursionlimit(previous_limit)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]

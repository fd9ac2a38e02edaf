"""Regions where a project keeps syncs on purpose: `with gpu_sync_allowed():` (vLLM's name), or any context
manager the `sync-allowed-contexts` setting names. The D2H rules (HTD2xx) and the rules of blocking host-to-device
copies (HTD101-105, HTD107: each one waits, as vLLM's sync checker sees) stay quiet inside them, so a sync a team
keeps deliberately needs no comment on every line. A copy under CUDA-graph capture (HTD106) is no sync: it is
reported there all the same.
"""

from __future__ import annotations

import ast
from typing import Optional, Sequence

from h2dlint.facts.syntax import dotted_name

DEFAULT_SYNC_ALLOWED_CONTEXTS = ("gpu_sync_allowed",)


def sync_allowed_region(expr: ast.expr, allowed: Sequence[str]) -> Optional[str]:
    """Why `with expr:` allows syncs, or None: `expr` is a call of (or is) a name or dotted attribute that is one
    of `allowed` or ends in one (`gpu_sync_allowed()`, `vllm.utils.gpu_sync_allowed()`)."""
    if not allowed:
        return None
    written = dotted_name(expr.func if isinstance(expr, ast.Call) else expr)
    if written is None:
        return None
    for name in allowed:
        if written == name or written.endswith("." + name):
            call = "(...)" if isinstance(expr, ast.Call) else ""
            return f"inside `with {written}{call}:` at line {expr.lineno} (`sync-allowed-contexts`)"
    return None

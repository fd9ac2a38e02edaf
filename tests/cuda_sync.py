"""Shared by the CUDA tests, in-process and in probe subprocesses: does a call make a synchronising CUDA call?"""

from __future__ import annotations

import torch


def first_sync_error(call):
    """The error `torch.cuda.set_sync_debug_mode("error")` raises for `call()`'s first sync, or None."""
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        call()
    except RuntimeError as error:
        if "synchroniz" not in str(error):
            raise
        return str(error).splitlines()[0]
    finally:
        torch.cuda.set_sync_debug_mode("default")
    return None

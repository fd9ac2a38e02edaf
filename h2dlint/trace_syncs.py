"""CUDA synchronisations a traced run makes, for `h2dlint trace` (loaded by `tracer.py` once torch is imported).

It stands alone like `tracer.py`, and imports torch only inside the traced program, which already has.
Two kinds are recorded at the innermost project frame of the Python stack:

- "sync": what `torch.cuda.set_sync_debug_mode("warn")` warns about (`.item()`, `.tolist()`, `.cpu()`,
  blocking copies, `torch.nonzero`, ...);
- "pageable-copy": a `non_blocking=True` copy to the GPU from pageable (unpinned) host memory, which CUDA
  runs synchronously and sync debug mode does not report. `Tensor.to`, `Tensor.cuda` and `Tensor.copy_` are
  wrapped to catch it, as vLLM's sync checker does.
"""

from __future__ import annotations

import functools
import traceback
import warnings

_SYNC_WARNING = "synchroniz"  # "called a synchronizing CUDA operation"


def is_pageable_non_blocking(source_type: str, source_pinned: bool, target_type: str, non_blocking: bool) -> bool:
    """Whether a copy is a non-blocking host-to-device copy from pageable memory: synchronous after all."""
    return non_blocking and source_type == "cpu" and not source_pinned and target_type == "cuda"


def watch_syncs(counter) -> bool:
    """Start recording into `counter` (a `tracer.Counter`); False when CUDA is not available."""
    import torch

    if not torch.cuda.is_available():
        return False
    torch.cuda.set_sync_debug_mode("warn")
    warnings.filterwarnings("always", message=f".*{_SYNC_WARNING}.*")
    previous = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if _SYNC_WARNING in str(message):
            counter.record_sync("sync", _frames())
        else:
            previous(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning
    _wrap_copies(torch, counter)
    return True


def _frames():
    """(file, line) of the Python stack, innermost first."""
    return [(frame.filename, frame.lineno) for frame in reversed(traceback.extract_stack())]


def _wrap_copies(torch, counter) -> None:
    tensor = torch.Tensor

    def target_of_to(args, kwargs):
        for value in (kwargs.get("device"), *args):
            if isinstance(value, tensor):
                return value.device.type
            if isinstance(value, (str, torch.device)):
                return torch.device(value).type
            if isinstance(value, int) and not isinstance(value, bool):
                return "cuda"
        return None

    def non_blocking_of(args, kwargs):
        return bool(kwargs.get("non_blocking")) or any(value is True for value in args)

    def watched(original, target_and_source):
        @functools.wraps(original)
        def wrapper(self, *args, **kwargs):
            target, source = target_and_source(self, args, kwargs)
            if target is not None and source is not None:
                pinned = source.device.type == "cpu" and source.is_pinned()
                if is_pageable_non_blocking(source.device.type, pinned, target, non_blocking_of(args, kwargs)):
                    counter.record_sync("pageable-copy", _frames())
            return original(self, *args, **kwargs)

        return wrapper

    tensor.to = watched(tensor.to, lambda self, a, k: (target_of_to(a, k), self))
    tensor.cuda = watched(tensor.cuda, lambda self, a, k: ("cuda", self))
    tensor.copy_ = watched(tensor.copy_, lambda self, a, k: (self.device.type, a[0] if a else k.get("src")))

"""Drop-in replacements for ``torch.tensor`` / ``torch.as_tensor`` that copy to CUDA without a stream sync.

``torch.tensor(data, device="cuda")`` builds the data in pageable host memory and copies it with a blocking
copy, which ends in ``cudaStreamSynchronize``: the host waits for all work already queued on the stream (for
example the previous forward pass). ``h2d_tensor`` and ``h2d_as_tensor`` return exactly what the original call
returns (values, dtype, device, shape, strides, ``requires_grad``, leaf status, warnings, exceptions), but when
the target is a CUDA device they build the data in pinned host memory at construction (``pin_memory=True``,
served by the CUDA caching host allocator, which keeps the block until the copy has finished) and copy it with
``non_blocking=True`` on the current stream.

They fall back to the original call whenever the pinned path could differ in any way:

- the target device type is not ``cuda`` (``cpu``, ``mps``, ``xpu``, ``meta``, ...), CUDA is not available, or
  the target is a CUDA device other than the current one;
- the data is not a plain ``list``/``tuple``/``torch.Size`` or a Python ``bool``/``int``/``float``/``complex``:
  tensors (``torch.tensor`` warns and copies, ``torch.as_tensor`` may alias, both keep strides), NumPy arrays and
  scalars (``numpy.float64`` is a ``float`` subclass, hence the exact type test), anything with
  ``__cuda_array_interface__`` -- pinning raises or changes the result for those;
- ``dtype`` is not ``None`` or a dense ``torch.dtype`` (a Python type, a quantized, bit or sub-byte dtype), or
  ``requires_grad`` is not a ``bool``: the original converts or reports those itself;
- a CUDA graph is being captured on the current stream (the original raises there; a pinned copy would be
  captured reading host memory that the graph does not own, silently wrong on replay);
- ``torch.compile`` is tracing, a dispatch mode is active, or a torch function mode other than the default
  device (``torch.set_default_device`` / ``with torch.device(...)``) is active: those see the original call.

``device`` is read the way ``torch.tensor`` reads it: an ``int`` is an index on the current accelerator, and
``None`` is the default device, which ``torch.set_default_device("cuda")`` makes CUDA.

Stream caveat: the original call, as a side effect of its blocking copy, leaves the current stream drained when
it returns. Code that silently relied on that is no longer correct with these helpers, for example code that
afterwards reads on the host a buffer filled by an earlier ``non_blocking`` device-to-host copy, or that hands
the new tensor to another stream without ``other.wait_stream(current)`` / ``tensor.record_stream(other)``. The
returned tensor belongs to the current stream, like the original's; work on that stream is ordered after the
copy as before.

A large input allocates that much pinned host memory (served from the caching host allocator afterwards); pinned
memory is a scarcer resource than pageable memory.

This module is self-contained (it imports only ``torch`` and the standard library) so that
``h2dlint vendor-helper PATH`` can copy it verbatim into a project.
"""

from __future__ import annotations

import torch

__all__ = ["h2d_tensor", "h2d_as_tensor"]

# Exact types only: subclasses include numpy scalars (numpy.float64 is a float) and arbitrary sequences.
_PLAIN_DATA_TYPES = frozenset({list, tuple, torch.Size, bool, int, float, complex})
_CPU = torch.device("cpu")
# Dense dtypes that torch fills from Python data; the others (quantized, bit and sub-byte types) fall back.
_PLAIN_DTYPES = frozenset(
    getattr(torch, name)
    for name in (
        "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
        "float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128",
        "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
    )
    if hasattr(torch, name)
)


def h2d_tensor(data, *, dtype=None, device=None, requires_grad=False):
    """``torch.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)``, without a stream sync."""
    target = _pinned_copy_target(data, dtype, device, requires_grad)
    if target is None:
        return torch.tensor(data, **_dtype_kwarg(dtype), device=device, requires_grad=requires_grad)
    return _copy_through_pinned_memory(data, dtype, target, requires_grad)


def h2d_as_tensor(data, dtype=None, device=None):
    """``torch.as_tensor(data, dtype=dtype, device=device)``, without a stream sync."""
    target = _pinned_copy_target(data, dtype, device, False)
    if target is None:
        return torch.as_tensor(data, **_dtype_kwarg(dtype), device=device)
    # For plain data (never a tensor or an array) as_tensor builds exactly what tensor builds.
    return _copy_through_pinned_memory(data, dtype, target, False)


def _copy_through_pinned_memory(data, dtype, target, requires_grad, pin_memory=True):
    """Build ``data`` on the host, then copy it to ``target`` asynchronously on the current stream.

    The host stage takes the caller's ``requires_grad`` so that an integer dtype raises the original's error;
    the result is detached before the copy and marked again after it, so that it is a leaf like the original's.
    ``pin_memory`` is a parameter only so that tests on machines without CUDA can run this exact sequence.
    """
    host = torch.tensor(
        data, **_dtype_kwarg(dtype), device=_CPU, requires_grad=requires_grad, pin_memory=pin_memory
    )
    if requires_grad:
        return host.detach().to(target, non_blocking=True).requires_grad_()
    return host.to(target, non_blocking=True)


def _dtype_kwarg(dtype):
    # Passed only when given, so that dtype inference (int64 / default float / complex / bool) is untouched.
    return {} if dtype is None else {"dtype": dtype}


def _pinned_copy_target(data, dtype, device, requires_grad):
    """The CUDA device to copy to through pinned memory, or None when only the original call is equivalent."""
    if type(data) not in _PLAIN_DATA_TYPES or not _plain_arguments(dtype, requires_grad):
        return None
    if _tracing_or_dispatch_mode_active():
        return None
    target = _requested_device(device)
    if target is None or target.type != "cuda" or not torch.cuda.is_available():
        return None
    if target.index is not None and target.index != torch.cuda.current_device():
        return None
    if torch.cuda.is_current_stream_capturing():
        return None
    return target


def _plain_arguments(dtype, requires_grad):
    dense = dtype is None or (isinstance(dtype, torch.dtype) and dtype in _PLAIN_DTYPES)
    return dense and type(requires_grad) is bool


def _tracing_or_dispatch_mode_active():
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling") and compiler.is_compiling():
        return True
    dispatch_stack_depth = getattr(torch._C, "_len_torch_dispatch_stack", None)
    return dispatch_stack_depth is None or dispatch_stack_depth() > 0


def _requested_device(device):
    """``device`` as ``torch.tensor`` would resolve it; None when that cannot be known without the call itself."""
    default = _default_device()
    if default is None:
        return None  # a torch function mode would see (and could change) the original call
    if device is None:
        return default
    try:
        return torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        return None  # let the original call raise its own error


def _default_device():
    """The default device (``torch.set_default_device``, ``with torch.device(...)``), or None when a torch
    function mode other than that default device is active, or this torch cannot list the modes."""
    depth = getattr(torch._C, "_len_torch_function_stack", None)
    if depth is None:
        return None
    if depth() == 0:
        return _CPU
    modes_enabled = getattr(torch._C, "_is_torch_function_mode_enabled", None)
    if modes_enabled is None or not modes_enabled():
        return None  # under DisableTorchFunction the default device is not applied; leave that to torch
    try:
        from torch.overrides import _get_current_function_mode_stack
        from torch.utils._device import DeviceContext
    except ImportError:
        return None
    modes = _get_current_function_mode_stack()
    if not all(isinstance(mode, DeviceContext) for mode in modes):
        return None
    # A DeviceContext only fills in a missing `device=`, so it leaves the pinned path's calls alone.
    return modes[-1].device

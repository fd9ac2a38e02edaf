"""h2dlint.runtime: h2d_tensor / h2d_as_tensor return exactly what torch.tensor / torch.as_tensor return.

On a machine without CUDA every call takes the fallback (the original call), so the CPU properties check the
fallback's argument passing and, separately, the pinned path's exact build-and-copy sequence with the pinning
and the device copy left out. The decision between the two paths is tested with CUDA faked, asserting only the
decision. The tests marked `cuda` compare the real pinned path with torch on a GPU.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import enum
import os
import warnings

import numpy as np
import pytest
import torch
from cuda_sync import first_sync_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from h2dlint import runtime
from h2dlint.runtime import h2d_as_tensor, h2d_tensor

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ALL_DTYPES = sorted(
    {value for value in vars(torch).values() if isinstance(value, torch.dtype)}, key=str
)
COMMON_DTYPES = [
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
]


# ---------------------------------------------------------------------------------------------- strategies

python_scalars = st.one_of(
    st.booleans(),
    st.integers(-300, 300),
    st.integers(-(2**65), 2**65),  # beyond int64: the original raises, and so must the helper
    st.floats(width=64),
    st.complex_numbers(),
)
numpy_scalars = st.one_of(
    st.booleans().map(np.bool_),
    st.integers(-128, 127).map(np.int8),
    st.integers(-(2**31), 2**31 - 1).map(np.int32),
    st.floats(width=16).map(np.float16),
    st.floats(width=64).map(np.float64),
    st.complex_numbers(width=64).map(np.complex64),
)
tensor_scalars = st.one_of(
    st.booleans(), st.integers(-300, 300), st.floats(width=32), st.complex_numbers(width=64)
).map(torch.tensor)
elements = st.one_of(python_scalars, numpy_scalars, tensor_scalars)


@st.composite
def regular_nested(draw, leaves=python_scalars):
    """A rectangular nested list/tuple (never a bare leaf); a shape with a 0 gives empty lists."""
    shape = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    leaf = draw(st.one_of(st.just(leaves), st.sampled_from([st.booleans(), st.integers(-5, 5), st.floats()])))

    def build(dims):
        if not dims:
            return draw(leaf)
        items = [build(dims[1:]) for _ in range(dims[0])]
        return draw(st.sampled_from([list, tuple]))(items)

    return build(shape)


ragged_nested = st.lists(
    st.recursive(elements, lambda children: st.lists(children, max_size=3), max_leaves=6), max_size=3
)
plain_data = st.one_of(
    python_scalars,
    regular_nested(),
    regular_nested(elements),
    ragged_nested,
    st.lists(st.integers(0, 9), max_size=3).map(torch.Size),
)


def _view_variants(array):
    """The array itself and views with other strides: transposed, stepped, reversed, broadcast."""
    views = [array]
    is_tensor = isinstance(array, torch.Tensor)
    if array.ndim:
        views.append(array[::2])
        if not is_tensor:
            views.append(array[::-1])  # torch has no negative strides: the original raises on these
    if array.ndim >= 2:
        views.append(array.transpose(0, 1) if is_tensor else array.T)
    if array.ndim == 1 and is_tensor and len(array):
        views.append(array[:1].expand(3))
    return st.sampled_from(views)


numpy_arrays = npst.arrays(
    dtype=st.sampled_from([np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.uint16,
                           np.float16, np.float32, np.float64, np.complex64, np.complex128]),
    shape=npst.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
).flatmap(_view_variants)


@st.composite
def tensors(draw):
    dtype = draw(st.sampled_from(COMMON_DTYPES))
    base = torch.tensor(draw(st.one_of(st.integers(-5, 5), regular_nested(st.integers(-5, 5))))).to(dtype)
    tensor = draw(_view_variants(base))
    if dtype.is_floating_point and draw(st.booleans()):
        tensor = tensor.detach().requires_grad_()
    return tensor


any_data = st.one_of(plain_data, numpy_arrays, numpy_scalars, tensors())
dtypes = st.one_of(st.none(), st.sampled_from(ALL_DTYPES), st.sampled_from([float, int, bool, complex]))
pinned_path_dtypes = st.one_of(st.none(), st.sampled_from(sorted(runtime._PLAIN_DTYPES, key=str)))
cpu_devices = st.sampled_from([None, "cpu", "cpu:0", torch.device("cpu"), 0, "meta", "cuda", "cuda:0"])
cuda_devices = st.sampled_from(["cuda", "cuda:0", 0, torch.device("cuda"), torch.device("cuda", 0)])


# ---------------------------------------------------------------------------------------------- comparison


def _outcome(make):
    """What a call does: its result or exception, and the warnings it emits."""
    torch.set_warn_always(True)  # so that TORCH_WARN_ONCE warnings are emitted by every call, not the first
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = make()
            except Exception as error:  # the exception is part of the behaviour being compared
                result = error
    finally:
        torch.set_warn_always(False)
    return result, [(w.category, str(w.message)) for w in caught]


def _bytes(tensor):
    if tensor.numel() == 0:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "ComplexHalf support is experimental"
        flat = torch.empty(tensor.numel(), dtype=tensor.dtype).copy_(tensor.detach().reshape(-1))
    return flat.view(torch.uint8).tolist()


def _assert_same_tensor(actual, expected, data):
    assert type(actual) is type(expected)
    assert (actual.dtype, actual.device, actual.shape) == (expected.dtype, expected.device, expected.shape)
    assert (actual.stride(), actual.storage_offset()) == (expected.stride(), expected.storage_offset())
    assert (actual.requires_grad, actual.is_leaf) == (expected.requires_grad, expected.is_leaf)
    assert (actual.grad_fn is None) == (expected.grad_fn is None)
    assert actual.is_inference() == expected.is_inference()
    assert (actual is data) == (expected is data)
    assert _shares_memory(actual, data) == _shares_memory(expected, data)
    if expected.device.type != "meta":
        assert _bytes(actual) == _bytes(expected)  # bit-exact: NaN payloads and -0.0 included


def _shares_memory(tensor, data):
    if tensor.device.type == "meta" or tensor.numel() == 0:
        return False
    if isinstance(data, torch.Tensor):
        return tensor.untyped_storage().data_ptr() == data.untyped_storage().data_ptr()
    if isinstance(data, np.ndarray):
        return data.size > 0 and tensor.data_ptr() == data.__array_interface__["data"][0]
    return False


def _assert_same_behaviour(actual, expected, data):
    (actual_result, actual_warnings), (expected_result, expected_warnings) = actual, expected
    assert actual_warnings == expected_warnings
    if isinstance(expected_result, Exception):
        assert type(actual_result) is type(expected_result)
        assert str(actual_result) == str(expected_result)
    else:
        _assert_same_tensor(actual_result, expected_result, data)


def _dtype_kwarg(dtype):
    return {} if dtype is None else {"dtype": dtype}


def _check_tensor(data, dtype, device, requires_grad):
    expected = _outcome(lambda: torch.tensor(
        data, **_dtype_kwarg(dtype), device=device, requires_grad=requires_grad))
    actual = _outcome(lambda: h2d_tensor(data, **_dtype_kwarg(dtype), device=device, requires_grad=requires_grad))
    _assert_same_behaviour(actual, expected, data)


def _check_pinned_path_sequence(data, dtype, requires_grad):
    """The pinned path's own steps (host build with dtype only when given, detach, copy, requires_grad_),
    run on the CPU without pinning: everything but the pinning and the device copy."""
    expected = _outcome(lambda: torch.tensor(data, **_dtype_kwarg(dtype), requires_grad=requires_grad))
    actual = _outcome(lambda: runtime._copy_through_pinned_memory(
        data, dtype, torch.device("cpu"), requires_grad, pin_memory=False))
    _assert_same_behaviour(actual, expected, data)


def _check_as_tensor(data, dtype, device):
    expected = _outcome(lambda: torch.as_tensor(data, **_dtype_kwarg(dtype), device=device))
    actual = _outcome(lambda: h2d_as_tensor(data, **_dtype_kwarg(dtype), device=device))
    _assert_same_behaviour(actual, expected, data)


# ---------------------------------------------------------------------------------------------- CPU properties


# The same properties on CUDA, where the pinned path is really taken (cuda_devices are all CUDA targets).
DEVICE_SETS = [pytest.param(cpu_devices, id="cpu"), pytest.param(cuda_devices, id="cuda", marks=pytest.mark.cuda)]
DEFAULT_DEVICES = [pytest.param("meta", id="meta"), pytest.param("cuda", id="cuda", marks=pytest.mark.cuda)]


@pytest.mark.parametrize("devices", DEVICE_SETS)
@PROPERTY
@given(data=any_data, dtype=dtypes, requires_grad=st.booleans(), draw=st.data())
def test_h2d_tensor_behaves_like_torch_tensor(devices, data, dtype, requires_grad, draw):
    _check_tensor(data, dtype, draw.draw(devices, label="device"), requires_grad)


@pytest.mark.parametrize("devices", DEVICE_SETS)
@PROPERTY
@given(data=any_data, dtype=dtypes, draw=st.data())
def test_h2d_as_tensor_behaves_like_torch_as_tensor(devices, data, dtype, draw):
    _check_as_tensor(data, dtype, draw.draw(devices, label="device"))


@pytest.mark.parametrize("default_device", DEFAULT_DEVICES)
@PROPERTY
@given(data=plain_data, dtype=st.sampled_from(COMMON_DTYPES + [None]), requires_grad=st.booleans())
def test_under_a_default_device_the_helpers_behave_like_torch(default_device, data, dtype, requires_grad):
    with torch.device(default_device):
        _check_tensor(data, dtype, None, requires_grad)
        _check_as_tensor(data, dtype, None)


@contextlib.contextmanager
def _default_dtype(dtype):
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


# Contexts that change what torch.tensor returns: grad modes, and the dtype inferred for Python floats.
CONTEXTS = {
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
    "float64_default": lambda: _default_dtype(torch.float64),
}


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("devices", DEVICE_SETS)
@settings(PROPERTY, max_examples=50)
@given(data=plain_data, dtype=pinned_path_dtypes, requires_grad=st.booleans(), draw=st.data())
def test_in_grad_modes_and_under_another_default_dtype_the_helpers_behave_like_torch(
    context, devices, data, dtype, requires_grad, draw
):
    device = draw.draw(devices, label="device")
    with CONTEXTS[context]():
        _check_tensor(data, dtype, device, requires_grad)
        _check_as_tensor(data, dtype, device)
        _check_pinned_path_sequence(data, dtype, requires_grad)


@PROPERTY
@given(plain_data, pinned_path_dtypes, st.booleans())
def test_the_pinned_path_sequence_builds_what_torch_tensor_builds(data, dtype, requires_grad):
    assert type(data) in runtime._PLAIN_DATA_TYPES  # the data the pinned path is taken for
    _check_pinned_path_sequence(data, dtype, requires_grad)


@PROPERTY
@given(plain_data, pinned_path_dtypes)
def test_for_plain_data_the_pinned_path_builds_what_torch_as_tensor_builds(data, dtype):
    assert type(data) in runtime._PLAIN_DATA_TYPES
    expected = _outcome(lambda: torch.as_tensor(data, **_dtype_kwarg(dtype)))
    actual = _outcome(lambda: runtime._copy_through_pinned_memory(
        data, dtype, torch.device("cpu"), False, pin_memory=False))
    _assert_same_behaviour(actual, expected, data)


@pytest.mark.parametrize(
    "data, dtype, requires_grad",
    [
        ([1, 2], torch.int64, True),  # integer dtypes cannot require gradients: the same error text
        ([1, 2], None, True),
        ([[1, 2], [3]], None, False),  # ragged
        ([[1, 2], 3], None, False),
        (["a"], None, False),
        ([1.5], "float32", False),
        ([1.5], [], False),  # not even hashable
        ([1.5], None, 1),
        ([2**64], None, False),
        ([np.array([1, 2]), np.array([3, 4])], None, False),  # warns: a list of ndarrays is slow
        ([torch.tensor([1, 2])], None, False),
        (torch.tensor([1.0]), None, False),  # warns: copy-constructing from a tensor
        ([], None, False),
        ([[], []], torch.float16, False),
        ([True, 1, 2.5, 1j], None, False),
        ([np.float64(1.5), 2], None, False),  # a numpy scalar element changes the inferred dtype
        ([torch.tensor(1.5), 2], torch.bfloat16, True),
    ],
)
def test_sharp_edges_behave_like_torch_tensor(data, dtype, requires_grad):
    for device in (None, "cpu", 0, "cuda"):
        _check_tensor(data, dtype, device, requires_grad)


class _IntEnum(enum.IntEnum):
    ZERO = 0


@pytest.mark.parametrize(
    "device",
    [2**70, -1, 1.5, True, b"cuda", np.int64(0), _IntEnum.ZERO, "CUDA", "cuda:00", "cuda:-1", "cuda:0 ", "cuda:7"],
    ids=repr,
)
def test_odd_devices_behave_like_torch(device):
    _check_tensor([1.5, 2.5], None, device, False)
    _check_as_tensor([1.5, 2.5], None, device)


def test_the_sharp_edges_really_are_sharp():
    # The table above is only useful if torch really raises and warns on its rows.
    assert isinstance(_outcome(lambda: torch.tensor([1, 2], requires_grad=True))[0], RuntimeError)
    assert isinstance(_outcome(lambda: torch.tensor([[1, 2], [3]]))[0], ValueError)
    assert _outcome(lambda: torch.tensor(torch.tensor([1.0])))[1][0][0] is UserWarning
    assert _outcome(lambda: torch.tensor([np.array([1]), np.array([2])]))[1][0][0] is UserWarning
    assert torch.tensor([np.float64(1.5), 2]).dtype == torch.float64


# ---------------------------------------------------------------------------------------------- the decision


@pytest.fixture
def fake_cuda(monkeypatch):
    """CUDA reported available on device 0 and not capturing: only the decision can be tested this way."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    capturing = {"now": False}
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: capturing["now"])
    return capturing


def _target(data, device, dtype=None, requires_grad=False):
    return runtime._pinned_copy_target(data, dtype, device, requires_grad)


class _CudaArray:
    __cuda_array_interface__ = {"shape": (1,), "typestr": "<i8", "data": (0, False), "version": 3}


class _ListSubclass(list):
    pass


@pytest.mark.parametrize(
    "device, expected",
    [
        ("cuda", torch.device("cuda")),
        ("cuda:0", torch.device("cuda", 0)),
        (torch.device("cuda"), torch.device("cuda")),
        ("cuda:1", None),  # not the current device
        ("cpu", None),
        ("meta", None),
        (None, None),
        ("not-a-device", None),  # the original raises its own error
    ],
)
def test_only_the_current_cuda_device_takes_the_pinned_path(fake_cuda, device, expected):
    assert _target([1, 2], device) == expected


@pytest.mark.parametrize(
    "data",
    [
        [1, 2], (1, 2), torch.Size([1, 2]), 3, 2.5, True, 1j, [], [[torch.tensor(1)], [np.float64(2)]],
    ],
)
def test_plain_data_takes_the_pinned_path(fake_cuda, data):
    assert _target(data, "cuda") == torch.device("cuda")


@pytest.mark.parametrize(
    "data",
    [
        torch.tensor([1, 2]),
        torch.tensor([1.0, 2.0])[::2],
        np.array([1, 2]),
        np.float64(2.5),  # a float subclass
        np.complex128(1j),  # a complex subclass
        np.bool_(True),
        _CudaArray(),
        _ListSubclass([1, 2]),
        collections.namedtuple("Pair", "a b")(1, 2),
        "12",
    ],
)
def test_tensors_arrays_and_other_objects_fall_back(fake_cuda, data):
    assert _target(data, "cuda") is None


@pytest.mark.parametrize(
    "dtype, requires_grad",
    [(float, False), ("float32", False), ([], False), (torch.qint8, False), (torch.uint4, False), (None, 1)],
)
def test_arguments_torch_would_reject_or_convert_fall_back(fake_cuda, dtype, requires_grad):
    assert _target([1.0], "cuda", dtype, requires_grad) is None
    assert _target([1.0], "cuda", torch.float16, True) == torch.device("cuda")


def test_graph_capture_falls_back(fake_cuda):
    fake_cuda["now"] = True
    assert _target([1, 2], "cuda") is None


def test_no_cuda_falls_back(fake_cuda, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _target([1, 2], "cuda") is None


def test_torch_compile_tracing_falls_back(fake_cuda, monkeypatch):
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert _target([1, 2], "cuda") is None


def test_the_default_device_decides_when_device_is_none(fake_cuda):
    with torch.device("cuda"):
        assert _target([1, 2], None) == torch.device("cuda")
        assert _target([1, 2], "cpu") is None
        with torch._C.DisableTorchFunction():  # the default device is not applied there
            assert _target([1, 2], None) is None
    with torch.device("meta"):
        assert _target([1, 2], None) is None


def test_set_default_device_decides_when_device_is_none(fake_cuda):
    torch.set_default_device("cuda")
    try:
        assert _target([1, 2], None) == torch.device("cuda")
    finally:
        torch.set_default_device(None)
    assert _target([1, 2], None) is None


class _RecordingFunctionMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class _RecordingDispatchMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def test_other_torch_modes_see_the_original_call(fake_cuda):
    with _RecordingFunctionMode():
        assert _target([1, 2], "cuda") is None
    with torch.device("cuda"), _RecordingFunctionMode():
        assert _target([1, 2], None) is None
    with _RecordingDispatchMode():
        assert _target([1, 2], "cuda") is None
    assert _target([1, 2], "cuda") == torch.device("cuda")


def test_the_helpers_hand_the_target_to_the_pinned_path(fake_cuda, monkeypatch):
    calls = []
    monkeypatch.setattr(runtime, "_copy_through_pinned_memory", lambda *args: calls.append(args) or "copied")
    assert h2d_tensor([1.0], dtype=torch.float16, device="cuda:0", requires_grad=True) == "copied"
    assert h2d_as_tensor((1, 2), torch.int32, "cuda") == "copied"
    assert calls == [
        ([1.0], torch.float16, torch.device("cuda", 0), True),
        ((1, 2), torch.int32, torch.device("cuda"), False),
    ]


def test_the_source_vendor_helper_copies_is_this_module_and_stands_alone():
    # `h2dlint vendor-helper` copies this file into projects that need not have h2dlint or libcst.
    from h2dlint.faces.cli import RUNTIME_SOURCE

    assert os.path.samefile(RUNTIME_SOURCE, runtime.__file__)
    tree = ast.parse(open(RUNTIME_SOURCE, encoding="utf-8").read())
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert {"h2d_tensor", "h2d_as_tensor"} <= defined
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported and {name.split(".")[0] for name in imported} <= {"__future__", "torch"}


# ---------------------------------------------------------------------------------------------- CUDA


@pytest.mark.cuda
def test_on_cuda_plain_data_takes_the_pinned_path():
    assert _target([1, 2], "cuda") == torch.device("cuda")
    assert _target([1, 2], 0) == torch.device("cuda", 0)


def _syncs(make):
    return first_sync_error(make) is not None


@pytest.mark.cuda
@pytest.mark.parametrize("device", ["cuda", "cuda:0", 0, None])
def test_on_cuda_the_helpers_do_not_sync_where_torch_does(device):
    with torch.device("cuda") if device is None else contextlib.nullcontext():
        assert _syncs(lambda: torch.tensor([1, 2, 3], device=device))
        assert _syncs(lambda: torch.as_tensor([1, 2, 3], device=device))
        assert not _syncs(lambda: h2d_tensor([1, 2, 3], device=device))
        assert not _syncs(lambda: h2d_as_tensor([1, 2, 3], device=device))
        assert not _syncs(lambda: h2d_tensor([[1.5], [2.5]], dtype=torch.bfloat16, device=device, requires_grad=True))


@pytest.mark.cuda
def test_on_cuda_the_pinned_block_outlives_the_queued_copy():
    # A long kernel keeps the copies queued while the host builds and drops hundreds of pinned temporaries;
    # a block reused before its copy ran would show up as a wrong value.
    torch.cuda._sleep(200_000_000)
    copies = [h2d_tensor([step] * 257, device="cuda") for step in range(300)]
    torch.cuda.synchronize()
    assert [copy.unique().tolist() for copy in copies] == [[step] for step in range(300)]


@pytest.mark.cuda
def test_on_cuda_the_copy_is_on_the_current_stream():
    # The default stream is kept busy; the copy and its reader run on a side stream. Had the copy gone to the
    # default stream, the side stream's sum would read memory not yet written.
    side = torch.cuda.Stream()
    # Run the whole sequence once first, so that the timed one is in steady state: a pinned block of a new size
    # comes from cudaHostAlloc, and the first launch of a kernel loads its module lazily; both synchronise the
    # whole device (on an H200 with torch 2.11 the first `.sum()` on the side stream waited for the default one).
    # Other values than the timed copy's, so that a block the caching allocator hands back holds no 7s.
    with torch.cuda.stream(side):
        h2d_tensor([0] * 64, device="cuda").sum()
    torch.cuda.synchronize()
    torch.cuda._sleep(1_000_000_000)  # about 0.5 s at 2 GHz
    with torch.cuda.stream(side):
        total = h2d_tensor([7] * 64, device="cuda").sum()
    side.synchronize()
    default_still_busy = not torch.cuda.default_stream().query()
    with torch.cuda.stream(side):
        assert total.item() == 7 * 64
    assert default_still_busy


@pytest.mark.cuda
def test_under_graph_capture_the_pinned_path_is_not_taken():
    static = torch.zeros(4, device="cuda")
    graph = torch.cuda.CUDAGraph()
    decisions = []
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        decisions.append(_target([1, 2], "cuda"))
        static.add_(1)
    graph.replay()
    torch.cuda.synchronize()
    assert decisions == [None]
    assert _target([1, 2], "cuda") == torch.device("cuda")
    assert static.tolist() == [1.0] * 4

"""The tensor operations the placement analysis (`facts.placement`) knows by name: which build tensors, which
keep their input's placement, and which only a tensor has (the D2H rules' test of "a tensor by construction")."""

from __future__ import annotations

# Factories that build a new tensor on the device given by `device=` (or the context), else on the host.
FACTORIES = frozenset(
    "torch." + name
    for name in (
        "tensor as_tensor asarray zeros ones full empty arange range linspace logspace eye rand randn randint "
        "randperm empty_strided tril_indices triu_indices"
    ).split()
)
DATA_BUILDERS = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"})  # placed like their data, when a tensor
LIKE_FACTORIES = frozenset(
    "torch." + n for n in "zeros_like ones_like full_like empty_like rand_like randn_like".split()
)
JOINS = frozenset("torch." + n for n in "cat concat concatenate stack hstack vstack".split())
# torch functions that return a tuple of tensors built from all their tensor arguments, which must share a device.
MESHES = frozenset({"torch.meshgrid", "torch.broadcast_tensors"})
# Methods whose result shares the receiver's memory, so a pinned receiver gives a pinned view.
VIEW_METHODS = frozenset(
    "view view_as narrow expand expand_as permute transpose t squeeze unsqueeze unflatten select detach "
    "as_strided unfold split chunk unbind movedim diagonal fill_ zero_ copy_ index_copy_ index_fill_ "
    "masked_fill_ clamp_ add_ sub_ mul_ div_ requires_grad_ share_memory_".split()
)
# Methods that compute a new tensor where the receiver is (or return it unchanged): a pinned receiver may or
# may not give a pinned result, so it gives the host without knowing which memory.
SAME_PLACE_METHODS = frozenset(
    "long int float half bfloat16 bool double short byte char contiguous clone reshape flatten repeat flip roll "
    "cumsum cumprod sum prod mean max min amax amin abs neg add sub mul div remainder index_select gather "
    "masked_fill where sort argsort topk clamp round floor ceil exp log sqrt type_as pad "
    # reductions, comparisons and elementwise functions: a new tensor where the input is
    "argmax argmin any all eq ne lt le gt ge logical_and logical_or logical_not logical_xor isnan isinf isfinite "
    "softmax log_softmax sigmoid tanh relu norm std var median diff cummax cummin minimum maximum sign square pow "
    "rsqrt log1p expm1 trunc nonzero argwhere unique masked_select count_nonzero "
    # indexing, scattering and linear algebra: only tensors have these methods
    "repeat_interleave scatter scatter_add scatter_reduce index_add index_put index_fill masked_scatter bincount "
    "tril triu mm bmm matmul baddbmm addmm fmod floor_divide bitwise_and bitwise_or bitwise_xor bitwise_not "
    "reciprocal sin cos erf log2 exp2 unique_consecutive searchsorted cumsum_ nan_to_num".split()
)
# Of those, the ones that may give the receiver itself or a view of it (a cast to the dtype it has, `contiguous()`
# of a contiguous tensor, a `reshape` that can view): a pinned receiver may give a pinned result. Every other one
# allocates its result, and PyTorch allocates it without the pin flag: pageable, on the host.
MAY_RETURN_RECEIVER = frozenset(
    "long int float half bfloat16 bool double short byte char contiguous reshape flatten type_as".split()
)
# torch functions whose result is where their first argument (the input) is: `torch.sum(x)`,
# `torch.where(m, a, b)`.
FOLLOW_INPUT = frozenset(
    "torch." + name
    for name in (
        "sum prod mean max min amax amin argmax argmin any all abs neg where eq ne lt le gt ge logical_and logical_or "
        "logical_not logical_xor isnan isinf isfinite isin softmax log_softmax sigmoid tanh relu cumsum cumprod "
        "gather index_select masked_select masked_fill nonzero argwhere unique topk sort argsort clamp minimum "
        "maximum round floor ceil exp log sqrt flip roll narrow reshape flatten squeeze unsqueeze transpose permute "
        "diff searchsorted bucketize count_nonzero repeat_interleave remainder add sub mul div split chunk unbind "
        "tensor_split "
        "nn.functional.softmax nn.functional.log_softmax nn.functional.pad nn.functional.one_hot"
    ).split()
)
# Of those, the ones whose other positional arguments are tensors too, broadcast with the input: the result is
# where a device operand is (a host operand may be a 0-dim scalar, which mixes with any device).
ELEMENTWISE = frozenset(
    "torch." + name
    for name in (
        "where add sub mul div remainder eq ne lt le gt ge logical_and logical_or logical_xor minimum maximum isin "
        "searchsorted bucketize"
    ).split()
)
# Of those, the ones PyTorch computes elementwise over broadcast operands (as operators do), which reject a host
# operand with a dimension beside a device one (`isin`, `searchsorted` and `bucketize` have their own rules).
BROADCASTING = ELEMENTWISE - {"torch.isin", "torch.searchsorted", "torch.bucketize"}
# `h2dlint.runtime`'s helpers, which fixes write in place of `torch.tensor(..., device=)`: placed as that was.
HELPERS = frozenset({"h2d_tensor", "h2d_as_tensor"})
NEW_METHODS = frozenset("new_tensor new_zeros new_ones new_full new_empty".split())
# What only a tensor gives: the methods and torch functions above (`facts.placement` follows them) and moves.
# (`split` is left out: strings have it too.)
TENSOR_METHODS = (VIEW_METHODS | SAME_PLACE_METHODS | NEW_METHODS | frozenset("cpu cuda to pin_memory".split())) - {
    "split"
}
TENSOR_FUNCTIONS = FACTORIES | LIKE_FACTORIES | JOINS | MESHES | FOLLOW_INPUT | frozenset({"torch.from_numpy"})

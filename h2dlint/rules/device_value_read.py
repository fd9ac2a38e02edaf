"""HTD201: a device tensor's value read into Python (`.item()`, `.tolist()`, `int(t)`, and the places where PyTorch
takes a number: `facts.number_arguments`), in hot code."""

from __future__ import annotations

import ast
from typing import Optional

from h2dlint.facts.number_arguments import number_arguments, slice_bounds
from h2dlint.rules.base import Invalid, Match, Valid
from h2dlint.rules.context import Context, NodeKind
from h2dlint.rules.device_to_host import (
    DEFER_REMEDY,
    DeviceToHostRule,
    device_operand,
    sync_match,
)

HOST_NUMBER_REMEDY = (
    "keep the number on the host where it is computed (a host mirror, a Python counter), or " + DEFER_REMEDY
)
_READ_METHODS = ("item", "tolist")

# A class that keeps the host mirror of its field, for the examples that read the field.
_METADATA_WITH_MIRROR = """
            import torch
            from dataclasses import dataclass

            @dataclass
            class Metadata:
                seq_lens: torch.Tensor
                seq_lens_cpu: torch.Tensor
"""


class DeviceValueRead(DeviceToHostRule):
    code = "HTD201"
    name = "device-value-read"
    summary = "`.item()`, `.tolist()` or `int(t)` of a device tensor in hot code: a device-to-host sync."
    triggers = ()
    looks_at = frozenset({NodeKind.CALL, NodeKind.SUBSCRIPT, NodeKind.SUBSCRIPT_TARGET})

    what_it_does = """
        Checks for a device tensor's value read into Python, in code that runs per step or per request:
        - `t.item()` and `t.tolist()`;
        - `int(t)`, `float(t)` and `complex(t)`;
        - a slice bound (`x[:n]`, `x[a:b] = v`), a `range(n)` bound, a `torch.arange`/`torch.linspace` bound;
        - the fill value of `torch.full(size, t)`, `torch.full_like(x, t)` and `x.new_full(size, t)`;
        - a size: of `torch.zeros(n, d)` and the other factories, of `x.new_zeros(n)` and its kin, of
          `x.view(n, -1)`, `x.reshape`, `x.expand` and `x.repeat`, and the start and length of `x.narrow`.

        The tensor must be known to be on the device (see Known problems). `bool(t)` and conditions are HTD204's,
        `.cpu()` is HTD205's.
        """
    example = """
        def forward(self, batch):
            n = batch.seq_lens.max().item()
            return batch.seq_lens_cpu[:n]
        """
    use_instead = """
        def forward(self, batch):
            n = int(batch.seq_lens_cpu.max())
            return batch.seq_lens_cpu[:n]
        """


    VALID = (
        # Asserted to be on the host, before the assertion too (the same binding); and a device kept in a local
        # (`device = maps.device`) is where that tensor is.
        Valid("""
            import torch

            def forward(maps, n):
                device = maps.device
                assert maps.device.type == "cpu"
                valid = maps >= 0
                starts = torch.zeros(n, device=device)
                return maps[valid].tolist(), starts.tolist()
            """),
        # Rebound inside the branch of a device test: the test no longer says where `x` is.
        Valid("""
            import torch

            def forward(x, cond):
                if x.is_cuda:
                    if cond:
                        x = torch.zeros(3)
                    else:
                        x = torch.ones(3)
                    return x.item()
                return 0
            """),
        # A local that copies the host mirror is the host mirror, whatever its sliced name suggests.
        Valid("""
            import torch

            def split_decodes(metadata, threshold):
                query_start_loc = metadata.query_start_loc_cpu
                query_lens = query_start_loc[1:] - query_start_loc[:-1]
                return query_lens[0].item() > threshold
            """),
        # The data a function stores as its own host mirror is that host data, not the device copy.
        Valid("""
            import torch

            class Batch:
                def prepare_for_decode(self, seq_lens):
                    self.seq_lens_cpu = seq_lens
                    return seq_lens.tolist()
            """),
        # The `else` of a test that the tensor is not on the CPU is on the host: no sync.
        Valid("""
            import torch

            def forward(out_gpu):
                if out_gpu.device.type != "cpu":
                    return out_gpu
                else:
                    return out_gpu.sum().item()
            """),
        # Unknown placement: a parameter may be on the host, and so may a field of a class that keeps no
        # host mirror of it.
        Valid("""
            import torch
            from dataclasses import dataclass

            @dataclass
            class Metadata:
                seq_lens: torch.Tensor
                num_reqs: int

            def forward(lens, meta: Metadata):
                return lens.max().item(), meta.seq_lens.max().item()
            """),
        # `device=` a local that names the CPU, or may: only some branch sets it to an accelerator.
        Valid("""
            import torch

            def forward(x, n, flag):
                device = "cpu"
                where = "cpu"
                if flag:
                    where = "cuda"
                a = torch.zeros(n, device=device)
                return a.item(), torch.zeros(n, device=where).item(), x.to(where).item()
            """),
        # A host tensor, a pinned buffer read after its event (the designed wait), a NumPy array.
        Valid("""
            import torch

            class Runner:
                def __init__(self, n):
                    self.out_host = torch.empty(n, dtype=torch.int64, pin_memory=True)

                def forward(self, ids, done):
                    done.synchronize()
                    lens = torch.tensor(ids)
                    return self.out_host.tolist(), lens.sum().item(), lens.numpy().tolist()
            """),
        # Numbers named like device things are numbers: `num_gpu`, `world_size_gpu`.
        Valid("""
            import torch

            def forward(x, num_gpu):
                for i in range(num_gpu):
                    x = x[: int(num_gpu)]
                return x
            """),
        # `.to("cpu")` first: HTD205 reports the copy, not the read of its host result.
        Valid("""
            import torch

            def forward(n, dev):
                lens = torch.zeros(n, device=dev)
                return lens.cpu().tolist()
            """),
        # A block the project allows syncs in (`sync-allowed-contexts`, default `gpu_sync_allowed`).
        Valid("""
            import torch
            from vllm.utils import gpu_sync_allowed

            def forward(logits):
                ids = logits.argmax(-1).cuda()
                with gpu_sync_allowed():
                    return ids.tolist()
            """),
        # One-time code, and suppression on the line.
        Valid("""
            import torch

            def load_model(dev):
                return torch.ones(4, device=dev).sum().item()

            def forward(dev):
                return torch.ones(4, device=dev).sum().item()  # noqa: HTD201
            """),
        # Sizes read from a shape are host numbers, and so is `numel()`: only a tensor is read from the device.
        Valid("""
            import torch

            def forward(d, dev):
                x = torch.zeros(4, d, device=dev)
                rows = torch.empty((x.shape[0], x.size(1)), device=dev)
                return rows.view(x.shape), x.new_zeros(x.numel()), x.narrow(0, 0, x.shape[0] - 1)
            """),
        # `fill_(t)` and `masked_fill` with a number take no number from the device.
        Valid("""
            import torch

            def forward(n, dev):
                top = torch.zeros(1, device=dev).max()
                return torch.empty(n, device=dev).fill_(top)
            """),
        # Not a submodule's activations: a tokenizer the class builds, and one item unpacked from what a module
        # returns (beside its activations, a module may return sizes it keeps on the host).
        Valid("""
            import torch
            from torch import nn

            class Tower(nn.Module):
                def __init__(self, cfg):
                    super().__init__()
                    self.merger = Merger(cfg)
                    self.tokenizer = AutoTokenizer(cfg)

                def forward(self, x, text):
                    h, sizes = self.merger(x)
                    return h, sizes.tolist(), self.tokenizer(text).tolist()
            """),
        # Read only on the way to an exception (`one-time-error-path`): an assert's message, a `raise`, and a
        # branch or `except` handler that ends in `raise`. The assert's test itself runs every step (HTD204).
        Valid("""
            import torch

            def forward(n, dev):
                lens = torch.zeros(n, device=dev)
                assert n > 0, f"empty batch: {lens.tolist()}"
                if n > 1024:
                    print("too long:", lens.tolist())
                    raise ValueError(f"lengths {lens.tolist()}")
                try:
                    return lens.view(n // 2, 2)
                except RuntimeError:
                    print("odd lengths:", lens.tolist())
                    raise
            """),
        # NumPy computes on the host: its arrays are no device tensors, whatever a model names them.
        Valid("""
            import numpy as np

            class Model:
                def forward(self, blocks):
                    positions = np.concatenate(blocks, axis=1)
                    return int(positions.max())
            """),
    )
    INVALID = (
        # What a submodule the class builds returns is an activation, on the device (`placement-submodule-output`).
        Invalid(
            """
            import torch
            from torch import nn

            class Head(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.proj = nn.Linear(8, 8)

                def forward(self, x):
                    scores = self.proj(x)
                    return scores.argmax(-1).tolist()  # HTD201
            """,
            column=16,
            reason="is what the submodule `self.proj` (`Linear`) returns",
        ),
        # An assertion is a device test too: after `assert x.is_cuda`, `x` is on the device.
        Invalid(
            """
            import torch

            def forward(ids):
                assert ids.is_cuda
                return ids.tolist()  # HTD201
            """,
            column=12,
            reason="is tested to be on the device",
        ),
        # `None` as one alternative (`x.to(dev) if x is not None else None`) is no tensor: the other decides.
        Invalid(
            """
            import torch

            def forward(probs, top_ks):
                ks = top_ks.to(probs.device) if top_ks is not None else None
                if ks is not None and bool(torch.all(ks >= 1).item()):  # HTD201
                    return ks
            """,
            column=32,
            reason="is moved to the device",
        ),
        # A field of a class that also keeps its host mirror is the device copy; the class may be in another
        # file, found through the imports.
        Invalid(
            _METADATA_WITH_MIRROR + """
            def forward(meta: Metadata):
                return int(meta.seq_lens.max().item())  # HTD201
            """,
            column=16,
            reason="Use the host mirror `meta.seq_lens_cpu` instead",
        ),
        # A method of an object of known class returns what that method returns.
        Invalid(
            """
            import torch

            class Pool:
                def __init__(self, n, dev):
                    self.free = torch.arange(n, device=dev)

                def alloc(self, k):
                    return self.free[:k]

            def forward(pool: Pool, k):
                return pool.alloc(k).tolist()  # HTD201
            """,
            column=12,
            reason="is built on the device (`device=dev`)",
        ),
        # A tensor field of a named result (`first = m.max(dim=-1)`) lives where the result does: vLLM 0.6's
        # n-gram proposer read `first_match.values.item()` once per sequence per step.
        Invalid(
            """
            import torch

            def forward(ids, pattern):
                matches = (ids.cuda() == pattern).all(dim=-1)
                first_match = matches.max(dim=-1)
                if first_match.values.item():  # HTD201
                    return first_match.indices
            """,
            column=8,
            reason="`first_match.values` is moved to the device by `.cuda(...)`",
        ),
        # One joined tensor on the device puts the join there: PyTorch joins tensors of one device only.
        Invalid(
            """
            import torch

            def forward(ids, extra, dev):
                return torch.cat([ids.to(dev), extra]).tolist()  # HTD201
            """,
            column=12,
            reason="is moved to the device by `.to(...)` at line 4",
        ),
        # `getattr(obj, "name", None)` reads the attribute `obj.name`.
        Invalid(
            _METADATA_WITH_MIRROR + """
            def forward(meta: Metadata):
                lens = getattr(meta, "seq_lens", None)
                return lens.tolist() if lens is not None else []  # HTD201
            """,
            column=12,
            reason="has a host mirror `Metadata.seq_lens_cpu`",
        ),
        Invalid(
            """
            import torch

            class Runner:
                def forward(self, t):
                    x = t.to(self.device)
                    if x.is_cuda:  # not CUDA is not the host: XPU, NPU
                        return 0
                    return int(x.max().item())  # HTD201
            """,
            column=20,
            reason="`x.max()` is moved to the device",
        ),
        Invalid(
            """
            import torch

            def forward(prefix_lens, extend_lens, dev):
                per_query = prefix_lens.to(dev).repeat_interleave(extend_lens)
                return int(per_query.max().item())  # HTD201
            """,
            column=16,
            reason="`per_query.max()` is moved to the device",
        ),
        Invalid(
            """
            import torch

            def forward(logits, dev):
                ids = logits.argmax(-1).to(dev)
                return ids.tolist()  # HTD201
            """,
            column=12,
            reason="`.tolist()` of a device tensor copies to the host and waits for the device",
        ),
        Invalid(
            """
            import torch

            def forward(batch):
                n = batch.seq_lens.max().item()  # HTD201
                return batch.seq_lens_cpu[:n]
            """,
            reason="Use the host mirror `batch.seq_lens_cpu` instead",
        ),
        Invalid(
            """
            import torch

            class Sampler:
                def __init__(self, n, dev):
                    self.counts = torch.zeros(n, dtype=torch.int32, device=dev)

                def sample(self, probs):
                    total = int(self.counts.sum())  # HTD201
                    return probs[:total]
            """,
            reason="`self.counts.sum()` is built on the device (`device=dev`) at line 5",
        ),
        Invalid(
            """
            import torch

            def forward(hidden, dev):
                lens = torch.ones(4, device=dev)
                n = lens.sum()
                return hidden[:n]  # HTD201
            """,
            reason="a slice bound from a device tensor",
        ),
        Invalid(
            """
            import torch

            def forward(hidden, dev):
                end = torch.ones(4, device=dev).sum()
                return torch.arange(end, device=dev)  # HTD201
            """,
            reason="a `torch.arange` bound",
        ),
        Invalid(
            """
            import torch

            def forward(tokens_gpu):
                for i in range(tokens_gpu.max()):  # HTD201
                    pass
            """,
            reason="`tokens_gpu.max()` is named like a device tensor (`*_gpu`)",
        ),
        Invalid(
            """
            import torch

            def forward(n, logits_gpu):
                return torch.full((n,), logits_gpu.max(), device=logits_gpu.device)  # HTD201
            """,
            reason="the fill value from a device tensor",
        ),
        Invalid(
            """
            import torch

            def forward(hidden, dev):
                total = torch.ones(4, dtype=torch.int64, device=dev).sum()
                return hidden.new_zeros((total, hidden.shape[1]))  # HTD201
            """,
            reason="a size from a device tensor",
        ),
    )

    def check_call(self, call: ast.Call, context: Context) -> Optional[Match]:
        func = call.func
        qualified = context.names.qualify(func)
        if qualified is None and isinstance(func, ast.Attribute) and func.attr in _READ_METHODS:
            if call.args or call.keywords:
                return None
            return self._read(call, func.value, f"`.{func.attr}()` of a device tensor", context, False)
        for operand, what in number_arguments(call, qualified):
            found = self._read(call, operand, what, context)
            if found is not None:
                return found
        return None

    def check_subscript(self, subscript: ast.Subscript, context: Context) -> Optional[Match]:
        for bound in slice_bounds(subscript.slice):
            found = self._read(subscript, bound, "a slice bound from a device tensor", context)
            if found is not None:
                return found
        return None

    check_subscript_target = check_subscript

    def _read(
        self, node: ast.AST, expr: Optional[ast.expr], what: str, context: Context, may_be_number: bool = True
    ) -> Optional[Match]:
        if expr is None or isinstance(expr, ast.Constant):
            return None
        operand = device_operand(expr, context, may_be_number)
        if operand is None:
            return None
        return sync_match(node, what, operand, HOST_NUMBER_REMEDY)

"""The guards that make a branch of hot code run once, not per step (`GUARD_HEURISTICS`): cached builds, memo
tables, debugging, capture and CPU-platform switches, once flags and error paths. The walk
(`h2dlint.checker.walk_flow`) finds them with `h2dlint.facts.guards`. Part of the registry of
`h2dlint.facts.heuristics`."""

from __future__ import annotations

from typing import Tuple

from h2dlint.facts.heuristic_types import Effect, Group, Heuristic

_ONCE = Effect.ONE_TIME

GUARD_HEURISTICS: Tuple[Heuristic, ...] = (
    Heuristic(
        "one-time-guard-none", _ONCE, Group.GUARD,
        "`if self._x is None:` (or `getattr(self, '_x', None) is None`) builds a cached attribute once, unless a "
        "function other than `__init__` or a one-time one sets it back to None (then once per such call), or the "
        "class is a record (a dataclass or `NamedTuple`): engines build their metadata records per step, so a "
        "lazily computed `seq_lens_cpu` property copies once per step",
        evidence=(
            "sglang multimodal/processors/kimi_k25.py:506",
            "vllm models/deepseek_v41/nvidia/model_state.py:341",
            "sglang multimodal/processors/kimi_k25.py:511",
        ),
    ),
    Heuristic(
        "one-time-guard-hasattr", _ONCE, Group.GUARD,
        "`if not hasattr(self, '_x'):` builds `_x` once; so does `if not hasattr(layer, '_x'):` whose block sets"
        " `layer._x`",
    ),
    Heuristic(
        "one-time-error-path", _ONCE, Group.GUARD,
        "the exception a `raise` builds, an `assert`'s message, and an `if` branch or `except` handler that ends in "
        "`raise` with no other way out run only when something has gone wrong: an error path, not per step",
    ),
    Heuristic(
        "one-time-guard-debug", _ONCE, Group.GUARD,
        "`if self.debug_mode:`, `if envs.VLLM_DEBUG_WORKSPACE:`: a debugging switch, off when serving",
        ("*debug*",),
    ),
    Heuristic(
        "one-time-guard-cpu-platform", _ONCE, Group.GUARD,
        "`if _is_cpu:`, `if current_platform.is_cpu():`: the branch a CPU-only deployment takes, where every "
        "tensor is on the host; it never runs beside an accelerator (a tensor's own `t.is_cpu` is no such test)",
        ("is_cpu",),
        evidence=("sglang layers/moe/fused_moe_native.py:82",),
    ),
    Heuristic(
        "one-time-guard-rescaling", _ONCE, Group.GUARD,
        "`if not ElasticEPStateManager.is_scaling(): return`, `if self.scaling_in_progress:`: what follows runs only "
        "while the deployment adds, drops or recovers ranks, a rare event that ends when the new ranks have joined, "
        "not in the steady state a step runs in",
        ("is_scaling", "is_rescaling", "is_scaling_up", "is_scaling_down", "scaling_in_progress",
         "*_scaling_in_progress"),
        evidence=(
            "sglang model_executor/model_runner.py:2489",
            "sglang elastic_ep/elastic_ep.py:534",
            "sglang eplb/expert_location.py:289",
        ),
    ),
    Heuristic(
        "one-time-guard-capture", _ONCE, Group.GUARD,
        "`if in_capture:`, `x if torch.cuda.is_current_stream_capturing() else y`: that branch runs while a CUDA "
        "graph is captured, once per graph; replays never run Python (capturing hidden states, "
        "`capture_aux_hidden_states`, is another thing and does not match)",
        ("in_capture", "for_capture", "is_capturing", "is_current_stream_capturing", "is_graph_capture",
         "is_capture_mode", "get_is_capture_mode", "for_cudagraph_capture", "for_cuda_graph_capture"),
    ),
    Heuristic(
        "one-time-guard-memo", _ONCE, Group.GUARD,
        "`if t is None:` storing `t` in a cache or back in its attribute, or filling the table `t` was looked up "
        "in (`t = cache.get(key)`), `if key not in cache:` filling it: once per key (an attribute that a function "
        "other than `__init__` or a one-time one sets back to None is rebuilt after each such call)",
        evidence=(
            "sglang layers/attention/dsa_backend.py:3129",
            "vllm model_executor/models/diffusion_gemma.py:804",
            "sglang models/qwen2_moe.py:223",
            "vllm models/minimax_m3/nvidia/msa_cutlass_sparse_decode.py:137",
        ),
    ),
    Heuristic(
        "one-time-guard-grows-on-demand", _ONCE, Group.GUARD,
        "`if n > self.max: self.max = n; ...`: runs only when a new maximum arrives",
        evidence=(
            "sglang models/minicpmv.py:309",
            "vllm model_executor/models/minicpmv.py:202",
            "sglang models/minicpmv.py:431",
            "vllm model_executor/models/minicpmv.py:330",
        ),
    ),
    Heuristic(
        "one-time-guard-once-flag", _ONCE, Group.GUARD,
        "`if not X.done:` where the module only ever sets `done` to True: runs until the flag is set",
        evidence=(
            "lmdeploy pytorch/backends/dlinfer/ascend/op_backend.py:128",
            "lmdeploy pytorch/backends/dlinfer/ascend/op_backend.py:129",
            "lmdeploy pytorch/backends/dlinfer/ascend/op_backend.py:130",
            "lmdeploy pytorch/backends/dlinfer/ascend/op_backend.py:131",
        ),
    ),
    Heuristic(
        "one-time-lazy-build", _ONCE, Group.GUARD,
        "after `if self._x is not None: return ...`, the code that sets `self._x` runs on the first call",
        evidence=(
            "sglang layers/moe/moe_runner/flashinfer_cutedsl.py:120",
            "vllm models/kimi_k3/nvidia/ops/recoverssm.py:835",
            "vllm models/kimi_k3/nvidia/ops/recoverssm.py:842",
            "vllm models/kimi_k3/nvidia/ops/recoverssm.py:852",
        ),
    ),
    Heuristic(
        "one-time-memo-lookup", _ONCE, Group.GUARD,
        "after `if (v := CACHE.get(key)) is not None: return v`, the code that fills `CACHE` runs once per key",
        evidence=(
            "vllm lora/ops/triton_ops/fused_moe_lora_fp8_op.py:92",
            "vllm lora/ops/triton_ops/lora_expand_fp8_op.py:38",
            "vllm lora/ops/triton_ops/lora_shrink_fp8_op.py:65",
        ),
    ),
)

"""Every heuristic that makes code hot (per step or per request), cold (one-time) or one-time within a
function, as named data: an id, what it does, a one-line rationale, and the census rows that justify it.

The ids are what `explain` and the JSON output name, and what `disable-heuristics` (`--disable-heuristics`)
switches off. Ids read `<effect>-<what>`: `hot-name-forward`, `cold-decorator-cache`, `one-time-guard-hasattr`.
Entries are grouped (`Group`) so that a preset can switch a whole group (every cold name list, every guard).

`evidence` cites up to four rows of the blind censuses (`benchmarks/engine_labels.tsv`; for what the device-to-host
rules alone show, `d2h_labels.tsv`, `d2h_finding_labels.tsv` and `d2h_fresh_labels.tsv`), as `engine path:line`,
whose verdict only that heuristic decides: switched off, a hot heuristic leaves per-step or per-request sites
unreported, a cold or one-time one reports one-time sites (or never-runs, not-h2d and not-sync ones).
`benchmarks/heuristic_evidence.py` finds them on the sglang, vllm and lmdeploy trees;
`benchmarks/heuristic_evidence.txt` is its full output, every changed site with its label. An entry without rows
decides no labelled site alone there: other heuristics reach the same verdict there (a call chain from another hot
function, say), the sites it decides carry other labels (`hot-custom-op` reports only never-runs sites there), or
it is the author's word (markers, `extend-hot-functions`).
"""

from __future__ import annotations

from typing import Dict, Iterable, Tuple

from h2dlint.facts.heuristic_guards import GUARD_HEURISTICS
from h2dlint.facts.heuristic_levels import LEVEL_HEURISTICS, PER_REQUEST_CLASSES
from h2dlint.facts.heuristic_modules import COLD_MODULES
from h2dlint.facts.heuristic_placement import PLACEMENT_CONVENTIONS
from h2dlint.facts.heuristic_types import Effect, Group, Heuristic, name_patterns, preset_heuristic
from h2dlint.facts.presets import NEW_REQUEST, PREEMPTION

__all__ = [  # the registry, and the types and helpers of `heuristic_types` that its users import from here
    "ALL_IDS", "BY_ID", "COLD_MODULES", "COLD_NAMES", "CONFIGURED_NAMES", "GUARD_HEURISTICS", "HEURISTICS",
    "HOT_NAMES", "LEVEL_HEURISTICS", "PER_REQUEST_CLASSES", "PLACEMENT_CONVENTIONS", "STRUCTURAL", "Effect", "Group",
    "Heuristic", "configured_heuristic", "name_patterns", "preset_heuristic", "unknown_ids",
]


def _names(id: str, effect: Effect, rationale: str, patterns: Tuple[str, ...], evidence: Tuple[str, ...] = ()):
    return Heuristic(id, effect, Group.NAME, rationale, patterns, evidence)


_HOT, _COLD, _ONCE = Effect.HOT, Effect.COLD, Effect.ONE_TIME

# Per-step and per-request entry points, tuned on the sglang, vllm and lmdeploy runtimes: the names their
# schedulers, model runners, attention backends, samplers, LoRA managers and multimodal encoders use.
# Patterns are matched against the name with and without leading underscores; a pattern with a dot
# (`*MetadataBuilder.build`) is matched against a method's class name and name instead.
HOT_NAMES: Tuple[Heuristic, ...] = (
    _names(
        "hot-name-forward", _HOT, "forward passes: `nn.Module.__call__` runs `forward` once per step",
        ("forward", "forward_*", "*_forward", "*_fwd", "__call__"),  # forward_extend, model_forward, *_attention_fwd
        evidence=(
            "sglang layers/attention/dsa/dsa_npu_indexer.py:272",
            "vllm model_executor/models/dots_ocr.py:551",
            "lmdeploy pytorch/backends/cuda/token_dispatcher.py:341",
            "sglang layers/pointer_head.py:69",
        ),
    ),
    _names(
        "hot-name-step", _HOT, "training and decode steps: `step`, `decode_step`, `train_step`",
        ("step", "*_step"),
        evidence=("sglang dllm/algorithm/joint_threshold.py:213", "sglang dllm/algorithm/joint_threshold.py:216"),
    ),
    _names(
        "hot-name-prepare", _HOT, "batch preparation before each forward: prepare_for_decode, prepare_inputs",
        ("*prepare_for_*", "prepare_inputs*", "prepare_lora_*"),
        evidence=(
            "sglang lora/backend/triton_backend.py:710",
            "lmdeploy pytorch/models/internvl.py:833",
            "sglang lora/backend/triton_backend.py:725",
            "lmdeploy pytorch/models/internvl.py:856",
        ),
    ),
    _names(
        "hot-name-metadata", _HOT, "attention metadata is rebuilt once per forward batch (init_forward_metadata)",
        # vllm's metadata builders: the model runner calls `build` once per forward batch for each KV-cache
        # group (and `build_for_drafting` per draft step); one-word names need their class to be hot.
        ("*forward_metadata*", "build*metadata*", "*MetadataBuilder.build", "*MetadataBuilder.build_for_drafting"),
        evidence=(
            "vllm v1/attention/backends/mla/sparse_swa.py:820",
            "vllm v1/attention/backends/mla/sparse_swa.py:822",
            "vllm v1/attention/backends/mla/sparse_swa.py:823",
        ),
    ),
    _names("hot-name-plan", _HOT, "attention and kernel planning per batch: plan_sparse_prefill", ("plan_*", "*_plan")),
    _names("hot-name-replay", _HOT, "CUDA-graph replay runs per step (capture stays cold)", ("*replay*",)),
    _names(
        "hot-name-decode", _HOT,
        "decode paths run once per generated token (`forward_decode`, `decode_step`, `speculative_decoding`); "
        "a decoder (`get_decoder`, `make_torchcodec_decoder`) or decoded text is no decode step",
        ("*decode", "*decode_*", "*decoding*"),
    ),
    _names(
        "hot-name-extend", _HOT, "prefill (extend) paths run once per batch of new tokens",
        ("*extend*",),
        evidence=(
            "sglang layers/attention/dsv4/low_ratio_backend_hip.py:482",
            "sglang layers/attention/dsv4/low_ratio_backend_hip.py:485",
        ),
    ),
    _names(
        "hot-name-execute-model", _HOT, "the model runner's per-step entry point",
        ("execute_model",),
        evidence=(
            "vllm v1/worker/gpu_model_runner.py:391",
            "vllm v1/pool/late_interaction_runner.py:200",
            "vllm v1/pool/late_interaction_runner.py:201",
        ),
    ),
    _names(
        "hot-name-sampling", _HOT, "sampling and logits run once per step",
        ("sample", "sample_*", "compute_logits"),
        evidence=(
            "sglang sampling/watermarking/core.py:656",
            "vllm v1/spec_decode/llm_base_proposer.py:1043",
            "sglang sampling/watermarking/core.py:651",
            "vllm v1/spec_decode/ngram_proposer_gpu.py:421",
        ),
    ),
    _names(
        "hot-name-multimodal", _HOT,
        "multimodal encoders run once per request with images, audio or video (vLLM's runner runs them in "
        "`_execute_mm_encoder`, through the model's `get_multimodal_embeddings` or `embed_multimodal`)",
        ("get_*_feature", "embed_multimodal", "get_multimodal_embeddings", "*execute_mm_encoder*"),
        evidence=(
            "sglang models/gemma3n_mm.py:360",
            "sglang models/lfm2_vl.py:250",
            "sglang models/midashenglm.py:537",
            "sglang models/mimo_audio.py:949",
            "vllm0101 model_executor/models/molmo.py:1475",
        ),
    ),
    _names(
        "hot-name-new-request", _HOT,
        "a serving engine tokenizes and adds each request once, when it arrives (`_tokenize_one_request`, "
        "`tokenize_with_images`, `add_request`), though a loop over the arriving requests calls it; "
        "`detokenize` runs per step and is no such name",
        NEW_REQUEST,
        evidence=(
            "sglang multimodal/processors/internvl.py:451",
            "sglang multimodal/processors/internvl.py:504",
            "sglang multimodal/processors/internvl.py:664",
            "vllm model_executor/models/longcat_flash_ngram.py:319",
        ),
    ),
    _names(
        "hot-name-preemption", _HOT,
        "a serving engine preempts a request when its KV cache runs out (`retract_decode`, `preempt_seqs`), moves "
        "the request's KV cache to the host and back when it resumes (`get_cpu_copy`, `load_kv_cache`): once per "
        "preempted request, though the step loop calls it",
        PREEMPTION,
        evidence=(
            "sglang mem_cache/swa_memory_pool.py:412",
            "sglang mem_cache/unified_memory_pool.py:2110",
            "sglang mem_cache/unified_memory_pool.py:2112",
        ),
    ),
    _names(
        "hot-name-batch-result", _HOT, "the scheduler processes each batch's result", ("process_batch_result*",)
    ),
    _names(
        "hot-name-step-context", _HOT,
        "lmdeploy updates its step context and model metas per forward, through receivers of unknown class",
        ("update_step_context", "update_model_metas"),
        evidence=(
            "lmdeploy pytorch/backends/dlinfer/ascend/op_backend.py:349",
            "lmdeploy pytorch/backends/dlinfer/camb/op_backend.py:90",
            "lmdeploy pytorch/models/chatglm2.py:774",
            "lmdeploy pytorch/models/cogvlm.py:842",
        ),
    ),
)

# One-time work: construction, weight loading, buffer creation, CUDA-graph capture, warmup, tests.
COLD_NAMES: Tuple[Heuristic, ...] = (
    _names(
        "cold-name-construction", _COLD, "constructors run once per object",
        ("__init__", "__post_init__", "__init_subclass__", "__new__"),
        evidence=("sglang mem_cache/pool_host/mamba.py:207", "lmdeploy pytorch/nn/eplb.py:171"),
    ),
    _names(
        "cold-name-loading", _COLD, "model building, weight loading and initialisation run once at startup",
        ("*load_weights*", "*load_model*", "*build_model*", "*initialize*", "load_state_dict", "*_after_loading",
         "*weight_loader*", "*weights_iterator*"),
        evidence=(
            "sglang layers/engram.py:927",
            "vllm distributed/weight_transfer/m2n_common.py:851",
            "lmdeploy pytorch/adapter/adapter.py:21",
            "sglang layers/engram.py:928",
        ),
    ),
    _names(
        "cold-name-weight-layout", _COLD, "weight layout conversions run once after loading",
        ("*repack*", "*zero_points*", "*permute_scales*"),
    ),
    _names("cold-name-autotune", _COLD, "autotuning runs once per shape at startup", ("*autotune*",)),
    _names("cold-name-abort", _COLD, "failure and cancellation paths are rare, not per step", ("*abort*",)),
    _names(
        "cold-name-rebalance", _COLD,
        "expert-parallel load balancing (EPLB) rebalances every few thousand steps or after a rank fails, not per step",
        ("*rebalance*",),
        evidence=("sglang eplb/expert_distribution.py:1027",),
    ),
    _names(
        "cold-name-cpu-backend", _COLD,
        "a custom op's `forward_cpu` is what it runs on the CPU backend: its tensors live on the host, and "
        "nothing is copied to or read back from an accelerator",
        ("forward_cpu",),
        evidence=("sglang layers/moe/fused_moe_native.py:82",),
    ),
    _names(
        "cold-name-reset", _COLD, "state resets follow reconfiguration or memory reuse",
        ("reset_*",),
        evidence=("vllm lora/layers/logits_processor.py:126",),
    ),
    _names(
        # Not `alloc*buffer*`: allocators allocate per request (sglang's HiSparse `alloc_device_buffer(req)`
        # runs for each admitted request, and its device-to-host reads with it).
        "cold-name-buffers", _COLD, "weight and buffer creation happens once, before serving",
        ("create_*weights*", "create_*buffer*", "init_*buffer*"),
    ),
    _names(
        "cold-name-capture", _COLD, "CUDA-graph capture and its setup run once per graph",
        ("init_cuda_graph*", "*capture*"),
        evidence=(
            "sglang hardware_backend/npu/attention/ascend_backend.py:881",
            "sglang hardware_backend/npu/attention/ascend_backend.py:887",
            "sglang model_executor/model_runner_components/cuda_graph_setup.py:277",
            "sglang speculative/multi_layer_eagle_draft_extend_cuda_graph_runner.py:303",
        ),
    ),
    _names(
        "cold-name-warmup", _COLD, "warmup and dummy runs happen before serving",
        ("*warmup*", "*warm_up*", "*dummy*"),
    ),
    _names("cold-name-tests", _COLD, "tests are not serving code", ("test_*",)),
    _names("cold-name-profiling", _COLD, "memory profiling runs once at startup", ("*profile_run*", "_profile_*")),
)

# The project's own globs (`extend-hot-functions`, `extend-cold-functions`): their patterns come from Settings.
CONFIGURED_NAMES: Tuple[Heuristic, ...] = (
    _names("hot-name-configured", _HOT, "the project's `extend-hot-functions` names", ()),
    _names("cold-name-configured", _COLD, "the project's `extend-cold-functions` names", ()),
)

STRUCTURAL: Tuple[Heuristic, ...] = (
    Heuristic("hot-marker", _HOT, Group.MARKER, "`# h2dlint: hot` on a function or class: the author says so"),
    Heuristic(
        "cold-marker", _COLD, Group.MARKER, "`# h2dlint: cold` on a function, class or site: the author says so"
    ),
    Heuristic(
        "hot-custom-op", _HOT, Group.REGISTRATION,
        "a torch custom op (`@custom_op`, `direct_register_custom_op(op_func=f)`) that the project calls by its "
        "registered name (`torch.ops.vllm.x(...)`): forward passes call it where no call is in sight",
    ),
    Heuristic(
        "hot-called-in-loop", _HOT, Group.CALL, "a function called in a loop runs once per iteration",
        evidence=(
            "sglang managers/prefill_delayer.py:363",
            "vllm v1/attention/backends/ultraquant_attn.py:556",
            "sglang managers/schedule_batch.py:3293",
            "vllm v1/attention/backends/ultraquant_attn.py:557",
        ),
    ),
    Heuristic(
        "cold-sync-on-request-arrival", _COLD, Group.CALL,
        "what a serving engine runs only as a request arrives (tokenizing it and processing its images: "
        "`hot-name-new-request`) works on host tensors, in the tokenizer's process and away from the step "
        "loop: the device-to-host rules are quiet there, and a copy to a device taken from an input tensor "
        "(`device=ids.device`) copies from host to host",
        evidence=(
            "sglang layers/rotary_embedding/bailing_mrope.py:192",
            "sglang layers/rotary_embedding/bailing_mrope.py:305",
            "sglang layers/rotary_embedding/bailing_mrope.py:346",
            "sglang layers/rotary_embedding/mrope_rope_index.py:528",
        ),
    ),
    Heuristic(
        "cold-only-called-once", _COLD, Group.CALL,
        "a function only one-time code calls (module level, cold functions, one-time guards) runs once",
        evidence=(
            "sglang layers/quantization/gguf.py:690",
            "vllm distributed/weight_transfer/m2n_common.py:851",
            "lmdeploy pytorch/adapter/adapter.py:21",
            "vllm model_executor/layers/fused_moe/flashinfer_moe_ep.py:189",
        ),
    ),
    Heuristic(
        "hot-public-entry-point", _HOT, Group.CALL,
        "a public per-step name keeps its heat though only one-time code calls it: the engine's loop calls "
        "it where no call is in sight, and warmup or capture calling it too says nothing",
        evidence=(
            "sglang lora/backend/triton_backend.py:710",
            "sglang lora/backend/triton_backend.py:725",
            "sglang lora/backend/triton_backend.py:728",
            "sglang lora/backend/triton_backend.py:729",
        ),
    ),
    Heuristic(
        "cold-decorator-cache", _COLD, Group.DECORATOR,
        "`@lru_cache`, `@cache`, `@cached_property`: the body runs once per key",
        evidence=(
            "sglang multimodal/processors/internvl.py:56",
            "vllm model_executor/models/openpangu_vl.py:1321",
            "sglang multimodal/processors/internvl.py:59",
            "vllm model_executor/models/openpangu_vl.py:1322",
        ),
    ),
    Heuristic(
        "cold-decorator-compile", _COLD, Group.DECORATOR,
        "`@torch.compile`: tensors are built inside the compiled graph, not copied per call",
        evidence=(
            "vllm transformers_utils/processors/cohere_asr.py:299",
            "vllm transformers_utils/processors/cohere_asr.py:300",
            "vllm transformers_utils/processors/cohere_asr.py:327",
        ),
    ),
    Heuristic("cold-nested-in-cold", _COLD, Group.NESTING, "a function nested in a cold function is cold"),
    Heuristic(
        "cold-always-raises", _COLD, Group.CALL,
        "a function whose body ends in `raise` and never returns runs only on the way to an exception: an error"
        " path (a body raising `NotImplementedError` is an interface, not one)",
    ),
    Heuristic(
        "hot-in-loop", _HOT, Group.LOOP, "a site in a loop or comprehension body runs once per iteration",
        evidence=(
            "vllm v1/attention/backends/ultraquant_attn.py:380",
            "vllm v1/attention/backends/ultraquant_attn.py:383",
        ),
    ),
    Heuristic(
        "hot-service-loop", _HOT, Group.LOOP,
        "a `while` loop that runs until the process stops (`while True:`, `while not self._stop_event.is_set():`)"
        " is a scheduler's event loop or a background worker's: what it calls runs continuously, per step, even "
        "where nothing names the function around it (a loop over layers or pages says less: `hot-called-in-loop`)",
        # Matched against the last name of the loop's test (`not self._stop_event.is_set()`: `_stop_event`).
        ("*stop*", "*shutdown*", "*exit*", "*terminat*", "*running*", "*alive*"),
        evidence=("sglang managers/overlap_utils.py:628", "sglang multimodal/transport/memory_pool.py:314"),
    ),
    Heuristic(
        "one-time-fixed-iteration", _ONCE, Group.LOOP,
        "a loop over a literal tuple or a table of constants repeats written steps, not data: setup walks "
        "grids of sizes this way",
        evidence=("sglang eplb/expert_location.py:338", "vllm kernels/helion/ops/silu_mul_fp8.py:43"),
    ),
)

HEURISTICS: Tuple[Heuristic, ...] = (
    HOT_NAMES + COLD_NAMES + COLD_MODULES + CONFIGURED_NAMES + STRUCTURAL + GUARD_HEURISTICS + LEVEL_HEURISTICS
    + PLACEMENT_CONVENTIONS
)
BY_ID: Dict[str, Heuristic] = {h.id: h for h in HEURISTICS}
ALL_IDS: Tuple[str, ...] = tuple(BY_ID)


def unknown_ids(ids: Iterable[str]) -> Tuple[str, ...]:
    return tuple(i for i in ids if i not in BY_ID)


def configured_heuristic(effect: Effect, patterns: Tuple[str, ...]) -> Heuristic:
    """`hot-functions` / `cold-functions`, which replace the default names, as the configured heuristic."""
    heuristic = f"{effect.value}-name-configured"
    return Heuristic(heuristic, effect, Group.NAME, BY_ID[heuristic].rationale, patterns)

"""The heuristics that say where a tensor lives by its name or by where it comes from
(`PLACEMENT_CONVENTIONS`, read by `facts.placement_conventions`, `facts.placement_typed` and
`facts.placement_callers`): part of the registry of `h2dlint.facts.heuristics`. Switched off, a convention
leaves the tensors it names unknown, and an unknown tensor is never reported."""

from __future__ import annotations

from typing import Tuple

from h2dlint.facts.heuristic_types import Effect, Group, Heuristic

# Naming conventions for where a tensor lives (`facts.placement_conventions`), matched against the last name of
# an expression (`batch.seq_lens_cpu`: `seq_lens_cpu`). Engines keep host mirrors of device tensors under these
# names (sglang `seq_lens_cpu`, vLLM `query_start_loc_cpu` and the `.cpu`/`.np`/`.gpu` halves of `CpuGpuBuffer`).
PLACEMENT_CONVENTIONS: Tuple[Heuristic, ...] = (
    Heuristic(
        "placement-name-host", Effect.PLACEMENT, Group.CONVENTION,
        "engines name host tensors and host mirrors `*_cpu` (`seq_lens_cpu_int`), `*_host`, `*_np`, `cpu_*`, and a "
        "buffer pair's host half `.cpu`/`.np`",
        ("*_cpu", "*_cpu_*", "*_host", "*_np", "cpu_*", "host_*", "cpu", "np"),
    ),
    Heuristic(
        "placement-name-device", Effect.PLACEMENT, Group.CONVENTION,
        "engines name device tensors `*_gpu`, `*_cuda`, `gpu_*`, `device_*` and `*_device` (the device side of a "
        "host/device pair: `device_indices` beside `host_indices`), and a buffer pair's device half `.gpu`",
        ("*_gpu", "*_cuda", "gpu_*", "cuda_*", "gpu", "device_*", "*_device"),
        evidence=(
            "sglang managers/cache_controller.py:955",
            "vllm v1/attention/backends/mla/rocm_aiter_mla.py:1791",
        ),
    ),
    Heuristic(
        "placement-name-model-output", Effect.PLACEMENT, Group.CONVENTION,
        "a model's outputs are where the model runs: `logits` and `*_logits` come out of the language-model head "
        "on the accelerator; a host name (`cpu_logits`) wins, and a host provenance (`.cpu()`) contradicts it: unknown",
        ("logits", "*_logits"),
        evidence=(
            "sglang dllm/algorithm/gemma4_renoise.py:328",
            "vllm v1/sample/thinking_budget_state.py:568",
            "lmdeploy pytorch/memdecode/fusion.py:174",
        ),
    ),
    Heuristic(
        "placement-name-activation", Effect.PLACEMENT, Group.CONVENTION,
        "in a model (a class that defines `forward`, as an `nn.Module` does), a local or parameter named "
        "`hidden_states` or `inputs_embeds` holds the activations its layers pass on, on the accelerator; a host "
        "name contradicts it (unknown) and a provenance overrules it; not outside a model, where an engine's output "
        "processing names its host copies alike, nor for an object's field, which its class decides",
        ("hidden_states", "*_hidden_states", "inputs_embeds"),
    ),
    Heuristic(
        "placement-name-model-input", Effect.PLACEMENT, Group.CONVENTION,
        "in a model (a class that defines `forward`), a local or parameter named `input_ids` or `positions` holds "
        "the step's inputs, which the runner has moved to the accelerator before the forward; a host name "
        "contradicts it (unknown) and a provenance (a NumPy array, `torch.tensor(tokens)`) overrules it; not "
        "outside a model, where processors and schedulers build them on the host, nor for an object's field",
        ("input_ids", "positions"),
    ),
    Heuristic(
        "placement-name-model-mask", Effect.PLACEMENT, Group.CONVENTION,
        "in a model (a class that defines `forward`), a local or parameter named `*_mask` holds a mask that the "
        "model computes from its inputs or activations on the accelerator (`visual_token_mask`, a vision tower's "
        "`patch_attention_mask`); a host name contradicts it (unknown) and a provenance overrules it; not "
        "outside a model, nor for an object's field",
        ("*_mask",),
    ),
    Heuristic(
        "placement-name-routing", Effect.PLACEMENT, Group.CONVENTION,
        "a mixture-of-experts router picks each token's experts on the accelerator, from the router logits of "
        "the layer it runs in: `topk_ids`, `topk_idx`, `topk_weights` come out of its top-k there; a host name "
        "or provenance contradicts it: unknown",
        ("topk_ids", "topk_idx", "topk_weights"),
        evidence=(
            "lmdeploy pytorch/backends/token_dispatcher.py:58",
            "sglang layers/moe/expert_pack.py:523",
            "sglang lora/lora_moe_runners.py:98",
            "sglang layers/moe/paged_experts/executor.py:64",
        ),
    ),
    Heuristic(
        "placement-name-training-scalar", Effect.PLACEMENT, Group.CONVENTION,
        "a trainer's loss comes out of the model and its loss function on the accelerator (`loss`, `*_loss`), "
        "and the gradient norm (`grad_norm`, `total_norm`) out of the gradients, where the parameters are; "
        "reading either on the host every step is the sync trainers defer to their logging steps; a host name "
        "or provenance (`loss = loss.item()`, `torch.tensor(losses)`) contradicts it: unknown; with the training "
        "preset only (a serving engine's `ce_loss` is an output it has copied to the host)",
        ("loss", "*_loss", "grad_norm", "total_norm"),
        evidence=(
            "torchtitan trainer.py:1008",
            "torchtitan models/flux/trainer.py:348",
            "torchtitan experiments/rl/actors/trainer.py:470",
        ),
    ),
    Heuristic(
        "placement-parameter-training-forward", Effect.PLACEMENT, Group.CONVENTION,
        "a trainer moves each batch to the accelerator before the model's forward, so a parameter of a class's "
        "`forward` annotated as a tensor (`tokens: torch.Tensor`, `grid_thw: Tensor | None`) is on the device, "
        "in every layer the batch reaches; a host name contradicts it (`seq_lens_cpu`): unknown; with the "
        "training preset only (a serving engine's vision encoders take host `grid_thw` on purpose)",
        evidence=(
            "torchtitan models/common/multimodal.py:72",
            "torchtitan models/common/multimodal.py:89",
            "torchtitan models/kimi_k2_7/vision_encoder.py:439",
        ),
    ),
    Heuristic(
        "placement-sibling-host-mirror", Effect.PLACEMENT, Group.CONVENTION,
        "a tensor whose `<name>_cpu` (or `_host`) sibling exists is the device copy that the mirror shadows; "
        "not in a function that makes that mirror of it (`self.lens_cpu = lens`: `lens` is the host data), nor "
        "for a tensor seen built (`lens = torch.full(...)` beside `lens_cpu` is on the host)",
    ),
    Heuristic(
        "placement-parameter-named-like-class", Effect.PLACEMENT, Group.CONVENTION,
        "an unannotated parameter of two or more words spelt as the one project class of that name holds an "
        "instance of it (`forward_batch`: `ForwardBatch`), for where its attributes live",
    ),
    Heuristic(
        "placement-parameter-from-callers", Effect.PLACEMENT, Group.CONVENTION,
        "a parameter of a private function (`_pack`, `self._pack`) lives where every call of it in its module, "
        "all of its references there, passes it: a leading underscore keeps its callers in that module",
    ),
    Heuristic(
        "placement-parameter-from-module-callers", Effect.PLACEMENT, Group.CONVENTION,
        "a parameter of a public top-level function or method lives where every call of it in its module passes "
        "it, when no other file of the project calls or imports that name: its callers are then all in sight "
        "(a caller outside the project, or a reference that is not a call, such as a callback, is not)",
        evidence=(
            "sglang layers/attention/vision.py:286",
            "vllm model_executor/models/funaudiochat.py:404",
            "aphrodite model_executor/models/funaudiochat.py:375",
        ),
    ),
    Heuristic(
        "placement-parameter-from-submodule-calls", Effect.PLACEMENT, Group.CONVENTION,
        "a parameter of a module's `forward` lives where every call of the module in its file passes it "
        "(`self.visual(pixel_values, grid_thw=grid_thw)` runs `VisionTransformer.forward` through "
        "`nn.Module.__call__`), when every place the file names the class builds it into an attribute "
        "(`self.visual = VisionTransformer(...)`), every use of that attribute is such a call on `self`, and no "
        "other file of the project calls or imports the class: its calls are then all in sight. A class its own "
        "file never builds is placed so by the calls in the files that import and build it, where they are one or "
        "two and each has every use in sight (kimi's `MoonVitPretrainedModel`, built in `kimi_vl.py`)",
        evidence=(
            "vllm0101 model_executor/models/qwen2_vl.py:650",
            "vllm0101 model_executor/models/glm4_1v.py:742",
            "sglang models/jet_nemotron.py:175",
        ),
    ),
    Heuristic(
        "placement-parameter-from-project-callers", Effect.PLACEMENT, Group.CONVENTION,
        "a parameter of a public function or method lives where every call of it in the project passes it, when "
        "the project's index resolves each call of that name in the other files, to it alone or to another "
        "function, and no file imports the name without calling it (a callback): its callers are then all in "
        "sight (a caller outside the project is not)",
    ),
    Heuristic(
        "placement-submodule-output", Effect.PLACEMENT, Group.CONVENTION,
        "what a submodule returns (`self.proj(x)`, with every assignment of `self.proj` in the class, or a base "
        "class of the file, a call of a class by name: `Linear(...)`) is an activation, on the device the model "
        "runs on; not for a tokenizer's, processor's or feature extractor's class, not in a Hugging Face "
        "processor, and not for one item unpacked from it (a module may return host sizes beside activations)",
        exceptions=("*Tokenizer*", "*Processor*", "*Extractor*", "*Detokenizer*", "*Preprocessor*"),
        evidence=(
            "vllm model_executor/models/funaudiochat.py:504",
            "aphrodite model_executor/models/funaudiochat.py:461",
        ),
    ),
    Heuristic(
        "placement-multimodal-input", Effect.PLACEMENT, Group.CONVENTION,
        "in a model class with a multimodal entry point (`get_multimodal_embeddings`, `embed_multimodal`), an input "
        "read from a method's `**kwargs` (`kwargs.pop(\"image_grid_thw\")`, `kwargs[\"image_grid_thw\"]`) is on the "
        "device: the engine's model "
        "runner batches each request's multimodal inputs and moves them there first. Only for a field this file "
        "declares (`image_grid_thw=MultiModalFieldConfig.batched(\"image\")`), and never one declared with "
        "`keep_on_cpu=True`, which stays on the host",
        evidence=(
            "vllm0101 model_executor/models/minicpmo.py:723",
            "vllm0101 model_executor/models/phi4_multimodal.py:1271",
            "vllm model_executor/models/midashenglm.py:762",
            "vllm0101 model_executor/models/hyperclovax_vision.py:713",
        ),
    ),
    # The kind, not the place, of an index (`rules.mask_indexing`): so named, an integer index would gather the
    # wrong rows and a float one would raise.
    Heuristic(
        "placement-name-mask-index", Effect.PLACEMENT, Group.CONVENTION,
        "an index named as a mask (`x[visual_token_mask]`, `x[mask]`) is a boolean mask: so named, an integer index "
        "would gather the wrong rows and a float one would raise",
        ("mask", "*_mask", "*_masks"),  # not `mask_*`: `mask_id` is a token id, `mask_indices` integers
    ),
)

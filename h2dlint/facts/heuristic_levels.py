"""The heuristics that say how often hot code runs in a serving engine or a diffusion pipeline (`LEVEL_HEURISTICS`):
which of its per-step names, loops and branches run once per request instead. They never make code hot or cold, so a
finding keeps its verdict without them; switched off, it claims "per step" where it runs once per request.
Their evidence rows are per-request sites of `benchmarks/engine_labels.tsv` they make a finding claim truly;
`benchmarks/level_claims.py` measures every claim against the labels. Part of the registry of
`h2dlint.facts.heuristics`."""

from __future__ import annotations

from typing import Tuple

from h2dlint.facts.heuristic_types import Effect, Group, Heuristic

_HOT = Effect.HOT
VAE = "hot-per-request-vae"  # the one class heuristic of the diffusion preset, not serving's

LEVEL_HEURISTICS: Tuple[Heuristic, ...] = (
    Heuristic(
        "hot-per-request-encoder", _HOT, Group.NAME,
        "a serving engine runs its vision and audio encoders (`*Vision*`, `*ViT*`, `*Encoder*` classes), and the "
        "projectors that map their features into the language model (`*Projector*`), once per request with "
        "images or audio, not per decode step: their per-step names (`forward`) run per request, and so do those "
        "of a class whose `forward` takes images or audio first (`pixel_values`, `input_features`: "
        "`ENCODER_INPUTS`) and of the classes only they build (`project.encoder_parts`)",
        ("*Vision*", "*ViT*", "*Vit[A-Z0-9_]*", "*Visual*", "*Siglip*", "*Encoder*", "*Resampler*", "*Projector*"),
        evidence=(
            "sglang models/qwen3_vl.py:1013",
            "sglang models/glm_image_vl.py:313",
            "sglang models/moss_vl.py:447",
            "vllm model_executor/models/isaac.py:86",
            "vllm model_executor/models/funasr.py:80",
            "vllm model_executor/models/lfm2_vl.py:582",
            "sglang models/radio.py:562",
            "vllm model_executor/models/radio.py:599",
            "vllm models/dots3_note/nvidia/vision.py:190",
            "vllm0101 model_executor/models/phi4_multimodal.py:206",
        ),
        # The language model of a vision or audio model (`Cohere2VisionForConditionalGeneration`) runs per step.
        exceptions=("*ForConditionalGeneration*", "*ForCausalLM*", "*LLM*", "*LanguageModel*", "*TextModel*"),
    ),
    Heuristic(
        "hot-per-request-processor", _HOT, Group.CALL,
        "a Hugging Face processor or feature extractor (a class derived from `ProcessorMixin`, "
        "`SequenceFeatureExtractor`, `FeatureExtractionMixin`, `ImageProcessingMixin`, `BaseImageProcessor`, "
        "`BaseImageProcessorFast` or `BaseVideoProcessor`) turns a request's text, images or audio into tensors "
        "as the request arrives, on the host: its per-step names (`__call__`, `forward`) run once per request, "
        "and what only they reach is request-arrival code (`cold-sync-on-request-arrival`)",
        # Matched against the simple names of a class's bases, as written.
        ("ProcessorMixin", "SequenceFeatureExtractor", "FeatureExtractionMixin", "ImageProcessingMixin",
         "BaseImageProcessor", "BaseImageProcessorFast", "BaseVideoProcessor"),
    ),
    Heuristic(
        VAE, _HOT, Group.NAME,
        "a diffusion pipeline encodes its images and decodes its latents with the VAE, and checks its output with a "
        "safety checker, once per request, outside the denoising loop: their per-step names (`forward`, and what "
        "it calls) run once per request; with the diffusion preset only, as a serving engine names no such classes",
        ("Autoencoder*", "AsymmetricAutoencoder*", "*VAE", "*Vae", "VQModel", "*SafetyChecker"),
        # Also labelled per request in `benchmarks/level_finding_labels.tsv` (stop 56): vq_model.py:154,
        # autoencoder_tiny.py:193.
        evidence=("diffusers pipelines/deepfloyd_if/safety_checker.py:32",),
    ),
    Heuristic(
        "hot-per-request-loop", _HOT, Group.LOOP,
        "a loop in code that runs once per request goes over that request's images, chunks or items, so it "
        "repeats per request, not per step (a denoising loop aside: `hot-denoising-loop`); in a serving engine, "
        "and in a diffusion pipeline's per-request code (`encode_prompt`, `prepare_latents`, a modular block's "
        "`__call__`, any helper its `__call__` calls outside its loops) over its prompts, conditions and images. "
        "A pipeline's `__call__` is the exception: its loops are taken for its denoising steps, unless it has a "
        "loop over the timesteps (`hot-denoising-loop`): then its other loops (over control images, video "
        "segments, pyramid stages) repeat per request",
        evidence=(
            "sglang models/deepseek_v4.py:4814",
            "sglang models/cohere2_vision.py:161",
            "sglang models/mimo_audio.py:960",
            "sglang models/muse_spark_omni.py:378",
            "diffusers pipelines/audioldm2/pipeline_audioldm2.py:598",
            "diffusers pipelines/ltx/pipeline_ltx_condition.py:563",
            "diffusers pipelines/ace_step/pipeline_ace_step.py:683",
            "diffusers pipelines/wan/pipeline_wan_animate.py:622",
        ),
        exceptions=("*Pipeline.__call__",),
    ),
    Heuristic(
        "hot-denoising-loop", _HOT, Group.LOOP,
        "a loop over a diffusion schedule's timesteps (`for i, t in enumerate(self.progress_bar(timesteps)):`) "
        "is a denoising loop: what runs in it, and in the loops it holds, runs once per denoising step, though "
        "the code around it runs once per request (a pipeline's `__call__`, a helper that runs the loop)",
        # Matched against every name in what the loop iterates (`range(len(self.scheduler.timesteps))`).
        ("*timesteps*",),
        evidence=(
            "diffusers pipelines/deprecated/semantic_stable_diffusion/pipeline_semantic_stable_diffusion.py:677",
        ),
    ),
    Heuristic(
        "hot-per-request-loop-over-requests", _HOT, Group.LOOP,
        "a loop over the requests (`for req in batch.reqs:`, `for rid in request_ids:`) runs its body once per "
        "request: in code not known to run per step, what it calls runs per request, not per step (per-step "
        "code that reaches the same function still makes it per step)",
        # Matched against the loop's target names and the last name of what it iterates (`enumerate(x.reqs)`).
        ("req", "request", "*_req", "*_request", "reqs", "requests", "*_reqs", "*_requests", "req_id",
         "request_id", "req_ids", "request_ids", "*_req_ids", "*_request_ids", "rid", "rids"),
        evidence=(
            "sglang disaggregation/common/dcp_pack.py:74",
            "sglang disaggregation/common/staging_buffer.py:440",
            "sglang disaggregation/common/staging_buffer.py:515",
        ),
    ),
    Heuristic(
        "hot-per-request-multimodal-branch", _HOT, Group.GUARD,
        "a language model takes images, audio or video only in the prefill of the requests that bring them: "
        "`if pixel_values is not None:` (or `len(images) > 0`, `need_vision.any()`) runs once per request, and so "
        "does what follows `if pixel_values is None: return None`",
        # Locals only, named as the data itself: `*image*` would take in `image_token_id`, set every step.
        # A prefix may say whose (`image_pixel_values`, `input_image_embeds`), not what else it is.
        ("*pixel_values*", "image_input", "image_inputs", "images", "image_data", "*image_embeds", "video_input",
         "video_inputs", "videos", "video_data", "*video_embeds", "audio_input", "audio_inputs", "audios",
         "audio_data", "*audio_embeds", "audio_features", "mm_inputs", "mm_data", "mm_items", "mm_features",
         "mm_input_embeds", "multimodal_inputs", "multimodal_embeddings", "vision_embeddings", "need_vision"),
        evidence=(
            "lmdeploy pytorch/models/qwen2_5_vl.py:498",
            "lmdeploy pytorch/models/internvl.py:614",
            "sglang models/llava.py:234",
            "lmdeploy pytorch/models/qwen2_vl.py:696",
            "vllm0101 model_executor/models/phi4mm.py:1076",
        ),
    ),
)

# What a module whose `forward` takes it first is (`hot-per-request-encoder`): an image or audio encoder, by its input,
# whatever its class is called (vLLM's and sglang's `RadioModel`, `AIMv2Model`, `EVA2CLIPModel`, `ProjectedParakeet`).
# Raw inputs only: a language model takes `input_ids` first, and its embedded images (`image_embeds`) come later.
# Pixel values may carry a prefix, as vLLM's Phi-4 image embedding takes them (`image_pixel_values`).
ENCODER_INPUTS = ("*pixel_values*", "pixels", "images", "image", "input_features", "audio_features")

# The ones that say it of a class's per-step names (`Settings.per_request_class_heuristic`).
PER_REQUEST_CLASSES: Tuple[Heuristic, ...] = tuple(h for h in LEVEL_HEURISTICS if h.group is Group.NAME)

"""Presets: the default name lists for a kind of workload (`preset = "serving" | "training" | "diffusion" |
"none"`, `--preset`). `hot-functions` / `cold-functions` replace a preset's lists, as ruff's `select`
replaces its defaults; `extend-hot-functions` / `extend-cold-functions` add to them.

Each preset is data: the per-step names, the names among them that run once per request, and the one-time
names, with why. "serving" is the list tuned on sglang, vllm and lmdeploy; "none" names nothing, leaving
markers, custom ops, loops and (with a profile) the traced run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class Preset:
    """None for a list means the serving defaults of `h2dlint.facts.settings` (which imports this module)."""

    name: str
    rationale: str
    hot: Optional[Tuple[str, ...]]  # per-step entry points (fnmatch globs; dotted ones match `Class.method`)
    per_request: Tuple[str, ...]  # hot names that run once per request instead; added to the defaults' own
    cold: Optional[Tuple[str, ...]]  # one-time work
    more_cold: Tuple[str, ...] = ()  # added to `cold`


# Forward passes run per step in every workload.
_FORWARD = ("forward", "forward_*", "*_forward", "*_fwd", "__call__")

TRAINING = Preset(
    "training",
    "Trainers (transformers, trl, deepspeed): each optimiser step runs the loss, its backward, the optimiser's "
    "step and zero_grad, and the step callbacks; logging, evaluation and checkpoints run every few steps.",
    hot=_FORWARD + (
        "training_step", "compute_loss", "*_loss", "*_divergence", "step", "*_step", "zero_grad",
        "on_step_begin", "on_step_end", "on_substep_end", "on_optimizer_step", "on_pre_optimizer_step",
        "backward", "clip_grad_norm*", "*grad_norm*", "_prepare_inputs", "_generate_and_score_completions",
        "log", "on_log", "evaluate", "prediction_step", "on_evaluate", "on_save", "_save_checkpoint",
    ),
    per_request=(
        # Every `logging_steps`, `eval_steps`, `save_steps`: periodic, not per optimiser step.
        "log", "on_log", "evaluate", "prediction_step", "on_evaluate", "on_save", "_save_checkpoint",
    ),
    cold=None,
    more_cold=("create_optimizer*", "create_scheduler*", "setup_*"),
)

DIFFUSION = Preset(
    "diffusion",
    "Diffusion pipelines (diffusers): `__call__` encodes the prompt, prepares latents and decodes once per "
    "request; its denoising loop, the denoiser's forward and the scheduler's `step` run once per step.",
    hot=_FORWARD + ("step", "*Scheduler*.step", "scale_model_input", "*LoopDenoiser.__call__",
                    "*LoopBeforeDenoiser.__call__", "*LoopAfterDenoiser.__call__", "encode_prompt", "*_encode_prompt",
                    "prepare_latents", "decode_latents"),
    per_request=(
        # Modular pipelines: each block (`*Step`: input, encoder, set-timesteps, decoder steps) runs once per
        # request; only the denoise loop's blocks (`*LoopDenoiser`, ...) run per step.
        "*Step.__call__", "encode_prompt", "*_encode_prompt", "prepare_latents", "decode_latents",
    ),
    cold=None,
    more_cold=("set_timesteps", "enable_*", "disable_*", "fuse_*", "unfuse_*", "*_lora*"),
)

# A serving engine tokenizes and adds a request once, when it arrives (`_tokenize_one_request`, `add_request`),
# though a loop over the arriving requests calls it; `detokenize` runs per step and matches none of these. The
# patterns of `hot-name-new-request`, which makes them hot: once per request.
NEW_REQUEST = ("tokenize*", "*_tokenize*", "add_request*")

# A serving engine preempts a request when the KV cache runs out (sglang retracts it, vLLM and lmdeploy preempt
# it), moves its KV cache to the host (`get_cpu_copy`, `offload_kv_cache`) and back when it resumes
# (`load_cpu_copy`, `load_kv_cache`, `restore_kv_cache`): once per preempted request, though the step loop calls
# it. Backups and swaps are no such names: HiSparse swaps pages in and backs a token up every decode step. The
# patterns of `hot-name-preemption`.
PREEMPTION = (
    "*retract*", "*preempt*", "get_cpu_copy", "load_cpu_copy", "offload_kv_cache", "load_kv_cache",
    "restore_kv_cache*",
)

SERVING = Preset(
    "serving",
    "LLM serving engines (sglang, vllm, lmdeploy): schedulers, model runners, attention backends, samplers.",
    hot=None,
    per_request=NEW_REQUEST + PREEMPTION,
    cold=None,
)

NONE = Preset("none", "No name lists: markers, custom ops, loops and a traced run decide.", (), (), ())

PRESETS: Dict[str, Preset] = {preset.name: preset for preset in (SERVING, TRAINING, DIFFUSION, NONE)}

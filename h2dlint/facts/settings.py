"""What a run is configured to do: which rules, and which functions are hot or cold.

`h2dlint.project.config` builds a `Settings` from `[tool.h2dlint]` and the command line; every face of h2dlint reads
the same object.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Tuple

# Per-step and per-request entry points: their bodies run once per forward/decode step, or per request.
# Tuned on the sglang, vllm and lmdeploy runtimes (see benchmarks/engine_findings.py): the names their
# schedulers, model runners, attention backends, samplers, LoRA managers and multimodal encoders use.
# Patterns are fnmatch globs, matched against the name with and without leading underscores; a pattern with a
# dot (`*MetadataBuilder.build`) is matched against a method's class name and name instead.
DEFAULT_HOT_FUNCTIONS: Tuple[str, ...] = (
    "forward",
    "forward_*",  # forward_extend, forward_decode, _forward_impl
    "*_forward",  # model_forward, run_forward
    "*_fwd",  # kernel launchers: decode_attention_fwd
    "__call__",
    "step",
    "*_step",  # decode_step, train_step
    "*prepare_for_*",  # prepare_for_decode, prepare_for_extend, prepare_for_forward, eagle_prepare_for_decode
    "prepare_inputs*",
    "prepare_lora_*",
    "*forward_metadata*",  # attention backends: init_forward_metadata, once per forward batch
    "build*metadata*",  # metadata builders: build_metadata, build_*_metadata
    # vllm's attention metadata builders: the model runner calls `build` once per forward batch for each
    # KV-cache group (and `build_for_drafting` per draft step); one-word names need their class to be hot.
    "*MetadataBuilder.build",
    "*MetadataBuilder.build_for_drafting",
    "plan_*",  # attention and kernel planning per batch: plan_sparse_prefill
    "*_plan",  # build_*_checkpoint_plan, attach_plan
    "*replay*",  # CUDA-graph replay: replay_prepare, update_for_replay (capture stays cold)
    "*decode*",  # decode paths: forward_decode, eagle_prepare_for_decode, *_decode_attention
    "*extend*",  # prefill/extend paths: forward_extend, alloc_extend
    "execute_model",
    "sample",
    "sample_*",
    "compute_logits",
    "get_*_feature",  # multimodal encoders, once per request with images, audio or video
    "embed_multimodal",
    "process_batch_result*",
    # lmdeploy's PyTorch engine: the op backend and each model update their step context and model metas per
    # forward, called through receivers whose class is not visible (`get_backend()`, `self.model`).
    "update_step_context",
    "update_model_metas",
)

# One-time work: construction, weight loading, buffer creation, CUDA-graph capture, warmup, tests.
DEFAULT_COLD_FUNCTIONS: Tuple[str, ...] = (
    "__init__",
    "__post_init__",
    "__init_subclass__",
    "__new__",
    "*load_weights*",
    "*load_model*",
    "*build_model*",
    "*initialize*",  # initialize_model, _initialize: one-time, like __init__
    "load_state_dict",
    "*_after_loading",
    "*weight_loader*",
    "*weights_iterator*",
    "*repack*",  # weight layout conversions: repack_*, *_zero_points, *_permute_scales
    "*zero_points*",
    "*permute_scales*",
    "*autotune*",
    "*abort*",  # failure and cancellation paths
    "reset_*",  # state resets after reconfiguration or memory reuse
    "create_*weights*",
    "create_*buffer*",
    "init_*buffer*",
    "alloc*buffer*",
    "init_cuda_graph*",
    "*capture*",
    "*warmup*",
    "*warm_up*",
    "*dummy*",
    "test_*",
    "*profile_run*",
    "_profile_*",
)


class UsageError(Exception):
    """A mistake in how h2dlint was invoked or configured (exit code 2)."""


DEFAULT_HELPER_MODULE = "h2dlint.runtime"


@dataclass(frozen=True)
class Settings:
    select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    extend_hot_functions: Tuple[str, ...] = ()
    extend_cold_functions: Tuple[str, ...] = ()
    # Where fixes import `h2d_tensor` / `h2d_as_tensor` from; a project may vendor the helper.
    helper_module: str = DEFAULT_HELPER_MODULE
    # Globs over a receiver as written (`self.input_ids`, `*_gpu`, `*`) naming tensors known to live on an
    # accelerator; HTD105 reports `x.new_tensor(data)` on them, HTD107 `x.copy_(host_tensor)` into them.
    accelerator_tensors: Tuple[str, ...] = ()
    hot_functions: Tuple[str, ...] = field(init=False)
    cold_functions: Tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hot_functions", DEFAULT_HOT_FUNCTIONS + tuple(self.extend_hot_functions))
        object.__setattr__(self, "cold_functions", DEFAULT_COLD_FUNCTIONS + tuple(self.extend_cold_functions))

    def is_hot_name(self, name: str, class_name: Optional[str] = None) -> bool:
        """Whether a function `name` (a method of `class_name`, when given) has a per-step name."""
        return _matches_any(name, class_name, self.hot_functions)

    def is_cold_name(self, name: str, class_name: Optional[str] = None) -> bool:
        return _matches_any(name, class_name, self.cold_functions)


def _matches_any(name: str, class_name: Optional[str], patterns: Tuple[str, ...]) -> bool:
    bare = name.lstrip("_") or name
    plain, qualified = _split_patterns(patterns)
    if plain(name) is not None or plain(bare) is not None:
        return True
    # Only dotted patterns see the class: `*decode*` must not make every method of `DecodeCache` hot.
    return class_name is not None and any(qualified(f"{class_name}.{n}") is not None for n in (name, bare))


@functools.lru_cache(maxsize=64)
def _split_patterns(patterns: Tuple[str, ...]) -> Tuple[Callable[[str], Optional["re.Match[str]"]], ...]:
    """Matchers for the plain patterns (against a name) and the dotted ones (against `Class.name`)."""
    return (
        _compiled(tuple(p for p in patterns if "." not in p)),
        _compiled(tuple(p for p in patterns if "." in p)),
    )


@functools.lru_cache(maxsize=64)
def _compiled(patterns: Tuple[str, ...]) -> Callable[[str], Optional["re.Match[str]"]]:
    """One regular expression for all the globs: a project has tens of thousands of function names."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns) or "(?!)").match


def selected_codes(all_codes: Sequence[str], select: Sequence[str], ignore: Sequence[str]) -> Tuple[str, ...]:
    """Resolve ruff-style selectors (codes, prefixes such as `HTD1`, or `ALL`) to rule codes."""
    for selector in (*select, *ignore):
        if not _selector_codes(all_codes, selector):
            raise UsageError(f"unknown rule selector {selector!r} (known codes: {', '.join(all_codes)})")
    chosen = [c for c in all_codes if not select or any(c in _selector_codes(all_codes, s) for s in select)]
    return tuple(c for c in chosen if not any(c in _selector_codes(all_codes, s) for s in ignore))


def _selector_codes(all_codes: Sequence[str], selector: str) -> Tuple[str, ...]:
    if selector.upper() == "ALL":
        return tuple(all_codes)
    return tuple(c for c in all_codes if c.startswith(selector.upper()))

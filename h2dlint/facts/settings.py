"""What a run is configured to do: which rules, and which functions are hot or cold.

`h2dlint.project.config` builds a `Settings` from `[tool.h2dlint]` and the command line; every face of h2dlint reads
the same object.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Tuple

from h2dlint.facts.allowed_syncs import DEFAULT_SYNC_ALLOWED_CONTEXTS
from h2dlint.facts.heuristic_levels import ENCODER_INPUTS, VAE
from h2dlint.facts.heuristics import (
    COLD_MODULES,
    COLD_NAMES,
    HOT_NAMES,
    BY_ID,
    PER_REQUEST_CLASSES,
    Effect,
    Heuristic,
    configured_heuristic,
    name_patterns,
    preset_heuristic,
    unknown_ids,
)
from h2dlint.facts.presets import DIFFUSION, PRESETS, Preset
from h2dlint.facts.syntax import glob_matcher

PROCESSOR = "hot-per-request-processor"  # `facts.heuristic_levels`: matched against a class's bases
ENCODER_HEURISTIC = "hot-per-request-encoder"  # also by what a module's `forward` takes first (`ENCODER_INPUTS`)
PROCESSOR_BASES = frozenset(BY_ID[PROCESSOR].patterns)  # Hugging Face processor bases: they run on the host

# The name lists, as the registry groups them (see `h2dlint.facts.heuristics`); patterns are fnmatch globs.
DEFAULT_HOT_FUNCTIONS: Tuple[str, ...] = tuple(pattern for pattern, _ in name_patterns(HOT_NAMES, ()))
DEFAULT_COLD_FUNCTIONS: Tuple[str, ...] = tuple(pattern for pattern, _ in name_patterns(COLD_NAMES, ()))

NameTable = Tuple[Tuple[str, str], ...]  # (glob, the id of the heuristic it belongs to), in matching order

PER_REQUEST_LOOP = BY_ID["hot-per-request-loop"]
PER_REQUEST_LOOP_OVER_REQUESTS = BY_ID["hot-per-request-loop-over-requests"]
DENOISING_LOOP = BY_ID["hot-denoising-loop"]
SERVICE_LOOP = BY_ID["hot-service-loop"]

# Entry points that run once per request, not per step: a hot name matching one of these is per-request.
# A denoising loop inside them runs per step all the same (`hot-denoising-loop`, `facts.heat.site_level`).
DEFAULT_PER_REQUEST_FUNCTIONS: Tuple[str, ...] = (
    # diffusers' and transformers' pipelines: `__call__` prepares one request's inputs, loops over the
    # denoising or generation steps, and decodes the result once.
    "*Pipeline.__call__",
    "get_*_feature",  # multimodal encoders, once per request with images, audio or video
    "embed_multimodal",
    "get_multimodal_embeddings",  # `embed_multimodal` before vLLM 0.11
    # vLLM's runner runs the encoder for the step's new images (`_execute_mm_encoder`), through the models'
    # encoder CUDA-graph protocol (`encoder_cudagraph_forward`, `prepare_encoder_cudagraph_replay_buffers`)
    # or eagerly (`encoder_eager_forward`): once per request that brings them.
    "*execute_mm_encoder*",
    "*encoder_cudagraph*",
    "encoder_eager_forward",
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
    # Whether isort counts `helper_module` as the project's own (first-party; `project.helper_module`), which
    # decides the section its import joins.
    helper_first_party: bool = False
    # Globs over a receiver as written (`self.input_ids`, `*_gpu`, `*`) naming tensors known to live on an
    # accelerator; HTD105 reports `x.new_tensor(data)` on them, HTD107 `x.copy_(host_tensor)` into them.
    accelerator_tensors: Tuple[str, ...] = ()
    # Globs over a tensor as written, or its last name, naming tensors known to live on the host, in addition to
    # the `placement-name-host` conventions (`*_cpu`, ...).
    host_tensors: Tuple[str, ...] = ()
    # Context managers (names or dotted attributes, as `with <name>(...):` calls them) whose blocks keep their
    # device-to-host syncs on purpose: the HTD2xx rules are quiet inside (`facts.allowed_syncs`).
    sync_allowed_contexts: Tuple[str, ...] = DEFAULT_SYNC_ALLOWED_CONTEXTS
    # Report only findings whose code runs at least this often (`facts.heat.LEVELS`): "per-step" drops the
    # per-request ones.
    min_level: str = "per-request"
    # A traced run's records (`h2dlint trace`): its path, and a digest of its content, which the cache keys on.
    profile: Optional[str] = None
    profile_digest: str = ""
    profile_min_calls: int = 8  # a function a traced run saw run at least this often is hot
    # The default name lists (`facts.presets`), and lists that replace them (`hot-functions`, None: keep them).
    preset: str = "serving"
    replace_hot_functions: Optional[Tuple[str, ...]] = None
    replace_cold_functions: Optional[Tuple[str, ...]] = None
    per_request_functions: Tuple[str, ...] = field(init=False)
    # Ids of heuristics switched off (`h2dlint.facts.heuristics`); an unknown id is a usage error.
    disable_heuristics: Tuple[str, ...] = ()
    # The name heuristics, in matching order; a preset may replace or extend them (new ids become known ids).
    hot_names: Tuple[Heuristic, ...] = HOT_NAMES
    cold_names: Tuple[Heuristic, ...] = COLD_NAMES
    hot_functions: Tuple[str, ...] = field(init=False)
    cold_functions: Tuple[str, ...] = field(init=False)
    hot_table: NameTable = field(init=False, repr=False)
    cold_table: NameTable = field(init=False, repr=False)

    def __post_init__(self) -> None:
        preset = PRESETS.get(self.preset)
        if preset is None:
            raise UsageError(f"unknown preset {self.preset!r} (known presets: {', '.join(PRESETS)})")
        hot_names, cold_names = self._name_tables(preset)
        own = {h.id for h in (*hot_names, *cold_names)}
        unknown = [i for i in unknown_ids(self.disable_heuristics) if i not in own]
        if unknown:
            raise UsageError(unknown_heuristic_text(unknown[0]))
        hot = name_patterns(hot_names, self.disable_heuristics) + self._configured(
            "hot-name-configured", self.extend_hot_functions
        )
        cold = name_patterns(cold_names, self.disable_heuristics) + self._configured(
            "cold-name-configured", self.extend_cold_functions
        )
        # A per-request name of a hot heuristic switched off (`hot-name-preemption`) is no longer per request.
        switched_off = {p for h in hot_names if h.id in self.disable_heuristics for p in h.patterns}
        per_request = (DEFAULT_PER_REQUEST_FUNCTIONS if preset.hot != () else ()) + tuple(
            p for p in preset.per_request if p not in switched_off
        )
        object.__setattr__(self, "per_request_functions", per_request)
        object.__setattr__(self, "hot_table", hot)
        object.__setattr__(self, "cold_table", cold)
        object.__setattr__(self, "hot_functions", tuple(pattern for pattern, _ in hot))
        object.__setattr__(self, "cold_functions", tuple(pattern for pattern, _ in cold))

    def _name_tables(self, preset: Preset) -> Tuple[Tuple[Heuristic, ...], Tuple[Heuristic, ...]]:
        """The hot and cold name heuristics: the registry's (the serving preset), a preset's own lists (each
        one heuristic, `hot-name-preset-training`, ...), or the `hot-functions` / `cold-functions` that
        replace them (`hot-name-configured`, `cold-name-configured`)."""
        hot = self.hot_names if preset.hot is None else (preset_heuristic(preset, Effect.HOT, preset.hot),)
        cold = self.cold_names if preset.cold is None else (preset_heuristic(preset, Effect.COLD, preset.cold),)
        if preset.more_cold:
            cold += (preset_heuristic(preset, Effect.COLD, preset.more_cold, "more"),)
        if self.replace_hot_functions is not None:
            hot = (configured_heuristic(Effect.HOT, self.replace_hot_functions),)
        if self.replace_cold_functions is not None:
            cold = (configured_heuristic(Effect.COLD, self.replace_cold_functions),)
        return hot, cold

    def _configured(self, heuristic: str, patterns: Sequence[str]) -> NameTable:
        return () if heuristic in self.disable_heuristics else tuple((p, heuristic) for p in patterns)

    def enabled(self, heuristic: str) -> bool:
        """Whether the heuristic `heuristic` (an id of `h2dlint.facts.heuristics`) is switched on."""
        return heuristic not in self.disable_heuristics

    def is_hot_name(self, name: str, class_name: Optional[str] = None) -> bool:
        """Whether a function `name` (a method of `class_name`, when given) has a per-step name."""
        return _matches_any(name, class_name, self.hot_functions)

    def is_per_request_name(self, name: str, class_name: Optional[str] = None) -> bool:
        """Whether a per-step name (`is_hot_name`) is rather a per-request entry point."""
        return _matches_any(name, class_name, self.per_request_functions)

    def per_request_class_heuristic(self, class_name: Optional[str]) -> Optional[str]:
        """The id of the heuristic that says the per-step names of class `class_name` run once per request
        (`facts.heuristics.LEVEL_HEURISTICS`: serving's multimodal encoders, a diffusion pipeline's VAE), or None.
        Serving's encoders with the serving defaults only: a trainer runs its vision encoder every step, a
        diffusion pipeline its video denoiser."""
        if class_name is None:
            return None
        classes = (h for h in PER_REQUEST_CLASSES if self._class_heuristic_applies(h.id))
        return next((h.id for h in classes if _is_class_of(h, class_name)), None)

    def _class_heuristic_applies(self, heuristic: str) -> bool:
        """Serving's encoder classes with the serving defaults; a diffusion pipeline's VAE with its preset."""
        return self._diffusion_level(heuristic) if heuristic == VAE else self._serving_level(heuristic)

    def encoder_by_input(self, first_input: Optional[str]) -> bool:
        """Whether a module whose `forward` takes `first_input` first is a multimodal encoder, whose per-step
        names run once per request (`ENCODER_INPUTS`, `hot-per-request-encoder`): serving defaults only."""
        return (
            first_input is not None and self._serving_level(ENCODER_HEURISTIC)
            and glob_matcher(ENCODER_INPUTS)(first_input) is not None
        )

    def processor_heuristic(self, bases: Sequence[str]) -> Optional[str]:
        """`hot-per-request-processor` when one of `bases` (a class's base names, as written) is a Hugging Face
        processor or feature-extractor base and the heuristic applies; else None."""
        if not self._serving_level(PROCESSOR) or PROCESSOR_BASES.isdisjoint(bases):
            return None
        return PROCESSOR

    def runs_per_step_in_any_case(self, class_name: str) -> bool:
        """Whether class `class_name` is one the per-request class heuristics leave per step (their exceptions:
        a language model, `*ForCausalLM*`), even where an encoder builds it."""
        return any(glob_matcher(h.exceptions)(class_name) is not None for h in PER_REQUEST_CLASSES)

    def loops_repeat_per_request(self, name: str, class_name: Optional[str] = None) -> bool:
        """Whether the loops of function `name` (of `class_name`), which runs once per request, repeat per
        request (`hot-per-request-loop`), not per step: with serving's names, and a diffusion pipeline's, whose
        per-request code (`encode_prompt`, `prepare_latents`, a modular block) loops over a request's prompts,
        images or conditions, and only a pipeline's `__call__` over the denoising steps (the exception). A
        denoising loop runs per step all the same (`hot-denoising-loop`)."""
        return self._per_request_loops() and not _matches_any(name, class_name, PER_REQUEST_LOOP.exceptions)

    def loops_taken_for_steps(self, name: str, class_name: Optional[str] = None) -> bool:
        """Whether function `name` (of `class_name`), which runs once per request, is an exception of
        `hot-per-request-loop`, whose loops are taken for its denoising steps (a pipeline's `__call__`): what it
        calls outside its loops (`prepare_image`) loops over the request's items all the same, and so do its
        loops other than a denoising loop where it has one (`hot-denoising-loop`)."""
        return self._per_request_loops() and _matches_any(name, class_name, PER_REQUEST_LOOP.exceptions)

    def _per_request_loops(self) -> bool:
        return self._serving_level(PER_REQUEST_LOOP.id) or self._diffusion_level(PER_REQUEST_LOOP.id)

    def request_loop_names(self) -> Tuple[str, ...]:
        """The globs of the names that make a loop one over requests (`hot-per-request-loop-over-requests`);
        none unless serving's level heuristics apply, as a trainer has no requests."""
        return PER_REQUEST_LOOP_OVER_REQUESTS.patterns if self._serving_level(PER_REQUEST_LOOP_OVER_REQUESTS.id) else ()

    def denoising_loop_names(self) -> Tuple[str, ...]:
        """The globs of the names that make a loop a denoising loop (`hot-denoising-loop`), whatever the preset."""
        return DENOISING_LOOP.patterns if self.enabled(DENOISING_LOOP.id) else ()

    def service_loop_names(self) -> Tuple[str, ...]:
        """The globs of the stop and run flags that make a `while` loop a service loop (`hot-service-loop`)."""
        return SERVICE_LOOP.patterns if self.enabled(SERVICE_LOOP.id) else ()

    def multimodal_branches_per_request(self) -> bool:
        """Whether a branch taken only with images, audio or video runs per request
        (`hot-per-request-multimodal-branch`): serving defaults only, as a trainer takes them every step."""
        return self._serving_level("hot-per-request-multimodal-branch")

    def training_convention(self, heuristic: str) -> bool:
        """Whether the placement convention `heuristic`, which speaks of trainers, applies: switched on, and the
        training preset chosen (a serving engine's `ce_loss` is an output already copied to the host)."""
        return self.preset == "training" and self.enabled(heuristic)

    def _serving_level(self, heuristic: str) -> bool:
        """Whether the level heuristic `heuristic` applies: switched on, and the preset keeps serving's names
        (`facts.heuristic_levels` speaks of serving engines only)."""
        return PRESETS[self.preset].hot is None and self.enabled(heuristic)

    def _diffusion_level(self, heuristic: str) -> bool:
        """Whether the level heuristic `heuristic`, one that holds for a diffusion pipeline too, applies there."""
        return self.preset == DIFFUSION.name and self.enabled(heuristic)

    def is_cold_name(self, name: str, class_name: Optional[str] = None) -> bool:
        return _matches_any(name, class_name, self.cold_functions)

    def hot_name_heuristic(self, name: str, class_name: Optional[str] = None) -> Optional[str]:
        """The id of the heuristic whose per-step name `name` has, or None."""
        return _first_match(name, class_name, self.hot_table) if self.is_hot_name(name, class_name) else None

    def cold_name_heuristic(self, name: str, class_name: Optional[str] = None) -> Optional[str]:
        """The id of the heuristic whose one-time name `name` has, or None."""
        return _first_match(name, class_name, self.cold_table) if self.is_cold_name(name, class_name) else None

    def cold_module_heuristic(self, parts: Sequence[str]) -> Optional[str]:
        """The id of the heuristic that makes every function of a module cold by a part of its dotted name
        (`parts`, from `CallGraph.name_parts`: `debug_utils` of `srt.debug_utils.dumper`), or None."""
        for heuristic in COLD_MODULES:
            if self.enabled(heuristic.id) and any(glob_matcher(heuristic.patterns)(part) for part in parts):
                return heuristic.id
        return None


def unknown_heuristic_text(heuristic: str) -> str:
    return f"unknown heuristic {heuristic!r} (`h2dlint heuristics` lists them)"


def _is_class_of(heuristic: Heuristic, class_name: str) -> bool:
    """Whether `class_name` matches a glob of `heuristic` and none of its exceptions."""
    matches = glob_matcher(heuristic.patterns)(class_name) is not None
    return matches and glob_matcher(heuristic.exceptions)(class_name) is None


def _matches_any(name: str, class_name: Optional[str], patterns: Tuple[str, ...]) -> bool:
    if _matches_name(name, patterns):
        return True
    # Only dotted patterns see the class: `*decode*` must not make every method of `DecodeCache` hot.
    if class_name is None:
        return False
    qualified = _split_patterns(patterns)[1]
    return any(qualified(f"{class_name}.{n}") is not None for n in (name, _bare(name)))


# Cached by name alone: a project asks of the same few names (`forward`, `__init__`) thousands of times, but of
# each (class, name) pair about once, so a cache keyed on pairs missed nine times in ten.
@functools.lru_cache(maxsize=1 << 18)
def _matches_name(name: str, patterns: Tuple[str, ...]) -> bool:
    """Whether `name`, or `name` without its leading underscores, matches a plain pattern of `patterns`."""
    plain = _split_patterns(patterns)[0]
    return plain(name) is not None or plain(_bare(name)) is not None


def _bare(name: str) -> str:
    return name.lstrip("_") or name


def _first_match(name: str, class_name: Optional[str], table: NameTable) -> Optional[str]:
    """The heuristic of the first pattern of `table` that `_matches_any` would match; asked only of names
    that match one, so the one regular expression still answers for the many that match none."""
    for pattern, heuristic in table:
        if _matches_any(name, class_name, (pattern,)):
            return heuristic
    return None


@functools.lru_cache(maxsize=512)  # the tables of a run, and each of their patterns alone (`_first_match`)
def _split_patterns(patterns: Tuple[str, ...]) -> Tuple[Callable[[str], Optional["re.Match[str]"]], ...]:
    """Matchers for the plain patterns (against a name) and the dotted ones (against `Class.name`)."""
    return (
        glob_matcher(tuple(p for p in patterns if "." not in p)),
        glob_matcher(tuple(p for p in patterns if "." in p)),
    )


# Rule families that are off unless `select` names them (`select = ["HTD1", "HTD2"]`, `--select HTD2`): the
# device-to-host family, until its census recall and precision reach the goals of issue 18.
OPT_IN_PREFIXES: Tuple[str, ...] = ("HTD2",)


def selected_codes(all_codes: Sequence[str], select: Sequence[str], ignore: Sequence[str]) -> Tuple[str, ...]:
    """Resolve ruff-style selectors (codes, prefixes such as `HTD1`, or `ALL`) to rule codes. Without `select`,
    every rule but the opt-in families (`OPT_IN_PREFIXES`)."""
    for selector in (*select, *ignore):
        if not _selector_codes(all_codes, selector):
            raise UsageError(f"unknown rule selector {selector!r} (known codes: {', '.join(all_codes)})")
    if select:
        chosen = [c for c in all_codes if any(c in _selector_codes(all_codes, s) for s in select)]
    else:
        chosen = [c for c in all_codes if not c.startswith(OPT_IN_PREFIXES)]
    return tuple(c for c in chosen if not any(c in _selector_codes(all_codes, s) for s in ignore))


def _selector_codes(all_codes: Sequence[str], selector: str) -> Tuple[str, ...]:
    if selector.upper() == "ALL":
        return tuple(all_codes)
    return tuple(c for c in all_codes if c.startswith(selector.upper()))

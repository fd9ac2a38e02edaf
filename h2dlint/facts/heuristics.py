"""Every heuristic that makes code hot (per step or per request), cold (one-time) or one-time within a
function, as named data: an id, what it does, a one-line rationale, and the census rows that justify it.

The ids are what `explain` and the JSON output name, and what `disable-heuristics` (`--disable-heuristics`)
switches off. Ids read `<effect>-<what>`: `hot-name-forward`, `cold-decorator-cache`, `one-time-guard-hasattr`.
Entries are grouped (`Group`) so that a preset can switch a whole group (every cold name list, every guard).

`evidence` cites rows of `benchmarks/engine_labels.tsv` (`engine path:line`) whose verdict changes when the
heuristic is switched off, as `benchmarks/heuristic_evidence.py` lists them: for a hot heuristic, per-step or
per-request sites that would go unreported; for a cold or one-time one, one-time sites that would be reported.
Entries with no evidence are structural rules (markers, nesting, the loop model) or tuned on fixtures only.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Dict, Iterable, Tuple


class Effect(str, enum.Enum):
    HOT = "hot"  # code runs per step or per request
    COLD = "cold"  # a whole function runs once (setup, loading, capture, tests)
    ONE_TIME = "one-time"  # a block or loop inside a function runs once, or not once per item


class Group(str, enum.Enum):
    MARKER = "marker"  # `# h2dlint: hot|cold` comments
    NAME = "name"  # function-name globs (`Settings.hot_functions`, `Settings.cold_functions`)
    DECORATOR = "decorator"  # decorators that change when a body runs
    REGISTRATION = "registration"  # registrations that make a function reachable from forward passes
    CALL = "call"  # what the calls around a function say about it
    NESTING = "nesting"  # a nested function and its parent
    GUARD = "guard"  # blocks that run once under a condition (cached builds, once flags, lazy returns)
    LOOP = "loop"  # what counts as a per-iteration loop


@dataclass(frozen=True)
class Heuristic:
    id: str
    effect: Effect
    group: Group
    rationale: str  # one line: why code this heuristic matches is hot or cold
    patterns: Tuple[str, ...] = ()  # the fnmatch globs of a name heuristic, in matching order
    evidence: Tuple[str, ...] = ()  # `engine path:line` rows of benchmarks/engine_labels.tsv


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
    ),
    _names("hot-name-step", _HOT, "training and decode steps: `step`, `decode_step`, `train_step`", ("step", "*_step")),
    _names(
        "hot-name-prepare", _HOT, "batch preparation before each forward: prepare_for_decode, prepare_inputs",
        ("*prepare_for_*", "prepare_inputs*", "prepare_lora_*"),
    ),
    _names(
        "hot-name-metadata", _HOT, "attention metadata is rebuilt once per forward batch (init_forward_metadata)",
        # vllm's metadata builders: the model runner calls `build` once per forward batch for each KV-cache
        # group (and `build_for_drafting` per draft step); one-word names need their class to be hot.
        ("*forward_metadata*", "build*metadata*", "*MetadataBuilder.build", "*MetadataBuilder.build_for_drafting"),
    ),
    _names("hot-name-plan", _HOT, "attention and kernel planning per batch: plan_sparse_prefill", ("plan_*", "*_plan")),
    _names("hot-name-replay", _HOT, "CUDA-graph replay runs per step (capture stays cold)", ("*replay*",)),
    _names("hot-name-decode", _HOT, "decode paths run once per generated token", ("*decode*",)),
    _names("hot-name-extend", _HOT, "prefill (extend) paths run once per batch of new tokens", ("*extend*",)),
    _names("hot-name-execute-model", _HOT, "the model runner's per-step entry point", ("execute_model",)),
    _names(
        "hot-name-sampling", _HOT, "sampling and logits run once per step",
        ("sample", "sample_*", "compute_logits"),
    ),
    _names(
        "hot-name-multimodal", _HOT, "multimodal encoders run once per request with images, audio or video",
        ("get_*_feature", "embed_multimodal"),
    ),
    _names(
        "hot-name-batch-result", _HOT, "the scheduler processes each batch's result", ("process_batch_result*",)
    ),
    _names(
        "hot-name-step-context", _HOT,
        "lmdeploy updates its step context and model metas per forward, through receivers of unknown class",
        ("update_step_context", "update_model_metas"),
    ),
)

# One-time work: construction, weight loading, buffer creation, CUDA-graph capture, warmup, tests.
COLD_NAMES: Tuple[Heuristic, ...] = (
    _names(
        "cold-name-construction", _COLD, "constructors run once per object",
        ("__init__", "__post_init__", "__init_subclass__", "__new__"),
    ),
    _names(
        "cold-name-loading", _COLD, "model building, weight loading and initialisation run once at startup",
        ("*load_weights*", "*load_model*", "*build_model*", "*initialize*", "load_state_dict", "*_after_loading",
         "*weight_loader*", "*weights_iterator*"),
    ),
    _names(
        "cold-name-weight-layout", _COLD, "weight layout conversions run once after loading",
        ("*repack*", "*zero_points*", "*permute_scales*"),
    ),
    _names("cold-name-autotune", _COLD, "autotuning runs once per shape at startup", ("*autotune*",)),
    _names("cold-name-abort", _COLD, "failure and cancellation paths are rare, not per step", ("*abort*",)),
    _names("cold-name-reset", _COLD, "state resets follow reconfiguration or memory reuse", ("reset_*",)),
    _names(
        "cold-name-buffers", _COLD, "weight and buffer creation happens once, before serving",
        ("create_*weights*", "create_*buffer*", "init_*buffer*", "alloc*buffer*"),
    ),
    _names(
        "cold-name-capture", _COLD, "CUDA-graph capture and its setup run once per graph",
        ("init_cuda_graph*", "*capture*"),
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
        "a torch custom op (`@custom_op`, `direct_register_custom_op(op_func=f)`): forward passes call it",
    ),
    Heuristic(
        "hot-called-in-loop", _HOT, Group.CALL, "a function called in a loop runs once per iteration"
    ),
    Heuristic(
        "cold-only-called-once", _COLD, Group.CALL,
        "a function only one-time code calls (module level, cold functions, one-time guards) runs once",
    ),
    Heuristic(
        "hot-public-entry-point", _HOT, Group.CALL,
        "a public per-step name keeps its heat though only one-time code calls it: the engine's loop calls "
        "it where no call is in sight, and warmup or capture calling it too says nothing",
    ),
    Heuristic(
        "cold-decorator-cache", _COLD, Group.DECORATOR,
        "`@lru_cache`, `@cache`, `@cached_property`: the body runs once per key",
    ),
    Heuristic(
        "cold-decorator-compile", _COLD, Group.DECORATOR,
        "`@torch.compile`: tensors are built inside the compiled graph, not copied per call",
    ),
    Heuristic("cold-nested-in-cold", _COLD, Group.NESTING, "a function nested in a cold function is cold"),
    Heuristic(
        "hot-in-loop", _HOT, Group.LOOP, "a site in a loop or comprehension body runs once per iteration"
    ),
    Heuristic(
        "one-time-fixed-iteration", _ONCE, Group.LOOP,
        "a loop over a literal tuple or a table of constants repeats written steps, not data: setup walks "
        "grids of sizes this way",
    ),
    Heuristic(
        "one-time-guard-none", _ONCE, Group.GUARD,
        "`if self._x is None:` (or `getattr(self, '_x', None) is None`) builds a cached attribute once",
    ),
    Heuristic("one-time-guard-hasattr", _ONCE, Group.GUARD, "`if not hasattr(self, '_x'):` builds `_x` once"),
    Heuristic(
        "one-time-guard-memo", _ONCE, Group.GUARD,
        "`if t is None:` storing `t` in a cache or back in its attribute, `if key not in cache:` filling it: "
        "once per key",
    ),
    Heuristic(
        "one-time-guard-grows-on-demand", _ONCE, Group.GUARD,
        "`if n > self.max: self.max = n; ...`: runs only when a new maximum arrives",
    ),
    Heuristic(
        "one-time-guard-once-flag", _ONCE, Group.GUARD,
        "`if not X.done:` where the module only ever sets `done` to True: runs until the flag is set",
    ),
    Heuristic(
        "one-time-lazy-build", _ONCE, Group.GUARD,
        "after `if self._x is not None: return ...`, the code that sets `self._x` runs on the first call",
    ),
    Heuristic(
        "one-time-memo-lookup", _ONCE, Group.GUARD,
        "after `if (v := CACHE.get(key)) is not None: return v`, the code that fills `CACHE` runs once per key",
    ),
)

HEURISTICS: Tuple[Heuristic, ...] = HOT_NAMES + COLD_NAMES + CONFIGURED_NAMES + STRUCTURAL
BY_ID: Dict[str, Heuristic] = {h.id: h for h in HEURISTICS}
ALL_IDS: Tuple[str, ...] = tuple(BY_ID)


def unknown_ids(ids: Iterable[str]) -> Tuple[str, ...]:
    return tuple(i for i in ids if i not in BY_ID)


def name_patterns(table: Tuple[Heuristic, ...], disabled: Iterable[str]) -> Tuple[Tuple[str, str], ...]:
    """(glob, heuristic id) for the enabled heuristics of a name table, in matching order."""
    off = frozenset(disabled)
    return tuple((pattern, h.id) for h in table if h.id not in off for pattern in h.patterns)

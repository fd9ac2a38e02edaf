"""The heuristics that make every function of a module cold by what the module's path says it is
(`COLD_MODULES`, read by `project.hotness`): part of the registry of `h2dlint.facts.heuristics`.

Their globs are matched against each part of a module's dotted name in the project (`debug_utils` of
`srt.debug_utils.dumper`; `CallGraph.name_parts`), so a package makes all of its modules cold. The first part
counts only when it is a package: otherwise it names the folder the run's files share, a checkout that may be
called anything (`sglang-debug/`). A file checked without a project (flake8 on stdin) has no module name, and
these heuristics say nothing of it."""

from __future__ import annotations

from typing import Tuple

from h2dlint.facts.heuristic_types import Effect, Group, Heuristic

COLD_MODULES: Tuple[Heuristic, ...] = (
    Heuristic(
        "cold-module-debugging", Effect.COLD, Group.MODULE,
        "debugging and self-check tooling (tensor dumps, comparators, KV-cache canaries) runs only when someone "
        "switches it on, never as part of serving or training",
        ("*debug*", "*canary*"),
        evidence=(
            "sglang debug_utils/tensor_dump_forward_hook.py:59",
            "sglang kv_canary/perturb/slot_picker.py:56",
            "sglang kv_canary/token_oracle/oracle_manager.py:78",
            "sglang debug_utils/comparator/tensor_comparator/comparator.py:220",
        ),
    ),
    Heuristic(
        "cold-module-host-platform", Effect.COLD, Group.MODULE,
        "a backend for a host-only platform (Apple MLX, Intel AMX) keeps its torch tensors on the CPU, where no "
        "copy or read waits for an accelerator",
        ("mlx", "mlx_*", "*_mlx", "*amx*"),
        evidence=(
            "sglang hardware_backend/mlx/model_runner.py:862",
            "sglang hardware_backend/mlx/tp_worker.py:473",
            "sglang layers/attention/intel_amx_backend.py:146",
            "sglang hardware_backend/mlx/kv_cache/auxiliary_state.py:102",
        ),
    ),
)

# Why the code of such a module is not reported, completing "the code around it ...".
UNREPORTED_BECAUSE = {
    "cold-module-debugging": "is debugging tooling, run only when switched on",
    "cold-module-host-platform": "runs on a host-only platform, with its tensors on the CPU",
}

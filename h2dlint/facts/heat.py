"""Heat: why a function is hot or cold, and why a site is reported as hot, as plain records.

The propagation that decides heat lives in `h2dlint.project.hotness`; this module holds what every layer
above the facts reads: the record, the call-chain text, and the reasons of one site.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

from h2dlint.facts.heuristic_modules import UNREPORTED_BECAUSE
from h2dlint.facts.summary import LoopKind, Site

Key = Tuple[str, str]  # (module, qualname); the module is "" when reasoning about one module alone


HERE = "{module}"  # stands for the root's module in `Heat.origin`, written out only for other modules


_LONGEST_CHAIN_SHOWN = 8

# How often hot code runs, most frequent first. A finding's level is the level of the code it is in; a loop
# repeats its body, so a site in a loop is per step whatever runs the function around it. "observed-hot" is
# code a traced run saw repeat with no per-step root to rank it against (see `h2dlint.project.observed`).
PER_STEP, OBSERVED_HOT, PER_REQUEST = "per-step", "observed-hot", "per-request"
LEVELS = (PER_STEP, OBSERVED_HOT, PER_REQUEST)


def at_least(level: str, minimum: str) -> bool:
    """Whether code of `level` runs at least as often as `minimum` says (`LEVELS` is ordered)."""
    return LEVELS.index(level) <= LEVELS.index(minimum)


@dataclass(frozen=True)
class Heat:
    """Why a function is hot or cold."""

    hot: bool
    origin: str  # the root reason: "`Batch.forward` runs per step", "called in a loop at line 9 of `run`"
    tag: str  # the root reason in brief, shown after a call chain: "per step"
    chain: Tuple[Key, ...] = ()  # callers, nearest first, leading from the root to this function
    module: str = ""  # the module of the root
    level: str = PER_STEP  # how often hot code runs (see `LEVELS`); meaningless for cold code
    observed: Optional[int] = None  # how many times a traced run saw the function run, when that decided
    heuristic: str = ""  # the id of the heuristic that made the root hot or cold (`h2dlint.facts.heuristics`)
    # How often a loop of hot code repeats: per step, or per request where code run once per request loops
    # over that request's items (`hot-per-request-loop`); a function takes its caller's.
    loop_level: str = PER_STEP
    # The `loop_level` that what this function calls outside its loops takes, where it differs from its own: a
    # pipeline's `__call__` loops over the denoising steps, but a helper it calls once (`prepare_image`) loops
    # over one request's prompts and images (`hot-per-request-loop`). None: its own.
    callee_loop_level: Optional[str] = None
    # The root runs where a serving engine takes a request in, in its tokenizer or input-processing process
    # (`cold-sync-on-request-arrival`): on host tensors, and away from the step loop, so the D2H rules are quiet.
    on_arrival: bool = False
    # Hot only because code that is not known to be hot calls it in a loop (`hot-called-in-loop`): such a loop
    # may be a setup or debug pass, so the D2H rules treat this heat as unknown, as they do a loop alone.
    loop_alone: bool = False

    @property
    def reason(self) -> str:
        return self.reason_in(self.module)

    def reason_in(self, module: str) -> str:
        """The reason, naming functions of modules other than `module` with their module."""
        if not self.chain:
            return self.origin.replace(HERE, module_prefix(self.module, module))
        path = chain_text(f"{module_prefix(caller[0], module)}{caller[1]}" for caller in self.chain)
        return f"called from {path} ({self.tag.replace(HERE, module_prefix(self.module, module))})"

    def called_from(self, caller: Key) -> "Heat":
        chain = (caller,) + self.chain
        return Heat(
            True, self.origin, self.tag, chain, self.module, self.level, heuristic=self.heuristic,
            loop_level=self.callee_loop_level or self.loop_level, on_arrival=self.on_arrival,
            loop_alone=self.loop_alone,
        )


def chain_text(names: Iterable[str]) -> str:
    """Callers joined nearest first; a chain too long to read keeps its ends (generated code nests deeply)."""
    shown = [f"`{name}`" for name in names]
    if len(shown) > _LONGEST_CHAIN_SHOWN:
        shown = shown[:3] + [f"… {len(shown) - 4} more …"] + shown[-1:]
    return " ← ".join(shown)


def module_prefix(of: str, seen_from: str) -> str:
    return "" if of == seen_from else f"{of}."


def site_reason(site: Site, heat: Dict[str, Heat], module: str = "") -> Optional[str]:
    """Why `site` is hot, or None when it is cold or not known to be hot."""
    return site_reason_for(site, heat.get(site.function), module)


def site_reason_for(site: Site, owner: Optional[Heat], module: str = "") -> Optional[str]:
    """Why `site` (in `module`) is hot, given the heat of its function; None when cold or not known hot."""
    if site_level(site, owner) is None:
        return None
    if site.per_miss:
        return f"it runs on each cache miss of a memo keyed on a runtime value; {_where(site, owner, module)}"
    if site.multimodal_branch is not None:
        branch = f"the branch at line {site.multimodal_branch}"
        return f"it runs only with images, audio or video ({branch}); {_where(site, owner, module)}"
    return _where(site, owner, module)


def _where(site: Site, owner: Optional[Heat], module: str) -> str:
    if site.loop is not None:
        kind, line = site.loop
        where = f"in a {kind.value} at line {line}"
        if owner is not None and (not owner.hot or owner.level != PER_STEP):
            where += " (once per iteration)"  # of a loop, though the function around it is not per step
        return f"{where}; {owner.reason_in(module)}" if owner is not None else where
    return owner.reason_in(module) if owner is not None else ""


def site_level(site: Site, owner: Optional[Heat]) -> Optional[str]:
    """How often `site` runs (see `LEVELS`), or None when it is cold or not known to be hot. A function a
    traced run saw run once is one-time, but a loop in it still repeats."""
    if site_cold_reason(site) is not None:
        return None
    per_request = site.per_miss or site.multimodal_branch is not None
    if site.loop is not None and (owner is None or owner.hot or owner.observed == 1):
        if per_request:
            return PER_REQUEST
        if site.loop[0] is LoopKind.STEPS:
            return PER_STEP
        if site.loop[0] is LoopKind.PER_REQUEST and owner is not None and owner.hot:
            return owner.level  # a pipeline's `__call__` looping over video segments: per request
        if owner is not None and owner.hot:
            return owner.loop_level
        return PER_REQUEST if site.loop[0] is LoopKind.REQUESTS else PER_STEP
    if owner is not None and owner.hot:
        return PER_REQUEST if per_request else owner.level
    return None


# The heuristic that makes a site in a loop of this kind hot, where it is not `hot-in-loop`.
_LOOP_HEURISTICS = {LoopKind.SERVICE: "hot-service-loop", LoopKind.STEPS: "hot-denoising-loop"}


def site_heuristic(site: Site, owner: Optional[Heat]) -> Optional[str]:
    """The id of the heuristic that makes a hot `site` hot: the loop around it, else its function's root."""
    if site.loop is not None:
        return _LOOP_HEURISTICS.get(site.loop[0], "hot-in-loop")
    return owner.heuristic if owner is not None and owner.hot else None


def site_unreported_reason(site: Site, owner: Optional[Heat]) -> str:
    """Why `site` is not reported when `site_reason_for` finds it not hot, given the heat of its function."""
    cold = site_cold_reason(site)
    if cold is not None:
        return cold
    kind = "is not known to run per step"
    if owner is not None:
        kind = _UNREPORTED_BECAUSE.get(owner.heuristic, "runs once")
    return f"the code around it {kind} (see above)"


def site_cold_reason(site: Site) -> Optional[str]:
    """Why the site itself is one-time, whatever its function's heat; None when nothing at the site says so."""
    if site.marked_cold:
        return "the site is marked `# h2dlint: cold`"
    if site.in_graph_capture:
        return f"it runs under CUDA-graph capture ({site.capture}), which HTD106 reports"
    if site.one_time:
        return _ONE_TIME_BRANCHES.get(site.one_time, _CACHED_BUILD)
    return None


# Why a cold function's code is not reported, where that is not that it runs once.
_UNREPORTED_BECAUSE = {"cold-decorator-compile": "is compiled, not run eagerly", **UNREPORTED_BECAUSE}
_CACHED_BUILD = "it is inside a one-time cached build (`if self._x is None:` / `if not hasattr(self, ...)`)"
_ONE_TIME_BRANCHES = {  # guards that are no cached build: what their branch is
    "one-time-guard-capture": "it is in a branch that runs only during CUDA-graph capture",
    "one-time-guard-debug": "it is in a branch that runs only when debugging is switched on",
    "one-time-guard-cpu-platform": "it is in a branch that runs only on a CPU-only platform",
    "one-time-guard-rescaling": "it is in a branch that runs only while the deployment rescales (ranks join or "
    "leave)",
    "one-time-guard-once-flag": "it is in a branch that runs until a flag that is only ever set is set",
    "one-time-guard-grows-on-demand": "it is in a branch that runs only when a new maximum arrives",
    "one-time-error-path": "it runs only on the way to an exception (a `raise`, an `assert`'s message, a branch "
    "or `except` handler that ends in `raise`)",
}


def site_cold_heuristic(site: Site) -> Optional[str]:
    """The id of the heuristic behind `site_cold_reason`; None for capture, a fact of the code."""
    if site.marked_cold:
        return "cold-marker"
    if site.in_graph_capture:
        return None
    return site.one_time

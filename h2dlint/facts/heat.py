"""Heat: why a function is hot or cold, and why a site is reported as hot, as plain records.

The propagation that decides heat lives in `h2dlint.project.hotness`; this module holds what every layer
above the facts reads: the record, the call-chain text, and the reasons of one site.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

from h2dlint.facts.summary import Site

Key = Tuple[str, str]  # (module, qualname); the module is "" when reasoning about one module alone


HERE = "{module}"  # stands for the root's module in `Heat.origin`, written out only for other modules


_LONGEST_CHAIN_SHOWN = 8


@dataclass(frozen=True)
class Heat:
    """Why a function is hot or cold."""

    hot: bool
    origin: str  # the root reason: "`Batch.forward` runs per step", "called in a loop at line 9 of `run`"
    tag: str  # the root reason in brief, shown after a call chain: "per step"
    chain: Tuple[Key, ...] = ()  # callers, nearest first, leading from the root to this function
    module: str = ""  # the module of the root

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
        return Heat(True, self.origin, self.tag, (caller,) + self.chain, self.module)


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
    if site_cold_reason(site) is not None or (owner is not None and not owner.hot):
        return None
    if site.loop is not None:
        kind, line = site.loop
        where = f"in a {kind} at line {line}"
        return f"{where}; {owner.reason_in(module)}" if owner is not None else where
    return owner.reason_in(module) if owner is not None else None


def site_unreported_reason(site: Site, owner: Optional[Heat]) -> str:
    """Why `site` is not reported when `site_reason_for` finds it not hot, given the heat of its function."""
    cold = site_cold_reason(site)
    if cold is not None:
        return cold
    kind = "is not known to run per step"
    if owner is not None:
        kind = "is compiled, not run eagerly" if owner.tag == "compiled" else "runs once"
    return f"the code around it {kind} (see above)"


def site_cold_reason(site: Site) -> Optional[str]:
    """Why the site itself is one-time, whatever its function's heat; None when nothing at the site says so."""
    if site.marked_cold:
        return "the site is marked `# h2dlint: cold`"
    if site.in_graph_capture:
        return f"it runs under CUDA-graph capture ({site.capture}), which HTD106 reports"
    if site.one_time:
        return "it is inside a one-time cached build (`if self._x is None:` / `if not hasattr(self, ...)`)"
    return None

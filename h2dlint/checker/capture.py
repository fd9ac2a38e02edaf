"""Which functions of a module run under CUDA-graph capture: those a `with torch.cuda.graph(...)` block
calls, directly or through other calls of the module.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Deque, Dict, Tuple

from h2dlint.checker.call_graph import ModuleGraph
from h2dlint.facts.heat import chain_text
from h2dlint.facts.summary import MODULE, ModuleSummary


def with_capture_marks(summary: ModuleSummary) -> ModuleSummary:
    """`summary` with the sites in functions that a `with torch.cuda.graph(...)` block calls, directly or
    through other calls of this module, marked as running under capture, with the chain that makes them so.
    The summary given is not changed."""
    roots = [call for call in summary.calls if call.capture_line is not None]
    if not roots:
        return summary
    graph = ModuleGraph(summary)
    # function -> (callers from the one called in the block down to its caller, where that block is)
    captured: Dict[str, Tuple[Tuple[str, ...], str]] = {}
    queue: Deque[str] = deque()
    for call in roots:
        where = "module level" if call.caller == MODULE else f"`{call.caller}`"
        for _, callee in graph.resolve(call):
            if callee not in captured:
                captured[callee] = ((), f"inside `with torch.cuda.graph(...)` at line {call.capture_line} of {where}")
                queue.append(callee)
    while queue:
        caller = queue.popleft()
        chain, block = captured[caller]
        for _, callee in graph.callees(("", caller)):
            if callee not in captured:
                captured[callee] = ((caller,) + chain, block)
                queue.append(callee)
    sites = []
    for site in summary.sites:
        if site.capture is None and site.function in captured:
            chain, block = captured[site.function]
            via = f" from {chain_text(chain)}, which is called" if chain else ""
            site = replace(site, in_graph_capture=True, capture=f"`{site.function}` is called{via} {block}")
        sites.append(site)
    return replace(summary, sites=sites)

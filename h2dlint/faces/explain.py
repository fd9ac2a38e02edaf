"""`h2dlint explain PATH:LINE`: why the code at a line is hot or cold, and what becomes of its sites."""

from __future__ import annotations

import os
from typing import List, Optional, Sequence, Tuple

from h2dlint.checker.file_summary import FileSummary
from h2dlint.facts.heat import Heat, site_cold_heuristic, site_cold_reason
from h2dlint.facts.sources import SourceError
from h2dlint.facts.summary import FunctionInfo, Site
from h2dlint.project.findings import report_heuristic, report_reason
from h2dlint.project.run import ProjectRun
from h2dlint.rules import RULES_BY_CODE


def project_folder(path: str) -> str:
    """The outermost package folder holding `path`: its highest ancestor with an `__init__.py`, across folders
    without one between (namespace packages: torchtitan's `distributed/deepep/`, sglang's `srt/`), or the file's
    own folder."""
    folder = os.path.dirname(os.path.abspath(path))
    top = folder
    while True:
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            top = folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return os.path.relpath(top)
        folder = parent


# What a line without a recorded site means: no selected rule matched, or the tensor's placement decided it.
NOTHING_REPORTED = (
    "no construct that a selected rule reports is on this line (a copy is reported only from a tensor known to be"
    " on the host, and a device-to-host read only of one known to be on the device: unknown is never reported)"
)


def explain_line(run: ProjectRun, path: str, line: int, selected: Sequence[str] = tuple(RULES_BY_CODE)) -> List[str]:
    """Lines of text that say why `path:line` is hot or cold, and, for each site on it, whether it is reported;
    `selected` are the codes the run looked for. Raises SourceError when the file could not be analysed."""
    wanted = os.path.abspath(path)
    found = [p for p in run.summaries if os.path.abspath(p) == wanted]
    if not found:
        return [f"{path}: not analysed (not a Python file of the checked paths, or it could not be parsed)"]
    file, module = run.summaries[found[0]], run.modules[found[0]]
    if file.error is not None:
        raise SourceError(file.error)
    function = _innermost_function(file, line)
    lines = [f"{path}:{line}: {_function_verdict(function, run.heat, module)}"]
    for index, pending in enumerate(file.summary.sites):
        site = pending.decided()
        if site.span.row <= line <= site.span.end_row:
            verdict = _site_verdict(file, index, run.heat, module)
            lines.append(f"{path}:{site.span.row}:{site.span.column}: {site.code} {verdict}")
            lines.extend(f"    {step}" for step in (site.placement if site.query is None else ()))
    if len(lines) == 1:
        lines.append(f"{path}:{line}: {NOTHING_REPORTED}{_not_selected(selected)}")
    return lines


def _not_selected(selected: Sequence[str]) -> str:
    """What a line without sites leaves out: the families no rule of which was looked for (HTD2 is opt-in)."""
    families = sorted({code[:4] for code in RULES_BY_CODE} - {code[:4] for code in selected})
    if not families:
        return ""
    return f"; not looked for: {', '.join(f'{f}xx' for f in families)} (not selected; `--select` adds them)"


def _innermost_function(file: FileSummary, line: int) -> Optional[FunctionInfo]:
    enclosing = [f for f in file.summary.functions.values() if f.line <= line <= f.end_line]
    return max(enclosing, key=lambda f: f.line, default=None)


def _function_verdict(function: Optional[FunctionInfo], heat: dict, module: str) -> str:
    if function is None:
        return "at module level, which runs once on import (only loops there are per-iteration)"
    found: Optional[Heat] = heat.get((module, function.qualname))
    name = f"in `{function.qualname}`"
    if found is None:
        return (
            f"{name}, which is not known to be hot: it has no per-step name or marker, is no custom op, is not "
            "called in a loop, and no hot function calls it (calls are followed across the project through "
            "imports, the known classes of receivers and, for distinctive method names, by name)"
        )
    return _named(f"{name}, which is {'hot' if found.hot else 'cold'}: {found.reason_in(module)}", found.heuristic)


def _site_verdict(file: FileSummary, index: int, heat: dict, module: str) -> str:
    site: Site = file.summary.sites[index].decided()
    owner: Optional[Heat] = heat.get((module, site.function))
    reason = report_reason(site, owner, module)
    if site.query is not None:
        return f"is not reported: where its tensor lives depends on {_asked(site)}, which no file of the" \
            " project shows to be a placement this rule reports"
    if reason is None:
        why = RULES_BY_CODE[site.code].unreported_reason(site, owner)
        # Named when the site itself is one-time (a guard, a marker); a rule's own reason names no heuristic.
        return _named(f"is not reported: {why}", site_cold_heuristic(site) if why == site_cold_reason(site) else None)
    heuristic = report_heuristic(site, owner, reason, module)
    if file.suppressed[index]:
        return _named(f"is suppressed by `# noqa`; without it: {reason}", heuristic)
    return _named(f"is reported: {reason}", heuristic)


def _asked(site: Site) -> str:
    query = site.query
    if query is None or query.kind == "call":
        return f"what `{query.name if query else ''}()` returns"
    if query.kind == "typed":
        return f"what `{query.written}` holds, which the class of `{query.written.rpartition('.')[0]}` decides"
    if query.kind == "typed-method":
        return f"what `.{query.name}()` returns, which the class of its object decides"
    if query.kind == "callers":
        return f"what the calls of `{query.name}()` pass for `{query.parameter[0]}`, in this file and the others"
    if query.kind == "module-callers":
        return f"whether another file builds or imports `{query.name}`, whose calls here pass `{query.parameter[0]}`"
    if query.kind == "record":
        return f"what the constructor calls of `{query.owner}` put in its field `{query.name}`"
    what = f"`self.{query.name}()` returns" if query.kind == "method" else f"`self.{query.name}` holds"
    return f"what {what} in `{query.owner}`, from a base class of another file"


def _named(verdict: str, heuristic: Optional[str]) -> str:
    """`verdict`, naming the heuristic that decided it (`h2dlint heuristics ID` says more)."""
    return f"{verdict} [heuristic: {heuristic}]" if heuristic else verdict


def parse_location(text: str) -> Optional[Tuple[str, int]]:
    """`path.py:12` -> ("path.py", 12), or None when it is not of that shape."""
    path, _, line = text.rpartition(":")
    if not path or not line.isdigit() or int(line) < 1:
        return None
    return (path, int(line))

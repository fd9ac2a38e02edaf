"""`--fix` and `--diff` over a project: fix what a project check finds, with the heat it found.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, List, Optional, Sequence

from h2dlint.checker.file_summary import enabled_codes, enabled_rules
from h2dlint.facts.settings import Settings
from h2dlint.fixing.autofix import FixOutcome, applies, fix_file
from h2dlint.project.files import Excluded, discover
from h2dlint.project.findings import FileResult
from h2dlint.project.roots import Project
from h2dlint.project.run import ProjectRun, analyse, file_heat, project_cache
from h2dlint.project.summaries import Progress, collector_paused


def fix_paths(
    paths: Sequence[str],
    settings: Settings,
    exclude: Sequence[str] = (),
    jobs: Optional[int] = None,
    use_cache: bool = True,
    write: bool = True,
    excluded: Optional[Excluded] = None,
    progress: Optional[Progress] = None,
    settings_for: Optional[Callable[[str], Settings]] = None,
    project: Optional[Project] = None,
    shown: Optional[Callable[[str], Optional[str]]] = None,
    unsafe: bool = False,
) -> List[FixOutcome]:
    """Fix what a project check of `paths` finds (write=False: only compute the fixes, for --diff).

    Files with nothing fixable are not touched; the others are re-read and fixed with the heat the project
    run found for them, so `--fix` fixes exactly the findings `check` reports. `settings_for` gives a file's
    own settings (its configuration's rule selection), which decide what is fixed and reported there.
    `project` names what `paths` are (for the cache); `shown` picks the files to fix and how to name them
    (None: not one to fix), so that fixing some files of a project still uses the heat of all of it."""
    with collector_paused():
        cache = project_cache(project or Project(None, tuple(paths)), settings, use_cache)
        candidates = discover(paths, exclude, excluded)
        run = analyse(candidates, settings, jobs, cache, cache.load_last_run() if cache else None, progress)
        own = settings_for or (lambda path: settings)
        outcomes = []
        for result in run.results:
            name = shown(result.path) if shown is not None else result.path
            if name is not None:
                outcomes.append(_renamed(_fix_result(result, run, own(result.path), write, unsafe), name))
        return outcomes


def _renamed(outcome: FixOutcome, name: str) -> FixOutcome:
    return outcome if outcome.path == name else dataclasses.replace(outcome, path=name)


def _fix_result(result: FileResult, run: ProjectRun, settings: Settings, write: bool, unsafe: bool) -> FixOutcome:
    codes = enabled_codes(settings)
    selected = [d for d in result.diagnostics if d.code in codes]
    if result.error is not None or not any(applies(d.fix, unsafe) for d in selected):
        return FixOutcome(result.path, selected, 0, "", "", result.error)
    module = run.modules[result.path]
    known = (module, file_heat(run.heat, module, run.summaries[result.path]))
    return fix_file(result.path, settings, enabled_rules(settings), write=write, known=known, unsafe=unsafe)

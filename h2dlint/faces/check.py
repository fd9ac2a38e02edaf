"""`h2dlint check`: files and folders, each reported with the verdict of its whole project.

`check FILE...` (and so the pre-commit hooks, which pass the staged files) finds the project each path
belongs to (`project.roots`), analyses all of it, with the cache making that cheap, and reports only the
given paths; `--fix` likewise fixes only them, with the heat of the whole project. `--isolated-files` reasons
about the given paths alone, as one project. `--stdin-filename PATH -` checks an editor's buffer as the file
PATH of its project.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple

from h2dlint.checker.file_summary import enabled_codes, enabled_rules
from h2dlint.faces.output import count_findings, fixable_lines, render, render_errors, render_statistics
from h2dlint.faces.terminal import is_terminal, wants_colour, with_progress
from h2dlint.facts.settings import DEFAULT_HELPER_MODULE, Settings, UsageError
from h2dlint.facts.sources import SourceError, decode_source
from h2dlint.project.config import (
    Overrides,
    config_for_path,
    excluded_by_config,
    settings_for_path,
    settings_from,
    unusable_config,
    unusable_configs,
)
from h2dlint.project.findings import FileResult
from h2dlint.project.helper_module import helper_module_problem, project_roots
from h2dlint.project.observed import stale_note
from h2dlint.project.one_file import built_index, project_of, project_settings
from h2dlint.project.roots import Project, projects_for, shown_path
from h2dlint.project.run import check_paths, index_project

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

# One project to analyse: what it covers, its settings, and the given paths it holds.
if TYPE_CHECKING:
    from h2dlint.fixing.autofix import FixOutcome

EDIT_FORMATS = ("json", "sarif")  # the formats that carry each fix's text edits
DEFAULT_HELPER_NOTE = (
    "Fixed code imports `{module}`, so it needs h2dlint installed to run; `h2dlint vendor-helper PATH` "
    "copies the helper into your project instead (then set `helper-module`)."
)

_Part = Tuple[Project, Settings, List[str]]


def run_check(args: argparse.Namespace) -> int:
    overrides = Overrides(
        select=None if args.select is None else tuple(args.select),
        ignore=tuple(args.ignore),
        extend_hot_functions=tuple(args.extend_hot_functions),
        extend_cold_functions=tuple(args.extend_cold_functions),
        exclude=tuple(args.exclude),
        min_level=args.min_level,
        profile=args.profile,
        preset=args.preset,
        disable_heuristics=tuple(args.disable_heuristics),
    )
    enabled_rules(settings_from(None, overrides))  # bad selectors are usage errors even when no file is checked
    if args.paths == ["-"] or args.stdin_filename is not None:
        return _run_stdin(args, overrides)
    paths = [p for p in args.paths or ["."] if os.path.isdir(p) or unusable_config(p) is None]
    parts = _parts(paths, args, overrides)
    if args.fix or args.diff:
        return _run_fix(parts, args, overrides)
    results = _with_file_selection(_check_parts(parts, args, overrides), overrides) + _unusable_config_results()
    _note_stale_profile(parts, results)
    if args.add_noqa:
        return _add_noqa(results)
    if args.statistics:
        sys.stderr.write(render_errors(results))
        sys.stdout.write(render_statistics(results, args.output_format))
    else:
        _report(results, args)
    return _status(results)


def _note_stale_profile(parts: Sequence[_Part], results: Sequence[FileResult]) -> None:
    """One line on stderr when files changed since the traced run the profile comes from."""
    checked = [r.path for r in results if not r.error]
    for note in dict.fromkeys(stale_note(settings, checked) for _, settings, _ in parts):
        if note is not None:
            print(note, file=sys.stderr)


def _parts(paths: Sequence[str], args: argparse.Namespace, overrides: Overrides) -> List[_Part]:
    """The projects to analyse. Hotness is decided across a project's files, so the configuration governing
    its root (or, with no root, the first given path) sets the hot and cold names; rule selection and
    per-file ignores apply file by file."""
    if args.isolated_files:
        usable = _usable(paths)
        settings = settings_from(config_for_path(usable[0]) if usable else None, overrides)
        return [(Project(None, tuple(paths)), settings, list(paths))]
    parts = []
    for project, given in projects_for(paths, args.project):
        if project.root is not None and unusable_config(project.root) is not None:
            project = Project(None, tuple(given))  # its root's configuration is reported; check them alone
        first = project.paths[0] if project.root is not None else next(iter(_usable(given)), None)
        parts.append((project, settings_from(config_for_path(first) if first else None, overrides), given))
    return parts


def _usable(paths: Sequence[str]) -> List[str]:
    return [p for p in paths if unusable_config(p) is None]


def _check_parts(parts: Sequence[_Part], args: argparse.Namespace, overrides: Overrides) -> List[FileResult]:
    show = _shows_progress(args)
    progress = lambda files: with_progress(files, show=show)  # noqa: E731
    results: List[FileResult] = []
    for project, settings, given in parts:
        if project.root is None:
            results += check_paths(
                project.paths, settings, overrides.exclude, args.jobs, use_cache=not args.no_cache,
                excluded=excluded_by_config, progress=progress,
            )
            continue
        index = index_project(
            project, settings, overrides.exclude, args.jobs, use_cache=not args.no_cache,
            excluded=excluded_by_config, progress=progress, also=[p for p in given if not os.path.isdir(p)],
        )
        for path, result in index.results.items():
            shown = shown_path(path, given)
            if shown is not None:
                results.append(FileResult(shown, result.diagnostics, result.error))
    return results


def _with_file_selection(results: Sequence[FileResult], overrides: Overrides) -> List[FileResult]:
    """Keep, in each file, the findings that its own configuration selects (`per-file-ignores`, nested tables)."""
    kept = []
    for result in results:
        if not result.diagnostics:
            kept.append(result)  # nothing to filter: most files of a tree, and their settings cost a warm run
            continue
        codes = enabled_codes(settings_for_path(result.path, overrides))
        kept.append(FileResult(result.path, [d for d in result.diagnostics if d.code in codes], result.error))
    return kept


def _unusable_config_results() -> List[FileResult]:
    """Each broken configuration met, as a file that could not be used: reported once, in every format."""
    return [FileResult(e.path, (), f"{e.reason} (the files it governs were not checked)") for e in unusable_configs()]


def _add_noqa(results: Sequence[FileResult]) -> int:
    """Suppress every current finding in place, to adopt h2dlint with a clean baseline."""
    from h2dlint.fixing.baseline import add_noqa_to_file  # it imports the fixer: only `--add-noqa` needs it

    added, errors = 0, [r for r in results if r.error]
    for result in results:
        if result.diagnostics:
            try:
                added += add_noqa_to_file(result.path, result.diagnostics)
            except SourceError as error:
                errors.append(FileResult(result.path, (), str(error)))
            except OSError as error:
                errors.append(FileResult(result.path, (), f"cannot write: {error.strerror or error}"))
    sys.stderr.write(render_errors(errors))
    print(f"Added {added} noqa directive{'s' if added != 1 else ''}.")
    return EXIT_FINDINGS if errors else EXIT_CLEAN


def _run_fix(parts: Sequence[_Part], args: argparse.Namespace, overrides: Overrides) -> int:
    """`--fix` rewrites the given files in place and reports what is left; `--diff` only prints what would
    change. Hotness comes from each whole project; each file is fixed with its own configuration."""
    from h2dlint.fixing.autofix import unified_diff  # libcst is imported only where fixes are made
    from h2dlint.fixing.project_fix import fix_paths

    show = _shows_progress(args)
    outcomes: List["FixOutcome"] = []
    for project, settings, given in parts:
        _require_a_helper(project, settings)
        outcomes += fix_paths(
            project.paths, settings, overrides.exclude, args.jobs, use_cache=not args.no_cache,
            write=not args.diff, excluded=excluded_by_config, progress=lambda files: with_progress(files, show=show),
            settings_for=lambda path: settings_for_path(path, overrides), project=project,
            shown=_shown_in(given) if project.root is not None else None, unsafe=args.unsafe_fixes,
        )
    results = [FileResult(o.path, o.remaining, o.error) for o in outcomes] + _unusable_config_results()
    fixed = sum(o.fixed for o in outcomes)
    if args.diff:
        sys.stderr.write(render_errors(results))
        sys.stdout.write("".join(unified_diff(o) for o in outcomes if o.changed))
        if not args.quiet:
            sys.stderr.write(f"Would fix {count_findings(fixed)}.\n")
        return EXIT_FINDINGS if fixed or any(r.error for r in results) else EXIT_CLEAN
    _report(results, args, summary=False)
    if args.output_format in ("text", "full") and not args.quiet:
        sys.stdout.write(_fix_summary(fixed, sum(len(r.diagnostics) for r in results)))
        sys.stdout.write("".join(line + "\n" for line in fixable_lines(results)))  # what --unsafe-fixes would do
        if _used_default_helper(outcomes, overrides):
            sys.stdout.write(DEFAULT_HELPER_NOTE.format(module=DEFAULT_HELPER_MODULE) + "\n")
    return _status(results)


def _require_a_helper(project: Project, settings: Settings) -> None:
    """`helper-module` must name a module of the project or one that can be imported: one clear error."""
    problem = helper_module_problem(settings.helper_module, project_roots(project.root))
    if problem is not None:
        raise UsageError(problem)


def _used_default_helper(outcomes: Sequence["FixOutcome"], overrides: Overrides) -> bool:
    return any(
        o.fixed and settings_for_path(o.path, overrides).helper_module == DEFAULT_HELPER_MODULE
        and DEFAULT_HELPER_MODULE in o.after and DEFAULT_HELPER_MODULE not in o.before
        for o in outcomes
    )


def _shown_in(given: Sequence[str]) -> Callable[[str], Optional[str]]:
    return lambda path: shown_path(path, given)


def _fix_summary(fixed: int, remaining: int) -> str:
    """ruff's closing line after `--fix`."""
    if not fixed and not remaining:
        return "All checks passed!\n"
    return f"Found {count_findings(fixed + remaining)} ({fixed} fixed, {remaining} remaining).\n"


def _run_stdin(args: argparse.Namespace, overrides: Overrides) -> int:
    """`check --stdin-filename PATH -`: the buffer on stdin, as the file PATH of its project (which need not
    exist yet). With `--fix`, the fixed text goes to stdout and what is left to stderr."""
    if args.paths != ["-"] or args.stdin_filename is None:
        raise UsageError("stdin is read with `--stdin-filename PATH -` (one `-`, no other paths)")
    path = args.stdin_filename
    data = sys.stdin.buffer.read()
    try:
        source = decode_source(path, data)
        project = project_of(path, named=args.project)
        index = built_index(project, project_settings(project, overrides), args.jobs, use_cache=not args.no_cache)
        own = settings_for_path(path, overrides)
        if args.fix or args.diff:
            return _fix_stdin(path, source.text, source.encoding, own, index.heat_of(path), args)
        result = FileResult(path, index.verdict(source.text, path, own))
    except SourceError as error:
        if args.fix:
            sys.stdout.buffer.write(data)  # an editor replaces the buffer with stdout: give it back unchanged
        result = FileResult(path, (), str(error))
    _report([result], args)
    return _status([result])


def _fix_stdin(path: str, text: str, encoding: str, settings: Settings, known, args: argparse.Namespace) -> int:
    from h2dlint.fixing.autofix import FixOutcome, fix_source, unified_diff  # libcst only where fixes are made

    after, fixed, remaining = fix_source(text, settings, known=known, unsafe=args.unsafe_fixes)
    outcome = FixOutcome(path, remaining, fixed, text, after)
    if args.diff:
        sys.stdout.write(unified_diff(outcome) if outcome.changed else "")
        return EXIT_FINDINGS if fixed else EXIT_CLEAN
    sys.stdout.buffer.write(after.encode(encoding))
    sys.stdout.flush()
    sys.stderr.write(render([FileResult(path, remaining)], "concise"))
    return EXIT_FINDINGS if remaining else EXIT_CLEAN


def _report(results: Sequence[FileResult], args: argparse.Namespace, summary: bool = True) -> None:
    sys.stderr.write(render_errors(results))
    if args.output_format in EDIT_FORMATS:
        from h2dlint.fixing.edits import with_fix_edits  # libcst is imported only where fixes are made

        overrides = Overrides(exclude=tuple(args.exclude))
        results = with_fix_edits(results, lambda path: settings_for_path(path, overrides))
    sys.stdout.write(
        render(
            results, args.output_format, colour=wants_colour(sys.stdout), summary=summary and not args.quiet,
            reasons=args.show_reasons,
        )
    )


def _status(results: Sequence[FileResult]) -> int:
    return EXIT_FINDINGS if any(r.diagnostics or r.error for r in results) else EXIT_CLEAN


def _shows_progress(args: argparse.Namespace) -> bool:
    # Progress goes to stderr, so it is shown when a person watches stderr, whatever stdout is piped to.
    return not args.quiet and is_terminal(sys.stderr)


def add_check_options(check: argparse.ArgumentParser) -> None:
    """The options of `check` that choose what is analysed as one project, and stdin."""
    check.add_argument(
        "--project", metavar="DIR", default=None,
        help="the project root every given path belongs to (default: the nearest folder up holding "
        "pyproject.toml, setup.cfg, setup.py or .git)",
    )
    check.add_argument(
        "--isolated-files", action="store_true",
        help="reason about the given paths alone, as one project, not about the projects they belong to",
    )
    check.add_argument(
        "--stdin-filename", metavar="PATH", default=None,
        help="with the path `-`: check the text on stdin as the file PATH of its project (for editors)",
    )
    check.add_argument(
        "--show-reasons", action="store_true", help="text output: the full explanation under each finding"
    )

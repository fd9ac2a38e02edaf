"""The command line: `h2dlint check [PATHS...] [--fix|--diff]`, `h2dlint rule CODE`, `h2dlint vendor-helper PATH`.

Exit codes: 0 clean, 1 findings or a file that could not be checked, 2 usage error.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, List, Optional, Sequence

from h2dlint import __version__
from h2dlint.checker.analyzer import enabled_codes, enabled_rules
from h2dlint.faces.explain import explain_line, parse_location, project_folder
from h2dlint.faces.output import FORMATS, count_findings, render, render_errors, render_statistics
from h2dlint.faces.terminal import is_terminal, wants_colour, with_progress
from h2dlint.facts.positions import source_lines
from h2dlint.facts.settings import DEFAULT_HELPER_MODULE, Settings, UsageError
from h2dlint.facts.sources import SourceError, read_bytes, read_source
from h2dlint.fixing.baseline import add_noqa_to_file
from h2dlint.project.config import (
    Overrides,
    config_for_path,
    configs_remembered,
    excluded_by_config,
    settings_for_path,
    settings_from,
    unusable_config,
    unusable_configs,
)
from h2dlint.project.findings import FileResult
from h2dlint.project.helper_module import helper_module_problem, module_name_for, project_roots
from h2dlint.project.run import analyse_paths, check_paths
from h2dlint.rules import ALL_RULES, RULES_BY_CODE

if TYPE_CHECKING:
    from h2dlint.fixing.autofix import FixOutcome

RUNTIME_SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runtime.py")  # read, never imported

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
EDIT_FORMATS = ("json", "sarif")  # the formats that carry each fix's text edits
DEFAULT_HELPER_NOTE = (
    "Fixed code imports `{module}`, so it needs h2dlint installed to run; `h2dlint vendor-helper PATH` "
    "copies the helper into your project instead (then set `helper-module`)."
)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        with configs_remembered(), _terminate_like_interrupt():
            return _after_unusable_configs(args.run(args))
    except UsageError as error:
        print(f"h2dlint: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # Each file is replaced whole (see autofix.write_atomically), so none is left half-written.
        print("h2dlint: interrupted (no file is ever left half-written)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_FINDINGS


@contextmanager
def _terminate_like_interrupt() -> Iterator[None]:
    """SIGTERM (a CI timeout, pre-commit stopped) unwinds like Ctrl-C, so no temporary file is left behind."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _after_unusable_configs(status: int) -> int:
    """A broken configuration is a usage error, even though the files it does not govern were checked."""
    return EXIT_USAGE if unusable_configs() else status


def _unusable_config_results() -> List[FileResult]:
    """Each broken configuration met, as a file that could not be used: reported once, in every format."""
    return [FileResult(e.path, (), f"{e.reason} (the files it governs were not checked)") for e in unusable_configs()]


def run_check(args: argparse.Namespace) -> int:
    paths = [p for p in args.paths or ["."] if os.path.isdir(p) or unusable_config(p) is None]
    overrides = Overrides(
        select=None if args.select is None else tuple(args.select),
        ignore=tuple(args.ignore),
        extend_hot_functions=tuple(args.extend_hot_functions),
        extend_cold_functions=tuple(args.extend_cold_functions),
        exclude=tuple(args.exclude),
    )
    enabled_rules(settings_from(None, overrides))  # bad selectors are usage errors even when no file is checked
    # Hotness is decided across all the files of a run, so the configuration governing the first path sets
    # the hot and cold names for the whole run; rule selection and per-file ignores apply file by file.
    usable = [p for p in paths if unusable_config(p) is None]
    settings = settings_from(config_for_path(usable[0]) if usable else None, overrides)
    if args.fix or args.diff:
        config = config_for_path(usable[0]) if usable else None
        problem = helper_module_problem(settings.helper_module, project_roots(config.root if config else None))
        if problem is not None:
            raise UsageError(problem)
        return _run_fix(paths, args, settings, overrides)
    show = _shows_progress(args)
    results = check_paths(
        paths, settings, overrides.exclude, args.jobs, use_cache=not args.no_cache, excluded=excluded_by_config,
        progress=lambda files: with_progress(files, show=show),
    )
    results = _with_file_selection(results, overrides) + _unusable_config_results()
    if args.add_noqa:
        return _add_noqa(results)
    if args.statistics:
        sys.stderr.write(render_errors(results))
        sys.stdout.write(render_statistics(results, args.output_format))
    else:
        _report(results, args)
    failed = any(r.diagnostics or r.error for r in results)
    return EXIT_FINDINGS if failed else EXIT_CLEAN


def _with_file_selection(results: Sequence[FileResult], overrides: Overrides) -> List[FileResult]:
    """Keep, in each file, the findings that its own configuration selects (`per-file-ignores`, nested tables)."""
    kept = []
    for result in results:
        codes = enabled_codes(settings_for_path(result.path, overrides))
        kept.append(FileResult(result.path, [d for d in result.diagnostics if d.code in codes], result.error))
    return kept


def _add_noqa(results: Sequence[FileResult]) -> int:
    """Suppress every current finding in place, to adopt h2dlint with a clean baseline."""
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


def _run_fix(paths: Sequence[str], args: argparse.Namespace, settings: Settings, overrides: Overrides) -> int:
    """`--fix` rewrites files in place and reports what is left; `--diff` only prints what would change.
    Hotness comes from the project run; each file is fixed with its own configuration (`per-file-ignores`)."""
    from h2dlint.fixing.autofix import unified_diff  # libcst is imported only where fixes are made
    from h2dlint.fixing.project_fix import fix_paths

    show = _shows_progress(args)
    outcomes = fix_paths(
        paths, settings, overrides.exclude, args.jobs, use_cache=not args.no_cache,
        write=not args.diff, excluded=excluded_by_config, progress=lambda files: with_progress(files, show=show),
        settings_for=lambda path: settings_for_path(path, overrides), unsafe=args.unsafe_fixes,
    )
    results = [FileResult(o.path, o.remaining, o.error) for o in outcomes] + _unusable_config_results()
    fixed = sum(o.fixed for o in outcomes)
    if args.diff:
        sys.stderr.write(render_errors(results))
        sys.stdout.write("".join(unified_diff(o) for o in outcomes if o.changed))
        if not args.quiet:
            sys.stderr.write(f"Would fix {count_findings(fixed)}.\n")
        return EXIT_FINDINGS if fixed or any(r.error for r in results) else EXIT_CLEAN
    _report(results, args)
    if args.output_format == "text" and not args.quiet:
        sys.stdout.write(f"Fixed {count_findings(fixed)}.\n")
        if _used_default_helper(outcomes, overrides):
            sys.stdout.write(DEFAULT_HELPER_NOTE.format(module=DEFAULT_HELPER_MODULE) + "\n")
    failed = any(r.diagnostics or r.error for r in results)
    return EXIT_FINDINGS if failed else EXIT_CLEAN


def _used_default_helper(outcomes: Sequence["FixOutcome"], overrides: Overrides) -> bool:
    return any(
        o.fixed and settings_for_path(o.path, overrides).helper_module == DEFAULT_HELPER_MODULE
        and DEFAULT_HELPER_MODULE in o.after and DEFAULT_HELPER_MODULE not in o.before
        for o in outcomes
    )


def run_vendor_helper(args: argparse.Namespace) -> int:
    """Copy the runtime helper's source into the user's project, so it need not depend on h2dlint to run."""
    target = _vendor_target(args.path)
    source = read_bytes(RUNTIME_SOURCE)
    try:
        if os.path.exists(target) and read_bytes(target) != source and not args.force:
            raise UsageError(f"{target} exists and differs from the helper; pass --force to overwrite it")
        with open(target, "wb") as out:
            out.write(source)
    except (OSError, SourceError) as error:
        raise UsageError(f"cannot write {target}: {getattr(error, 'strerror', None) or error}") from None
    module = module_name_for(target)
    print(f"Wrote {target}. Point fixes at it in pyproject.toml:\n\n[tool.h2dlint]\nhelper-module = \"{module}\"")
    return EXIT_CLEAN


def _vendor_target(path: str) -> str:
    """The file to write: PATH itself (a `.py` file in an existing folder), or `h2d_runtime.py` in folder PATH."""
    if os.path.isdir(path):
        return os.path.join(path, "h2d_runtime.py")
    if not path.endswith(".py"):
        raise UsageError(f"{path} is neither a folder nor a .py file to write the helper to")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"the folder {os.path.dirname(path) or folder} does not exist; create it first")
    return path


def _report(results: Sequence[FileResult], args: argparse.Namespace) -> None:
    sys.stderr.write(render_errors(results))
    if args.output_format in EDIT_FORMATS:
        from h2dlint.fixing.edits import with_fix_edits  # libcst is imported only where fixes are made

        overrides = Overrides(exclude=tuple(args.exclude))
        results = with_fix_edits(results, lambda path: settings_for_path(path, overrides).helper_module)
    sys.stdout.write(
        render(results, args.output_format, colour=wants_colour(sys.stdout), summary=not args.quiet)
    )


def _shows_progress(args: argparse.Namespace) -> bool:
    # Progress goes to stderr, so it is shown when a person watches stderr, whatever stdout is piped to.
    return not args.quiet and is_terminal(sys.stderr)


def run_rule(args: argparse.Namespace) -> int:
    if args.code is None:
        width = max(len(rule.name) for rule in ALL_RULES)
        for rule in ALL_RULES:
            print(f"{rule.code}  {rule.name:<{width}} {rule.summary}")
        return EXIT_CLEAN
    rule = RULES_BY_CODE.get(args.code.upper())
    if rule is None:
        raise UsageError(f"unknown rule {args.code!r}; `h2dlint rule` lists them")
    sys.stdout.write(rule.documentation())
    return EXIT_CLEAN


def _codes(value: str) -> List[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="h2dlint",
        description="Find per-step host-to-device copies that stall the GPU pipeline.",
        epilog="Exit codes: 0 clean, 1 findings or a file that could not be checked, 2 usage error.",
    )
    parser.add_argument("--version", action="version", version=f"h2dlint {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    check = commands.add_parser("check", help="check files and folders (default: .)")
    check.add_argument("paths", nargs="*", metavar="PATH")
    check.add_argument(
        "--select", type=_codes, default=None,
        help="codes or prefixes to enable, e.g. HTD101,HTD1; replaces `select` and `ignore` of pyproject.toml",
    )
    check.add_argument("--ignore", type=_codes, default=[], help="codes or prefixes to disable")
    check.add_argument("--statistics", action="store_true", help="print the number of findings per code")
    check.add_argument(
        "--add-noqa", action="store_true", help="write `# noqa: CODE` comments that suppress every finding"
    )
    check.add_argument(
        "--output-format", choices=FORMATS, default="text",
        help="text (default; coloured on a terminal unless NO_COLOR is set), concise, json, sarif or github",
    )
    check.add_argument(
        "-q", "--quiet", action="store_true", help="print findings only: no progress, no closing summary line"
    )
    check.add_argument(
        "--exclude", action="append", default=[], metavar="PATTERN", help="a .gitignore-style pattern to skip"
    )
    check.add_argument(
        "--extend-hot-functions", type=_codes, default=[], metavar="NAMES",
        help="more per-step function names (globs), comma-separated",
    )
    check.add_argument(
        "--extend-cold-functions", type=_codes, default=[], metavar="NAMES",
        help="more one-time function names (globs), comma-separated",
    )
    fixing = check.add_mutually_exclusive_group()
    fixing.add_argument("--fix", action="store_true", help="rewrite fixable findings in place")
    fixing.add_argument(
        "--diff", action="store_true", help="print the fixes as a unified diff and change nothing (exit 1 if any)"
    )
    check.add_argument(
        "--unsafe-fixes", action="store_true",
        help="with --fix or --diff, also make the fixes that may change behaviour (each finding says why)",
    )
    _add_speed_options(check)
    check.set_defaults(run=run_check)

    vendor = commands.add_parser(
        "vendor-helper", help="write the runtime helper's source into your project (see helper-module)"
    )
    vendor.add_argument("path", metavar="PATH", help="a .py file to write, or a folder (writes h2d_runtime.py)")
    vendor.add_argument("--force", action="store_true", help="overwrite a file that differs")
    vendor.set_defaults(run=run_vendor_helper)

    rule = commands.add_parser("rule", help="print a rule's documentation, or list the rules")
    rule.add_argument("code", nargs="?", help="a rule code such as HTD101")
    rule.set_defaults(run=run_rule)

    _add_explain_command(commands)
    return parser


def _add_speed_options(check: argparse.ArgumentParser) -> None:
    check.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the cache (.h2dlint_cache/)"
    )
    check.add_argument(
        "-j", "--jobs", type=_positive_int, default=None, metavar="N",
        help="worker processes for parsing (default: the number of CPU cores; 1: no workers)",
    )


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value!r}")
    return number


def _add_explain_command(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    explain = commands.add_parser("explain", help="say why the code at PATH:LINE is hot or cold")
    explain.add_argument("location", metavar="PATH:LINE")
    explain.add_argument(
        "paths", nargs="*", metavar="PROJECT",
        help="files and folders that form the project (default: the outermost package holding PATH)",
    )
    explain.add_argument("--extend-hot-functions", type=_codes, default=[], metavar="NAMES")
    explain.add_argument("--extend-cold-functions", type=_codes, default=[], metavar="NAMES")
    _add_speed_options(explain)
    explain.set_defaults(run=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    location = parse_location(args.location)
    if location is None:
        raise UsageError(f"expected PATH:LINE, got {args.location!r}")
    path, line = location
    overrides = Overrides(
        extend_hot_functions=tuple(args.extend_hot_functions), extend_cold_functions=tuple(args.extend_cold_functions)
    )
    paths = args.paths or [project_folder(path)]
    settings = settings_from(config_for_path(paths[0]), overrides)  # as `check` of the same paths decides heat
    try:
        _require_line(path, line)
        run = analyse_paths([*paths, path], settings, args.jobs, use_cache=not args.no_cache)
        print("\n".join(explain_line(run, path, line)))
    except SourceError as error:
        print(f"{path}: error: {error}", file=sys.stderr)
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _require_line(path: str, line: int) -> None:
    if not os.path.lexists(path):
        raise SourceError("no such file or directory")
    rows = len(source_lines(read_source(path).text))
    if line > rows:
        raise SourceError(f"line {line} is past the end of the file ({rows} lines)")

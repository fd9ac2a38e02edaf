"""The command line: `h2dlint check [PATHS...] [--fix|--diff]` (faces/check.py), `h2dlint rule CODE`,
`h2dlint vendor-helper PATH`, `h2dlint explain PATH:LINE` and `h2dlint server` (the language server).

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
from h2dlint.checker.file_summary import enabled_codes
from h2dlint.faces.check import EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, add_check_options, run_check
from h2dlint.faces.explain import explain_line, parse_location, project_folder
from h2dlint.faces.output import FORMATS
from h2dlint.faces.trace import add_trace_command
from h2dlint.facts.heat import LEVELS
from h2dlint.facts.heuristics import BY_ID, HEURISTICS, PER_REQUEST_CLASSES
from h2dlint.facts.positions import source_lines
from h2dlint.facts.presets import PRESETS
from h2dlint.facts.settings import UsageError, unknown_heuristic_text
from h2dlint.facts.sources import SourceError, read_bytes, read_source
from h2dlint.project.config import Overrides, configs_remembered, unusable_configs
from h2dlint.project.helper_module import module_name_for
from h2dlint.project.one_file import project_of, project_settings
from h2dlint.project.roots import Project
from h2dlint.project.run import analyse_paths
from h2dlint.rules import ALL_RULES, OBSERVED_RULES, RULES_BY_CODE

if TYPE_CHECKING:
    pass

RUNTIME_SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runtime.py")  # read, never imported


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


def run_rule(args: argparse.Namespace) -> int:
    if args.code is None:
        listed = ALL_RULES + OBSERVED_RULES  # every code a finding may carry
        width = max(len(rule.name) for rule in listed)
        for rule in listed:
            print(f"{rule.code}  {rule.name:<{width}} {rule.summary}")
        return EXIT_CLEAN
    rule = RULES_BY_CODE.get(args.code.upper())
    if rule is None:
        raise UsageError(f"unknown rule {args.code!r}; `h2dlint rule` lists them")
    sys.stdout.write(rule.documentation())
    return EXIT_CLEAN


def run_heuristics(args: argparse.Namespace) -> int:
    """List the heuristics of the hot/cold model, or describe one: what it matches and its census rows."""
    if args.id is None:
        width = max(len(h.id) for h in HEURISTICS)
        for h in HEURISTICS:
            print(f"{h.id:<{width}}  {h.effect.value:<8}  {h.rationale}")
        return EXIT_CLEAN
    found = BY_ID.get(args.id)
    if found is None:
        raise UsageError(unknown_heuristic_text(args.id))
    print(f"{found.id} ({found.effect.value}, {found.group.value}): {found.rationale}")
    if found.patterns:
        print(f"{'class names' if found in PER_REQUEST_CLASSES else 'names'}: {', '.join(found.patterns)}")
    if found.exceptions:
        print(f"except: {', '.join(found.exceptions)}")
    for row in found.evidence:
        print(f"evidence: {row} (a blindly labelled site of the censuses in benchmarks/*labels.tsv)")
    print(f"switch it off with `--disable-heuristics {found.id}` or `disable-heuristics = [\"{found.id}\"]`")
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
    _add_selection_options(check)
    check.add_argument("--statistics", action="store_true", help="print the number of findings per code")
    check.add_argument(
        "--add-noqa", action="store_true", help="write `# noqa: CODE` comments that suppress every finding"
    )
    check.add_argument(
        "--output-format", choices=FORMATS, default="text",
        help="text (default: one short line per finding, coloured on a terminal unless NO_COLOR is set), full "
        "(the whole explanation and a code frame), concise, json, sarif or github",
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
    add_check_options(check)
    _add_heat_options(check)
    check.add_argument(
        "--min-level", choices=LEVELS, default=None,
        help="report only code that runs at least this often (default: per-request, everything)",
    )
    _add_heuristics_option(check)
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

    heuristics = commands.add_parser("heuristics", help="list the hot/cold heuristics, or describe one")
    heuristics.add_argument("id", nargs="?", help="a heuristic id such as hot-name-forward")
    heuristics.set_defaults(run=run_heuristics)

    _add_explain_command(commands)
    server = commands.add_parser("server", help="run the language server on stdio (needs h2dlint[lsp])")
    server.set_defaults(run=run_server)
    add_trace_command(commands)
    return parser


def run_server(args: argparse.Namespace) -> int:
    from h2dlint.faces.server import serve  # pygls is imported only by the language server

    return serve()


def _add_selection_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--select", type=_codes, default=None,
        help="codes or prefixes to enable, e.g. HTD101,HTD1; replaces `select` and `ignore` of pyproject.toml",
    )
    command.add_argument("--ignore", type=_codes, default=[], help="codes or prefixes to disable")


def _add_heat_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--preset", choices=tuple(PRESETS), default=None,
        help="the default per-step and one-time names for a workload (default: serving); replaces `preset`",
    )
    command.add_argument(
        "--profile", default=None, metavar="FILE",
        help="a traced run (`h2dlint trace`): its call counts decide which functions are hot; replaces `profile`",
    )


def _add_heuristics_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--disable-heuristics", type=_codes, default=[], metavar="IDS",
        help="heuristics to switch off, comma-separated ids (`h2dlint heuristics` lists them); extends "
        "`disable-heuristics` of pyproject.toml",
    )


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
    _add_selection_options(explain)
    explain.add_argument("--extend-hot-functions", type=_codes, default=[], metavar="NAMES")
    explain.add_argument("--extend-cold-functions", type=_codes, default=[], metavar="NAMES")
    _add_heat_options(explain)
    _add_heuristics_option(explain)
    _add_speed_options(explain)
    explain.set_defaults(run=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    location = parse_location(args.location)
    if location is None:
        raise UsageError(f"expected PATH:LINE, got {args.location!r}")
    path, line = location
    overrides = Overrides(
        select=None if args.select is None else tuple(args.select), ignore=tuple(args.ignore),
        extend_hot_functions=tuple(args.extend_hot_functions), extend_cold_functions=tuple(args.extend_cold_functions),
        profile=args.profile, preset=args.preset,
        disable_heuristics=tuple(args.disable_heuristics),
    )
    project = Project(None, tuple(args.paths)) if args.paths else project_of(path, loose=(project_folder(path),))
    settings = project_settings(project, overrides)  # as `check` of the same project decides heat
    try:
        _require_line(path, line)
        run = analyse_paths([*project.paths, path], settings, args.jobs, not args.no_cache, project)
        print("\n".join(explain_line(run, path, line, enabled_codes(settings))))
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

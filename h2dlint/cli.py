"""The command line: `h2dlint check [PATHS...]` and `h2dlint rule CODE`.

Exit codes: 0 clean, 1 findings or a file that could not be checked, 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from typing import Dict, List, Optional, Sequence

from h2dlint import __version__
from h2dlint.analyzer import FileResult, check_file, enabled_rules
from h2dlint.config import Overrides, excluded_by_config, settings_for_path
from h2dlint.files import discover
from h2dlint.output import FORMATS, render, render_errors, render_statistics
from h2dlint.rewrite import add_noqa_to_file
from h2dlint.rules import ALL_RULES, RULES_BY_CODE, Rule
from h2dlint.settings import Settings, UsageError

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as error:
        print(f"h2dlint: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_FINDINGS


def run_check(args: argparse.Namespace) -> int:
    paths = args.paths or ["."]
    overrides = Overrides(
        select=None if args.select is None else tuple(args.select),
        ignore=tuple(args.ignore),
        extend_hot_functions=tuple(args.extend_hot_functions),
        extend_cold_functions=tuple(args.extend_cold_functions),
        exclude=tuple(args.exclude),
    )
    rules_for: Dict[Settings, List[Rule]] = {}
    for path in paths:  # bad selectors or a broken configuration are usage errors even when no file is checked
        enabled_rules(settings_for_path(path, overrides))
    results = []
    for candidate in discover(paths, overrides.exclude, excluded_by_config):
        if candidate.error is not None:
            results.append(FileResult(candidate.path, (), candidate.error))
            continue
        settings = settings_for_path(candidate.path, overrides)
        rules = rules_for.setdefault(settings, enabled_rules(settings))
        results.append(check_file(candidate.path, settings, rules))
    if args.add_noqa:
        return _add_noqa(results)
    sys.stderr.write(render_errors(results))
    if args.statistics:
        sys.stdout.write(render_statistics(results, args.output_format))
    else:
        sys.stdout.write(render(results, args.output_format))
    failed = any(r.diagnostics or r.error for r in results)
    return EXIT_FINDINGS if failed else EXIT_CLEAN


def _add_noqa(results: Sequence[FileResult]) -> int:
    """Suppress every current finding in place, to adopt h2dlint with a clean baseline."""
    added, errors = 0, [r for r in results if r.error]
    for result in results:
        if result.diagnostics:
            try:
                added += add_noqa_to_file(result.path, result.diagnostics)
            except OSError as error:
                errors.append(FileResult(result.path, (), f"cannot write: {error.strerror or error}"))
    sys.stderr.write(render_errors(errors))
    print(f"Added {added} noqa directive{'s' if added != 1 else ''}.")
    return EXIT_FINDINGS if errors else EXIT_CLEAN


def run_rule(args: argparse.Namespace) -> int:
    if args.code is None:
        for rule in ALL_RULES:
            print(f"{rule.code}  {rule.name:<28} {rule.summary}")
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
    check.add_argument("--output-format", choices=FORMATS, default="text")
    check.add_argument("--statistics", action="store_true", help="print the number of findings per code")
    check.add_argument(
        "--add-noqa", action="store_true", help="write `# noqa: CODE` comments that suppress every finding"
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
    check.set_defaults(run=run_check)

    rule = commands.add_parser("rule", help="print a rule's documentation, or list the rules")
    rule.add_argument("code", nargs="?", help="a rule code such as HTD101")
    rule.set_defaults(run=run_rule)
    return parser

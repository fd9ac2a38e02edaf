"""The properties every program must satisfy on every face of h2dlint, shared by `tests/test_fuzz.py` and
`benchmarks/fuzz.py`.

- The checker (`check_source`) and the flake8 plugin (fed as flake8 feeds it) never raise on a program Python
  parses, nor the fixer (`fix_source`) on one Python compiles; otherwise they fail with a one-line
  `SourceError`.
- Fixed code parses (compiles, when the original did), a second fix changes nothing, nothing fixable is left,
  lines outside the flagged constructs are kept, the helper the fix calls is not shadowed, and its added
  import runs before any other code (`fix_invariants`).
- `--add-noqa`'s edit leaves code that parses and reports nothing.
- The command line on the program stored as a file (`COMMANDS`: check, `--diff`, `--fix` twice, `--add-noqa`,
  check) exits 0 or 1 and prints no traceback or internal error; the second `--fix` leaves the file's bytes
  as they were, and after `--add-noqa` a file that can be checked passes.

Each check returns `Problem`s instead of raising, so that a long run can count them by kind.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import os
import tempfile
import traceback
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from fix_invariants import (
    fixable_left_problems,
    helper_shadowing_problems,
    idempotence_problems,
    import_placement_problems,
    kept_line_problems,
    parse_problems,
)
from fuzz_programs import Program

from h2dlint.facts.noqa import add_noqa
from h2dlint.facts.settings import Settings
from h2dlint.fixing.autofix import fix_source
from h2dlint.project.findings import Diagnostic, check_source

KINDS = ("crash", "bad-error", "not-parsing", "not-idempotent", "fixable-left", "lines-changed", "shadowed-helper",
         "import-placement", "noqa", "flake8", "cli")


@dataclass(frozen=True)
class Problem:
    kind: str  # one of KINDS
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


def _crash(face: str, error: BaseException) -> Problem:
    last = traceback.extract_tb(error.__traceback__)[-1]
    return Problem("crash", f"{face} raised {type(error).__name__}: {error} ({last.filename}:{last.lineno})")


def _parses(text: str, mode: Callable[[str], object]) -> bool:
    try:
        mode(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _expected_failure(face: str, error: BaseException, valid: bool) -> Optional[Problem]:
    """A `SourceError` for a program that is not `valid` is the documented outcome, if its reason is one line."""
    from h2dlint.facts.sources import SourceError

    if not isinstance(error, SourceError) or valid:
        return _crash(face, error)
    if not str(error) or "\n" in str(error) or "\r" in str(error):
        return Problem("bad-error", f"{face}: the reason is not one line: {str(error)!r}")
    return None


def checker_problems(program: Program, settings: Settings) -> Tuple[List[Problem], List[Diagnostic]]:
    parses = _parses(program.text, ast.parse)
    try:
        return [], check_source(program.text, settings)
    except Exception as error:
        problem = _expected_failure("check_source", error, parses)
        return ([problem] if problem else []), []


def fixer_problems(program: Program, settings: Settings, diagnostics: List[Diagnostic]) -> Tuple[List[Problem], int]:
    """The problems of fixing `program`, and the number of fixes made."""
    text = program.text
    parses = _parses(text, ast.parse)
    compiles = parses and _parses(text, lambda t: compile(t, "<original>", "exec", dont_inherit=True))
    try:
        fixed, count, remaining = fix_source(text, settings, unsafe=True)
    except Exception as error:  # the fixer may refuse code that Python parses but does not compile
        problem = _expected_failure("fix_source", error, compiles)
        return ([problem] if problem else []), 0
    if not parses:  # nothing could match (no torch, no rule's trigger words), so nothing was parsed
        unchanged = (fixed, count) == (text, 0)
        return ([] if unchanged else [Problem("not-parsing", "a program that does not parse was fixed")]), count
    found = [Problem("not-parsing", p) for p in parse_problems(fixed, compiles)]
    if found:
        return found, count
    try:
        found += [Problem("not-idempotent", p) for p in idempotence_problems(fixed, settings)]
    except Exception as error:
        return [_crash("fix_source (second fix)", error)], count
    found += [Problem("fixable-left", p) for p in fixable_left_problems(remaining, unsafe=True)]
    found += [Problem("lines-changed", p) for p in kept_line_problems(text, fixed, diagnostics)]
    found += [Problem("shadowed-helper", p) for p in helper_shadowing_problems(text, fixed)]
    found += [Problem("import-placement", p) for p in import_placement_problems(text, fixed)]
    return found, count


def noqa_problems(program: Program, settings: Settings, diagnostics: List[Diagnostic]) -> List[Problem]:
    """`--add-noqa`'s edit: the code still parses, nothing is reported any more, and a second run adds nothing."""
    if not diagnostics:
        return []
    try:
        suppressed, _ = add_noqa(program.text, [(d.span.row, d.code) for d in diagnostics])
        left = check_source(suppressed, settings)
    except Exception as error:
        return [_crash("add_noqa", error)]
    if left:
        return [Problem("noqa", f"still reported after --add-noqa: {[(d.span.row, d.code) for d in left]}")]
    return []


def _flake8_options() -> argparse.Namespace:
    """The options flake8's `FileProcessor` reads, at flake8's defaults."""
    return argparse.Namespace(hang_closing=False, indent_size=4, max_line_length=79, max_doc_length=None,
                              verbose=0, stdin_display_name="stdin")


def flake8_problems(path: str, settings: Settings) -> List[Problem]:
    """Run the plugin on `path` as flake8 does: its own `FileProcessor` reads the lines (BOM stripped,
    universal newlines), and tree plugins run only when those lines parse (otherwise flake8 reports E999).
    It must report what the core reports on those lines or, for a file the CLI cannot read (say, a coding
    cookie naming an unknown encoding, which flake8 reads as latin-1), one HTD001 with the CLI's reason."""
    from flake8.processor import FileProcessor

    from h2dlint.faces.flake8_plugin import NOT_ANALYSED, Flake8Checker
    from h2dlint.project.findings import check_file

    processor = FileProcessor(path, _flake8_options())
    try:
        tree = processor.build_ast()
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    try:
        findings = [finding[:3] for finding in Flake8Checker(tree, processor.lines, path).run()]
    except Exception as error:
        return [_crash("Flake8Checker.run", error)]
    expected = [(d.span.row, d.span.column - 1, f"{d.code} {d.message}") for d in
                check_source("".join(processor.lines), settings)]
    unreadable = check_file(path, settings).error
    refused = [(1, 0, f"{NOT_ANALYSED} h2dlint could not analyse this file: {unreadable}")] if unreadable else None
    if findings not in (expected, refused):
        return [Problem("flake8", f"plugin reported {findings}, the core {expected}")]
    return []


COMMANDS = (["check"], ["check", "--diff"], ["check", "--fix", "--unsafe-fixes"], ["check", "--fix", "--unsafe-fixes"], ["check", "--add-noqa"], ["check"])


def cli_problems(folder: str) -> List[Problem]:
    """In this process: `h2dlint check`, `--diff`, `--fix` twice (the second changes no byte), `--add-noqa`,
    and `check` again, which then passes if the file can be checked. Each exits 0 or 1, with no traceback."""
    from h2dlint.faces.cli import main
    from h2dlint.project.findings import check_file

    path = os.path.join(folder, "program.py")
    readable = check_file(path, Settings()).error is None
    found, codes, contents = [], [], []
    for args in COMMANDS:
        contents.append(_read(path))
        err = io.StringIO()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                codes.append(main([*args, "--no-cache", folder]))
        except BaseException as error:  # SystemExit included: main returns its exit code
            return [_crash("h2dlint " + " ".join(args), error)]
        if codes[-1] not in (0, 1) or "Traceback" in err.getvalue() or "internal error" in err.getvalue():
            found.append(Problem("cli", f"`h2dlint {' '.join(args)}` exited {codes[-1]}: {err.getvalue()!r}"))
    if contents[3] != contents[4]:
        found.append(Problem("not-idempotent", "a second `h2dlint check --fix` changed the file"))
    if readable and codes[-1] != 0:
        found.append(Problem("noqa", "`h2dlint check` still fails after `--fix` and `--add-noqa`"))
    return found


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


@dataclass(frozen=True)
class Checked:
    problems: List[Problem]
    findings: int  # what the checker reported: a fuzzing run shows how much of its input reached the rules
    fixes: int  # what the fixer applied


def check_program(program: Program, with_cli: bool = False, settings: Settings = Settings()) -> Checked:
    """Every property above, for one program."""
    found, diagnostics = checker_problems(program, settings)
    fix_problems, fixes = fixer_problems(program, settings, diagnostics)
    found += fix_problems + noqa_problems(program, settings, diagnostics)
    with tempfile.TemporaryDirectory(prefix="h2dlint-fuzz-") as folder:
        path = os.path.join(folder, "program.py")
        with open(path, "wb") as handle:
            handle.write(program.data)
        found += flake8_problems(path, settings)
        if with_cli:
            found += cli_problems(folder)
    return Checked(found, len(diagnostics), fixes)

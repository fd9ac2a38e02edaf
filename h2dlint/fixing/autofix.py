"""Applying fixes: to source text (with the libcst transformer, `transform.py`), then to files on disk, never
leaving a half-written file. `--fix` makes the safe fixes; `--unsafe-fixes` adds the unsafe ones.
"""

from __future__ import annotations

import difflib
import os
import stat
import tempfile
from dataclasses import dataclass, replace
from functools import partial
from typing import Dict, List, Optional, Sequence, Tuple

from h2dlint.checker.file_summary import failure_reason
from h2dlint.facts.heat import Heat
from h2dlint.facts.settings import Settings
from h2dlint.facts.sources import SourceError, decode_source, read_bytes
from h2dlint.facts.summary import SAFE, Fix, Span
from h2dlint.project.findings import Diagnostic, check_source_with_heat
from h2dlint.rules import Rule

KnownHeat = Tuple[str, Dict[str, Heat]]  # a file's module name and its functions' heat, from a project run
MAX_PASSES = 3  # one pass fixes nested sites too; a later one only finds what a fix uncovered


@dataclass(frozen=True)
class FixOutcome:
    """What fixing one file did: the findings left, how many were fixed, and the text before and after."""

    path: str
    remaining: Sequence[Diagnostic]
    fixed: int
    before: str
    after: str
    error: Optional[str] = None

    @property
    def changed(self) -> bool:
        return self.before != self.after


def fix_source(
    text: str,
    settings: Settings,
    rules: Optional[Sequence[Rule]] = None,
    known: Optional[KnownHeat] = None,
    unsafe: bool = False,
) -> Tuple[str, int, List[Diagnostic]]:
    """Fix text until nothing fixable is left; returns the text, the number of fixes and the findings left.
    `known` is the heat a project run found for this file (see `check_source_with_heat`); `unsafe` also makes
    the fixes that may change behaviour."""
    from h2dlint.fixing.transform import rewrite_source  # libcst: imported only when a fix is made

    check = partial(check_source_with_heat, settings=settings, rules=rules, known=known)
    fixed = 0
    diagnostics = check(text)
    refused: Dict[Span, str] = {}  # the fixes the rewrite refused in `text`, by call, with why
    for _ in range(MAX_PASSES):
        fixes = [d.fix for d in diagnostics if applies(d.fix, unsafe)]
        if not fixes:
            break
        rewritten = rewrite_source(text, fixes, settings.helper_module, settings.helper_first_party)
        refused = {fix.call: why for fix, why in rewritten.rejected}
        if not rewritten.applied:
            break
        _require_compiles(rewritten.code, before=text)
        text, fixed = rewritten.code, fixed + len(rewritten.applied)
        diagnostics = check(text)
        refused = {}  # its spans were those of the text before
    return text, fixed, [_unfixed(d, refused) for d in diagnostics]


def _unfixed(diagnostic: Diagnostic, refused: Dict[Span, str]) -> Diagnostic:
    """`diagnostic`, no longer offering the fix the rewrite refused, and saying why."""
    why = refused.get(diagnostic.fix.call) if diagnostic.fix is not None else None
    if why is None:
        return diagnostic
    note = f"The fix was not made: {why}."
    remedy = f"{diagnostic.remedy} {note}" if diagnostic.remedy else note
    return replace(diagnostic, fix=None, message=f"{diagnostic.message} {note}", remedy=remedy)


def applies(fix: Optional[Fix], unsafe: bool) -> bool:
    """Whether `--fix` makes `fix` (`--fix --unsafe-fixes` when `unsafe`)."""
    return fix is not None and (unsafe or fix.applicability == SAFE)


def fix_file(
    path: str,
    settings: Settings,
    rules: Optional[Sequence[Rule]] = None,
    write: bool = True,
    known: Optional[KnownHeat] = None,
    unsafe: bool = False,
) -> FixOutcome:
    """Fix one file in place (or only compute the fix when `write` is false). Errors become one line."""
    try:
        raw = read_bytes(path)
        source = decode_source(path, raw)
        after, fixed, remaining = fix_source(source.text, settings, rules, known, unsafe)
        if write and after != source.text:
            write_atomically(path, after.encode(source.encoding), expected=raw)
        return FixOutcome(path, remaining, fixed, source.text, after)
    except Exception as error:  # even a bug in h2dlint must not stop the other files
        return FixOutcome(path, (), 0, "", "", failure_reason(error))


def write_atomically(path: str, data: bytes, expected: bytes) -> None:
    """Replace the file's bytes in one step, keeping its mode; refuse if it changed since it was read."""
    target = os.path.realpath(path)  # write through a symlink, don't replace the link itself
    if read_bytes(target) != expected:
        raise SourceError("changed on disk while it was being fixed; not written")
    status = os.stat(target)
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".h2dlint-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, stat.S_IMODE(status.st_mode))
        _keep_owner(temporary, status)
        os.replace(temporary, target)
    except BaseException:
        _remove_quietly(temporary)
        raise


def _keep_owner(path: str, status: os.stat_result) -> None:
    """Give the new file the old one's owner and group where we may (root fixing a user's checkout)."""
    if hasattr(os, "chown") and (status.st_uid, status.st_gid) != (os.getuid(), os.getgid()):
        try:
            os.chown(path, status.st_uid, status.st_gid)
        except OSError:
            pass  # not ours to give away: the file is fixed, owned by whoever fixed it


def unified_diff(outcome: FixOutcome) -> str:
    """The change as a unified diff, keeping each line's own ending so CRLF files diff as they are."""
    before = outcome.before.splitlines(keepends=True)
    after = outcome.after.splitlines(keepends=True)
    lines = difflib.unified_diff(before, after, fromfile=f"a/{outcome.path}", tofile=f"b/{outcome.path}")
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n" for line in lines)


def _require_compiles(fixed: str, before: str) -> None:
    """The whole compiler, not only the parser (it also rejects what only the symbol table sees): a fixed text
    that does not compile is never written. Saying why takes compiling the original too, only then."""
    problem = _compile_error(fixed)
    if problem is None:
        return
    original_problem = _compile_error(before)
    if original_problem is not None:
        raise SourceError(f"Python does not compile this file ({original_problem}); not fixed")
    raise SourceError(f"internal error: the fix would not compile ({problem}); not written, please report it")


def _compile_error(text: str) -> Optional[str]:
    try:
        compile(text, "<fixed>", "exec", dont_inherit=True)
    except SyntaxError as error:
        return error.msg
    except ValueError as error:
        return str(error)
    except (RecursionError, MemoryError):
        return "too deeply nested for Python's compiler"
    return None


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass

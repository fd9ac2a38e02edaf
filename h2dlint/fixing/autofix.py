"""Applying fixes: to source text, then to files on disk, never leaving a half-written file.

Fixes are text edits (ruff's model). A fix is applied whole or not at all; one that overlaps a fix already
taken waits for the next pass, since fixing the outer construct may make the inner one disappear or change.
"""

from __future__ import annotations

import bisect
import difflib
import os
import stat
import tempfile
from dataclasses import dataclass
from functools import partial
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from h2dlint.checker.analyzer import failure_reason
from h2dlint.facts.heat import Heat
from h2dlint.facts.positions import line_starts
from h2dlint.facts.settings import Settings
from h2dlint.facts.sources import SourceError, decode_source, read_bytes
from h2dlint.facts.summary import Fix
from h2dlint.project.findings import Diagnostic, check_source_with_heat
from h2dlint.rules import Rule

KnownHeat = Tuple[str, Dict[str, Heat]]  # a file's module name and its functions' heat, from a project run
_Edit = Tuple[int, int, str]  # start and end offsets in the text, and the new content
MAX_PASSES = 10  # nested fixable sites need one pass per level; real code needs one or two


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


def apply_fixes(text: str, fixes: Iterable[Fix]) -> Tuple[str, int]:
    """Apply every fix that does not overlap one taken before it; returns the new text and the count applied."""
    starts = line_starts(text)
    taken: List[_Edit] = []  # sorted; no two overlap
    applied = 0
    for fix in fixes:
        edits = [(_offset(starts, e.span.row, e.span.column), _offset(starts, e.span.end_row, e.span.end_column),
                  e.content) for e in fix.edits]
        fresh = [e for e in edits if not _is_taken(taken, e)]  # two fixes may need the same import
        if any(_conflicts(taken, edit) for edit in fresh):
            continue
        for edit in fresh:
            bisect.insort(taken, edit)
        applied += 1
    return _splice(text, taken), applied


def _is_taken(taken: Sequence[_Edit], edit: _Edit) -> bool:
    index = bisect.bisect_left(taken, edit)
    return index < len(taken) and taken[index] == edit


def _conflicts(taken: Sequence[_Edit], edit: _Edit) -> bool:
    """Whether `edit` overlaps an edit in `taken`. Taken edits do not overlap each other, so only the few
    around `edit`'s place in the order can: the one before it that may reach past its start, insertions at
    its start, and the first one after it."""
    index = bisect.bisect_left(taken, edit)
    return any(_overlaps(edit, other) for other in taken[max(0, index - 3) : index + 2])


def _splice(text: str, edits: Sequence[_Edit]) -> str:
    pieces, position = [], 0
    for start, end, content in edits:
        pieces += [text[position:start], content]
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def fix_source(
    text: str, settings: Settings, rules: Optional[Sequence[Rule]] = None, known: Optional[KnownHeat] = None
) -> Tuple[str, int, List[Diagnostic]]:
    """Fix text until nothing fixable is left; returns the text, the number of fixes and the findings left.
    `known` is the heat a project run found for this file (see `check_source_with_heat`)."""
    check = partial(check_source_with_heat, settings=settings, rules=rules, known=known)
    fixed = 0
    for _ in range(MAX_PASSES):
        diagnostics = check(text)
        fixes = [d.fix for d in diagnostics if d.fix is not None]
        if not fixes:
            return text, fixed, diagnostics
        new_text, applied = apply_fixes(text, fixes)
        _require_compiles(new_text, before=text)
        text, fixed = new_text, fixed + applied
    return text, fixed, check(text)


def fix_file(
    path: str,
    settings: Settings,
    rules: Optional[Sequence[Rule]] = None,
    write: bool = True,
    known: Optional[KnownHeat] = None,
) -> FixOutcome:
    """Fix one file in place (or only compute the fix when `write` is false). Errors become one line."""
    try:
        raw = read_bytes(path)
        source = decode_source(path, raw)
        after, fixed, remaining = fix_source(source.text, settings, rules, known)
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


def _offset(starts: Sequence[int], row: int, column: int) -> int:
    return starts[row - 1] + column - 1


def _overlaps(a: _Edit, b: _Edit) -> bool:
    """Two edits conflict when their ranges intersect, or when both insert at the same place."""
    return a[0] < b[1] and b[0] < a[1] or (a[0] == a[1] == b[0] == b[1])


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

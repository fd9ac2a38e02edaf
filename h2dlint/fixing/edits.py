"""The edits of each fix, for the JSON and SARIF formats, read off the libcst transformer's output: the call it
rebuilt, and the lines the helper import adds or changes (shared by every fix that needs it)."""

from __future__ import annotations

import dataclasses
import difflib
from typing import Callable, Dict, List, Sequence, Tuple

import libcst as cst

from h2dlint.facts.positions import lines_with_endings
from h2dlint.facts.settings import Settings
from h2dlint.facts.sources import read_source
from h2dlint.facts.summary import Edit, Fix, Span
from h2dlint.fixing.transform import RewritePlan, Rewritten, rewrite_source
from h2dlint.project.findings import FileResult


def with_fix_edits(results: Sequence[FileResult], settings_for: Callable[[str], Settings]) -> List[FileResult]:
    """`results` with each fix's edits; a fix the transformer cannot make (or a file it cannot read) loses it."""
    return [_with_edits(result, settings_for) for result in results]


def _with_edits(result: FileResult, settings_for: Callable[[str], Settings]) -> FileResult:
    fixes = [d.fix for d in result.diagnostics if d.fix is not None]
    if not fixes:
        return result
    try:
        settings = settings_for(result.path)
        text = read_source(result.path).text
        rewritten = rewrite_source(text, fixes, settings.helper_module, settings.helper_first_party)
    except Exception:  # the file changed or cannot be parsed by libcst: no edits to offer, the findings stand
        return _without_fixes(result)
    edits = fix_edits(rewritten)
    diagnostics = [
        dataclasses.replace(d, edits=edits[d.fix]) if d.fix in edits else dataclasses.replace(d, fix=None)
        for d in result.diagnostics
    ]
    return dataclasses.replace(result, diagnostics=diagnostics)


def _without_fixes(result: FileResult) -> FileResult:
    return dataclasses.replace(result, diagnostics=[dataclasses.replace(d, fix=None) for d in result.diagnostics])


def fix_edits(rewritten: Rewritten) -> Dict[Fix, Tuple[Edit, ...]]:
    """Each applied fix's edits: its rebuilt call, then the import edits when it calls a helper."""
    transformer = rewritten.transformer
    imports = tuple(
        dataclasses.replace(edit, content=rewritten.as_written(edit.content))
        for edit in _import_edits(rewritten.module, transformer.plan, transformer.needed_imports())
    )
    found = {}
    for fix in rewritten.applied:
        span, node = transformer.replacements[fix]
        if fix.absorbed is None and isinstance(node, cst.Call):
            node = node.with_changes(lpar=[], rpar=[])  # the call's own parentheses lie outside its span
        content = rewritten.as_written(rewritten.module.code_for_node(node))
        needs_import = fix.target in transformer.plan.names and transformer.plan.names[fix.target].import_as
        found[fix] = (Edit(span, content), *(imports if needs_import else ()))
    return found


def _import_edits(module: cst.Module, plan: RewritePlan, aliases: Sequence[Tuple[str, str]]) -> Tuple[Edit, ...]:
    if not aliases:
        return ()
    before = lines_with_endings(module.code)
    after = lines_with_endings(plan.with_import(module, aliases).code)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return tuple(
        Edit(Span(i1 + 1, 1, *_line_start(before, i2)), "".join(after[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    )


def _line_start(lines: Sequence[str], index: int) -> Tuple[int, int]:
    """Where 0-based line `index` starts; past a last line without a line break, that line's end."""
    if index < len(lines) or not lines or lines[-1].endswith(("\n", "\r")):
        return index + 1, 1
    return len(lines), len(lines[-1]) + 1

"""`h2dlint server`: a language server over stdio (LSP, with pygls: `pip install h2dlint[lsp]`).

It serves, for each open Python file:
- diagnostics on open, change and save: the verdict `h2dlint check` gives the file (`one_file`), with the
  heat of its whole project; while a buffer is unsaved, its text is checked with the heat the project run
  found for the file;
- code actions that apply the safe fixes (the same edits `--fix` makes);
- hover text with the full explanation: why the site is reported and what to do instead.

A save refreshes the project's index (only the changed files are parsed again, through the cache). pygls is
imported here only: the linter's core never needs it.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from h2dlint import __version__
from h2dlint.faces.brief import short_message
from h2dlint.facts.settings import Settings, UsageError
from h2dlint.facts.sources import SourceError
from h2dlint.facts.summary import Span
from h2dlint.project.config import settings_for_path
from h2dlint.project.findings import Diagnostic
from h2dlint.project.one_file import ProjectIndex, built_index, project_of, project_settings
from h2dlint.rules import RULES_BY_CODE

SOURCE = "h2dlint"


class Verdicts:
    """The findings of open documents, from their projects' indexes (kept until a save changes them)."""

    def __init__(self) -> None:
        self.indexes: Dict[Tuple[str, Settings], ProjectIndex] = {}
        self.found: Dict[str, List[Diagnostic]] = {}  # by path: the last findings published

    def check(self, path: str, text: str, refresh: bool = False) -> List[Diagnostic]:
        """The findings of `path` holding `text`; `refresh` rebuilds its project's index first (on save).
        Text that does not parse yet (mid-edit) has no findings. Raises UsageError for a broken configuration."""
        project = project_of(path)
        settings = project_settings(project)
        key = (project.identity, settings)
        if refresh or key not in self.indexes:
            self.indexes[key] = built_index(project, settings)
        try:
            found = self.indexes[key].verdict(text, path, settings_for_path(path))
        except SourceError:
            found = []
        self.found[path] = found
        return found

    def at(self, path: str, line: int, character: int) -> List[Diagnostic]:
        """The published findings whose span holds the 0-based position."""
        return [d for d in self.found.get(path, ()) if _holds(d.span, line + 1, character + 1)]


def _holds(span: Span, row: int, column: int) -> bool:
    return (span.row, span.column) <= (row, column) <= (span.end_row, span.end_column)


def hover_text(found: List[Diagnostic]) -> str:
    """Markdown: for each finding, its rule, why it is reported and what to do."""
    parts = []
    for d in found:
        rule = RULES_BY_CODE.get(d.code)
        title = f"**{d.code}** {rule.name}" if rule is not None else f"**{d.code}**"
        parts.append(f"{title}\n\n{d.message}" if not d.reason else f"{title}\n\nWhy: {d.reason}\n\nFix: {d.remedy}")
    return "\n\n---\n\n".join(parts)


def serve() -> int:  # pragma: no cover - run as a subprocess by tests/test_server.py
    try:
        server = _server()
    except ImportError:
        raise UsageError("the language server needs pygls: pip install 'h2dlint[lsp]'") from None
    server.start_io()
    return 0


def _server():
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

    server = LanguageServer(SOURCE, __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
    verdicts = Verdicts()

    def publish(uri: str, refresh: bool = False) -> None:
        document = server.workspace.get_text_document(uri)
        path = document.path
        if not path.endswith((".py", ".pyi")):
            return
        try:
            found = verdicts.check(path, document.source, refresh)
        except UsageError as error:  # a broken pyproject.toml: say so once, as the CLI does
            server.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"h2dlint: {error}"))
            found = []
        diagnostics = [_lsp_diagnostic(types, d) for d in found]
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=document.version)
        )

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        publish(params.text_document.uri, refresh=True)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    def code_action(params: types.CodeActionParams) -> List[types.CodeAction]:
        path = server.workspace.get_text_document(params.text_document.uri).path
        start, end = params.range.start, params.range.end
        found = {d for line in range(start.line, end.line + 1) for d in verdicts.found.get(path, ())
                 if d.span.row <= line + 1 <= d.span.end_row}
        document = server.workspace.get_text_document(params.text_document.uri)
        return _code_actions(types, params.text_document.uri, document.source, path, sorted(found, key=_order))

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> Optional[types.Hover]:
        path = server.workspace.get_text_document(params.text_document.uri).path
        found = verdicts.at(path, params.position.line, params.position.character)
        if not found:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=hover_text(found)))

    return server


def _order(d: Diagnostic) -> Tuple[int, int, str]:
    return (d.span.row, d.span.column, d.code)


def _range(types, span: Span):
    # LSP positions are 0-based; the core's rows and columns are 1-based, end exclusive.
    return types.Range(
        start=types.Position(line=span.row - 1, character=span.column - 1),
        end=types.Position(line=span.end_row - 1, character=span.end_column - 1),
    )


def _lsp_diagnostic(types, d: Diagnostic):
    return types.Diagnostic(
        range=_range(types, d.span), message=short_message(d), severity=types.DiagnosticSeverity.Warning,
        code=d.code, source=SOURCE,
    )


def _code_actions(types, uri: str, text: str, path: str, found: List[Diagnostic]) -> list:
    """A quick fix for each safe fix among `found`, its edits made by the same transformer as `--fix`, on the
    editor's text."""
    from h2dlint.fixing.autofix import applies  # libcst is imported only where fixes are made
    from h2dlint.fixing.edits import fix_edits
    from h2dlint.fixing.transform import rewrite_source

    safe = [d for d in found if applies(d.fix, unsafe=False)]
    if not safe:
        return []
    try:
        settings = settings_for_path(path)
        rewritten = rewrite_source(text, [d.fix for d in safe], settings.helper_module, settings.helper_first_party)
        edits = fix_edits(rewritten)
    except SourceError:
        return []
    return [_code_action(types, uri, d, edits[d.fix]) for d in safe if d.fix in edits]


def _code_action(types, uri: str, d: Diagnostic, fix_edits):
    edits = [types.TextEdit(range=_range(types, e.span), new_text=e.content) for e in fix_edits]
    return types.CodeAction(
        title=f"{d.fix.message} ({d.code})",  # type: ignore[union-attr]
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[_lsp_diagnostic(types, d)],
        edit=types.WorkspaceEdit(changes={uri: edits}),
        is_preferred=True,
    )

"""The language server, driven by pygls's own LSP client over stdio: `h2dlint server` in a subprocess."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from conftest import PYTHON

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

LOOP = (
    "from pkg.batching import pack_ids\n\n\n"
    "def generate(batches, device):\n    for ids in batches:\n        yield pack_ids(ids, device)\n"
)
BATCHING = "import torch\n\n\ndef pack_ids(ids, device):\n    return torch.tensor(list(ids), device=device)\n"


def two_file_project(root: Path) -> Path:
    """`loop.py` calls `batching.pack_ids` in a loop; `pack_ids` builds `torch.tensor(list(ids), device=device)`."""
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n", encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "loop.py").write_text(LOOP, encoding="utf-8")
    batching = root / "pkg" / "batching.py"
    batching.write_text(BATCHING, encoding="utf-8")
    return batching


class Session:
    """A client talking to `h2dlint server`, collecting the diagnostics it publishes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.client = LanguageClient("h2dlint-test", "1")
        self.published: "asyncio.Queue[types.PublishDiagnosticsParams]" = asyncio.Queue()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait(params)

    async def start(self) -> None:
        await self.client.start_io(PYTHON, "-m", "h2dlint", "server", env=dict(os.environ), cwd=str(self.root))
        await self.client.initialize_async(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=self.root.as_uri())
        )
        self.client.initialized(types.InitializedParams())

    async def next_diagnostics(self) -> types.PublishDiagnosticsParams:
        return await asyncio.wait_for(self.published.get(), timeout=60)

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def run(coroutine):
    return asyncio.run(coroutine)


def test_open_change_save_hover_and_code_action(tmp_path):
    batching = two_file_project(tmp_path)
    uri = batching.as_uri()

    async def session():
        s = Session(tmp_path)
        await s.start()
        try:
            s.client.text_document_did_open(types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=BATCHING)
            ))
            opened = await s.next_diagnostics()
            [d] = opened.diagnostics
            assert (d.code, d.range.start.line, d.range.start.character) == ("HTD101", 4, 11)
            assert "`pkg.loop.generate`" in d.message and len(d.message) <= 120  # the whole project's heat

            hover = await s.client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line=4, character=15))
            )
            assert "Why: called in a loop at line 5 of `pkg.loop.generate`" in hover.contents.value
            assert "pin_memory=True" in hover.contents.value

            actions = await s.client.text_document_code_action_async(types.CodeActionParams(
                types.TextDocumentIdentifier(uri), d.range, types.CodeActionContext(diagnostics=[d])
            ))
            [action] = actions
            edits = action.edit.changes[uri]
            assert any("h2d_tensor" in e.new_text for e in edits)

            # An unsaved edit that moves the call: the buffer's text is checked, with the project's heat.
            edited = BATCHING.replace("    return", "    ids = list(ids)\n    return")
            s.client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                [types.TextDocumentContentChangeWholeDocument(text=edited)],
            ))
            [moved] = (await s.next_diagnostics()).diagnostics
            assert moved.range.start.line == 5

            # Saving a change in the other file (the caller's loop gone) reaches this file's verdict.
            (tmp_path / "pkg" / "loop.py").write_text(LOOP.replace("for ids in batches:\n        yield", "yield"))
            s.client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
            assert list((await s.next_diagnostics()).diagnostics) == []
        finally:
            await s.stop()

    run(session())


def test_a_file_that_does_not_parse_yet_has_no_diagnostics(tmp_path):
    batching = two_file_project(tmp_path)

    async def session():
        s = Session(tmp_path)
        await s.start()
        try:
            s.client.text_document_did_open(types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=batching.as_uri(), language_id="python", version=1, text="def f(:\n")
            ))
            assert list((await s.next_diagnostics()).diagnostics) == []
        finally:
            await s.stop()

    run(session())

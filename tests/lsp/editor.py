"""What the editor does in these tests: open and change documents, wait, and apply edits.

Edits are applied here independently of the server's own position code (UTF-16 positions,
lines broken at CRLF, CR or LF), so a wrong range from the server shows up as a wrong text.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Union

import pytest_lsp
from cattrs import Converter
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from tests import waiting
from tests.scratch import process_folder

RECORD = "---\nname: {name}\ndescription: {description}\ntype: {type}\n---\n{body}"
_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def make_client() -> LanguageClient:
    """pytest-lsp's client, reading code actions that carry a command as code actions.

    lsprotocol structures every item of a code-action result that has a `command` key as a bare
    `Command`, dropping the action's kind, diagnostics and edit; VS Code (and the spec) take an
    item for a `Command` only when its `command` is a string, the command's id.
    """
    client = LanguageClient(converter_factory=_converter)
    register_lsp_features(client)
    return client


def _converter() -> Converter:
    converter = default_converter()

    def command_or_action(item: dict[str, Any], _: type) -> types.Command | types.CodeAction:
        kind = types.Command if isinstance(item.get("command"), str) else types.CodeAction
        return converter.structure(item, kind)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], command_or_action)  # noqa: UP007
    return converter


def own_home(prefix: str) -> Home:
    """A test module's own home; should its fixture fail to stop the daemon its server starts,
    the daemon stops itself after two idle minutes."""
    home = Home(process_folder(prefix) / "home").ensure_layout()
    home.settings_file.write_text("daemon:\n  idle_minutes: 2\n")
    return home


def module_client(home: Home, client_factory: Callable[[], LanguageClient] = make_client) -> Any:
    """The module's `client` fixture: one `remem lsp` of `home`, begun and ended around it."""
    server = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "lsp"]
    config = ClientServerConfig(
        server_command=server, server_env=dict(os.environ), client_factory=client_factory
    )

    @pytest_lsp.fixture(scope="module", config=config)
    async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
        await begin(lsp_client)
        yield
        await end(lsp_client)

    return client


async def begin(client: LanguageClient) -> None:
    """The session start VS Code makes."""
    answer_lens_refreshes(client)
    await client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    )


def answer_lens_refreshes(client: LanguageClient) -> None:
    """Answer the server's `workspace/codeLens/refresh`, as VS Code's capabilities promise (a
    test that watches for them registers its own handler first)."""
    if types.WORKSPACE_CODE_LENS_REFRESH not in client.protocol.fm.features:
        client.feature(types.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)


async def end(client: LanguageClient) -> None:
    await asyncio.wait_for(client.shutdown_session(), waiting.SECONDS)


def record(name: str, *, type: str = "project", description: str = "A fact", body: str = "Body.\n") -> str:
    return RECORD.format(name=name, description=description, type=type, body=body)


def open_document(client: LanguageClient, path_or_uri: Path | str, text: str) -> str:
    uri = path_or_uri.as_uri() if isinstance(path_or_uri, Path) else path_or_uri
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text=text)
        )
    )
    return uri


def change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def close(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


async def until(condition: Callable[[], bool], seconds: float = waiting.SECONDS) -> None:
    await waiting.until(condition, seconds)


def codes(client: LanguageClient, uri: str) -> list[str]:
    """The rule ids (`remem/<code>`) of the diagnostics published for `uri`."""
    return sorted(f"{d.source}/{d.code}" for d in client.diagnostics.get(uri, []))


def refusing_daemon(home: Home) -> Home:
    """`home`, whose daemon fails as it starts: where it writes its status file stands a folder."""
    home.ensure_layout()
    (home.state / "daemon.json").mkdir(exist_ok=True)
    return home


def workspace_folder(home: Home, project: str, *, with_info: bool = False) -> Path:
    """A fresh workspace folder; `with_info` writes its workspace.json (the project's cwd)."""
    workspace = WorkspaceId.from_cwd(f"/projects/{project}")
    folder = home.workspaces / workspace.key
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if with_info:
        (folder / "workspace.json").write_text(
            f'{{"cwd": "{workspace.cwd}", "createdAt": "2026-01-01T00:00:00Z"}}'
        )
    return folder


def apply_edits(text: str, edits: Sequence[types.TextEdit]) -> str:
    """`text` with `edits` applied as LSP says: all ranges refer to the original text."""
    spans = sorted(
        ((_offset(text, e.range.start), _offset(text, e.range.end), e.new_text) for e in edits), reverse=True
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def edits_for(edit: types.WorkspaceEdit, uri: str) -> list[types.TextEdit]:
    """The text edits of one document in a workspace edit, in either of its two shapes."""
    if edit.document_changes is not None:
        return [
            e
            for change in edit.document_changes
            if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri
            for e in change.edits
            if isinstance(e, types.TextEdit)
        ]
    return list((edit.changes or {}).get(uri, []))


def _offset(text: str, position: types.Position) -> int:
    lines = _LINES.findall(text)
    if position.line >= len(lines):
        return len(text)
    offset = sum(len(line) for line in lines[: position.line])
    line = lines[position.line].rstrip("\r\n")
    units = 0
    for ch in line:
        if units >= position.character:
            break
        units += 2 if ord(ch) > 0xFFFF else 1
        offset += 1
    return offset

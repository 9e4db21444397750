"""A change to memory on disk that no daemon tells of is judged again when the editor sees it.

The server heard of changes on disk only through the daemon's news: without a daemon, a
workspace folder deleted left its open records' diagnostics as they were until the next edit.
It now asks the editor, once a memory document is open, to watch memory
(`client/registerCapability` of `workspace/didChangeWatchedFiles`), and judges again what a
change it hears of concerns. The editor's watcher is played here: its notification is the
boundary; what is judged, and published, is the server's.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from remem.daemon.home import Home

from .piped_server import WATCHES, Server, codes_after, initialize_with, note_text, server  # noqa: F401 - the fixture

DELETED = 3  # FileChangeType.Deleted


def _registrations(talked: Server) -> list[dict[str, Any]]:
    asked = [m for m in talked.heard if m.get("method") == "client/registerCapability"]
    return [r for m in asked for r in m["params"]["registrations"]]


def test_a_workspace_folder_deleted_on_disk_is_judged_again_when_the_editor_tells(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    home = Home(tmp_path / "home")
    folder = home.workspaces / "proj"
    folder.mkdir(parents=True)
    (folder / "note-b.md").write_text(note_text("note-a"))  # a sibling that claims the same name
    uri = (folder / "note-a.md").as_uri()
    initialize_with(server, WATCHES)
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "markdown", "version": 1, "text": note_text("note-a")}}})  # fmt: skip
    assert "name-duplicate" in codes_after(server, uri, 1)

    [registration] = _registrations(server)
    assert registration["method"] == "workspace/didChangeWatchedFiles"
    [watcher] = registration["registerOptions"]["watchers"]
    assert watcher["globPattern"]["baseUri"] == home.root.as_uri()
    asked = next(m for m in server.heard if m.get("method") == "client/registerCapability")
    server.send({"id": asked["id"], "result": None})

    shutil.rmtree(folder)  # by hand, no daemon running
    server.send({"method": "workspace/didChangeWatchedFiles", "params": {
        "changes": [{"uri": folder.as_uri(), "type": DELETED}]}})  # fmt: skip
    assert codes_after(server, uri, 2) == []


def test_an_editor_that_cannot_watch_on_request_is_not_asked(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    folder = Home(tmp_path / "home").workspaces / "proj"
    folder.mkdir(parents=True)
    uri = (folder / "note-a.md").as_uri()
    initialize_with(server, {})
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "markdown", "version": 1, "text": note_text("note-a")}}})  # fmt: skip
    assert codes_after(server, uri, 1) == []
    assert _registrations(server) == []

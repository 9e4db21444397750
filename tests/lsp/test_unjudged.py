"""A memory folder the server cannot judge says so on its open documents, not in popups.

A folder that could not be listed (here a loop of links where the workspaces are; a folder of
another user's, EACCES, does the same) made every open, change and save show pygls's "Error in
server: …" popup, and its documents showed no diagnostic at all: easy to miss, repeated with
each keystroke, and nothing went away once the folder was fixed (decision 0459).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.lsp.features.diagnostics import RETRY_UNJUDGED
from remem.lsp.rule_docs import rule_href

from .editor import RECORD
from .piped_server import ANSWER_SECONDS, Server, initialize, receive, server  # noqa: F401 - the fixture

TEXT = RECORD.format(name="note-a", description="a note", type="project", body="Body.\n")


def _published(talked: Server, uri: str) -> list[list[dict[str, Any]]]:
    heard = [m["params"] for m in talked.heard if m.get("method") == "textDocument/publishDiagnostics"]
    return [p["diagnostics"] for p in heard if p["uri"] == uri]


def _until_published(talked: Server, uri: str, seconds: float = ANSWER_SECONDS) -> list[dict[str, Any]]:
    """The next diagnostics published to `uri` with no message sent to the server meanwhile;
    `TimeoutError` when none comes within `seconds`."""
    assert talked.process.stdout is not None
    stdout = talked.process.stdout

    def read() -> list[dict[str, Any]]:
        while True:
            heard = receive(stdout)
            talked.heard.append(heard)
            if heard.get("method") == "textDocument/publishDiagnostics" and heard["params"]["uri"] == uri:
                diagnostics: list[dict[str, Any]] = heard["params"]["diagnostics"]
                return diagnostics

    reading = ThreadPoolExecutor(1)
    try:
        return reading.submit(read).result(seconds)
    finally:
        reading.shutdown(wait=False)


def test_a_folder_that_cannot_be_judged_says_so_on_its_documents_once_and_clears_when_fixed(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    workspaces = Home(tmp_path / "home").workspaces
    workspaces.parent.mkdir(parents=True)
    os.symlink(workspaces.name, workspaces)  # a loop: nothing under it can be listed (ELOOP)
    uri = (workspaces / "proj" / "note-a.md").as_uri()
    initialize(server)
    document = {"uri": uri, "languageId": "markdown", "version": 1, "text": TEXT}
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
    for version in (2, 3, 4):  # keystrokes
        changed = {"uri": uri, "version": version}
        server.send({"method": "textDocument/didChange", "params": {
            "textDocument": changed, "contentChanges": [{"text": TEXT}]}})  # fmt: skip
    server.send({"id": 1, "method": "textDocument/completion", "params": {
        "textDocument": {"uri": uri}, "position": {"line": 1, "character": 0}}})  # fmt: skip
    assert "result" in server.answer(1)

    said = _published(server, uri)[-1]
    assert [(d["code"], d["severity"]) for d in said] == [("unjudged", 2)], said
    # The store's words: a link where the workspaces are leads out of the home, looping or not.
    message = said[0]["message"]
    assert f"{workspaces} is a symbolic link, and remem reads and writes only inside its home" in message
    assert said[0]["range"] == {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    popups = server.popups()
    assert len(popups) == 1 and "cannot validate" in popups[0], popups  # once, not per keystroke

    workspaces.unlink()  # fixed outside the editor, which tells the server nothing
    (workspaces / "proj").mkdir(parents=True)
    cleared = _until_published(server, uri)
    assert "unjudged" not in [d["code"] for d in cleared], cleared
    assert len(server.popups()) == 1


def test_global_md_whose_folder_cannot_be_listed_says_so_and_clears_when_fixed(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    # Its text is judged alone, but the saves kept beside it are looked for in its folder.
    home = Home(tmp_path / "home")
    home.root.mkdir()
    os.symlink(home.memory.name, home.memory)  # a loop: GLOBAL.md's folder cannot be listed
    uri = home.global_file.as_uri()
    initialize(server)
    document = {"uri": uri, "languageId": "markdown", "version": 1, "text": "# Rules\n"}
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
    server.send({"id": 1, "method": "textDocument/documentSymbol", "params": {"textDocument": {"uri": uri}}})
    server.answer(1)

    assert [d["code"] for d in _published(server, uri)[-1]] == ["unjudged"]
    assert len(server.popups()) == 1 and str(home.memory) in server.popups()[0], server.popups()
    home.memory.unlink()
    home.memory.mkdir()
    assert _until_published(server, uri) == []


def _open(talked: Server, uri: str, text: str) -> None:
    document = {"uri": uri, "languageId": "markdown", "version": 1, "text": text}
    talked.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})


def _looped_home(tmp_path: Path) -> Home:
    """A home whose `memory` is a link to itself: nothing under it can be listed (ELOOP)."""
    home = Home(tmp_path / "home")
    home.root.mkdir()
    os.symlink(home.memory.name, home.memory)
    return home


def test_one_cause_is_one_popup_however_many_folders_and_files_meet_it(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    # Each folder's judgement failed with its own path in the cause: one popup per folder.
    home = _looped_home(tmp_path)
    initialize(server)
    uris = [(home.workspaces / f"p{n}" / "note-a.md").as_uri() for n in range(3)]
    for uri in uris:
        _open(server, uri, TEXT)
    _open(server, home.global_file.as_uri(), "# Rules\n")
    server.send({"id": 1, "method": "textDocument/documentSymbol", "params": {
        "textDocument": {"uri": home.global_file.as_uri()}}})  # fmt: skip
    server.answer(1)

    assert rule_href("remem/unjudged") is not None
    for uri in [*uris, home.global_file.as_uri()]:
        [said] = _published(server, uri)[-1]
        assert said["code"] == "unjudged", uri
        assert said.get("codeDescription") == {"href": rule_href("remem/unjudged")}, (
            said
        )  # its row of the docs
    popups = server.popups()
    assert len(popups) == 1, popups
    assert f"cannot be used: {home.memory} is a symbolic link" in popups[0], popups


def test_what_a_text_shows_by_itself_is_published_beside_the_unjudged_warning(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    home = _looped_home(tmp_path)
    initialize(server)
    _open(server, home.global_file.as_uri(), "Prefer terse answers.\npassword: hunter2hunter2\n\ud800\n")
    record = (home.workspaces / "proj" / "note-a.md").as_uri()
    _open(server, record, RECORD.format(name="note-a", description="a note", type="nonsense", body="Body.\n"))
    server.send({"id": 1, "method": "textDocument/completion", "params": {
        "textDocument": {"uri": record}, "position": {"line": 1, "character": 0}}})  # fmt: skip
    server.answer(1)

    said = [d["code"] for d in _published(server, home.global_file.as_uri())[-1]]
    assert sorted(said) == ["encoding", "likely-secret", "unjudged"], said
    said = [d["code"] for d in _published(server, record)[-1]]
    assert sorted(said) == ["type-invalid", "unjudged"], said


def test_nothing_is_judged_again_after_shutdown(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    home = _looped_home(tmp_path)
    initialize(server)
    uri = home.global_file.as_uri()
    _open(server, uri, "# Rules\n")
    server.send({"id": 1, "method": "shutdown"})
    server.answer(1)
    assert [d["code"] for d in _published(server, uri)[-1]] == ["unjudged"]
    tried = server.log.read_text().count("cannot judge")

    home.memory.unlink()  # fixed: a retry still running would judge it, and publish
    home.memory.mkdir()
    with pytest.raises(TimeoutError):
        _until_published(server, uri, RETRY_UNJUDGED * 3)
    assert server.log.read_text().count("cannot judge") == tried

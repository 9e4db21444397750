"""What the language server keeps of a keystroke's folder reading, and what it schedules
(decision 0481), looked at in the server itself.

A keystroke within `TRUST_READ` of the last reading of its folder takes that reading as it is,
and schedules one reading again per folder. A reading holds all its folder's texts, so it is
kept only while a document of the folder is open, and for `READINGS_KEPT` folders at most: a
folder closed kept its reading, and news of a change to a workspace never opened read one and
kept it, so the server grew with every workspace it heard of.

The server is `remem lsp` as the CLI composes it (`create_server`), run in this process: each
message goes through its protocol as one read from its input does, so what it keeps can be
looked at. It is never sent `initialized`, so it starts no daemon: the daemon's news is handed
in where its link hears it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from remem.daemon.home import Home
from remem.daemon.memory.stamps import RACY_NS
from remem.lsp.compose import create_server
from remem.lsp.features import diagnostics
from tests.scratch import process_folder

from .editor import record, refusing_daemon, until, workspace_folder


class InProcess:
    """A language server in this process, and what it wrote to its client."""

    def __init__(self, home: Home) -> None:
        self.server = create_server(home)
        self.written: list[dict[str, Any]] = []
        self.server.protocol.set_writer(self, include_headers=False)
        self._ids = itertools.count(1)
        self._versions: dict[Path, int] = {}

    def write(self, data: bytes) -> None:
        self.written.append(json.loads(data))

    def close(self) -> None:
        pass

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._receive({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> None:
        ident = next(self._ids)
        self._receive({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        await until(lambda: any(m.get("id") == ident and "method" not in m for m in self.written))

    def _receive(self, message: dict[str, Any]) -> None:
        protocol = self.server.protocol
        protocol.handle_message(json.loads(json.dumps(message), object_hook=protocol.structure_message))

    def open(self, path: Path, text: str) -> None:
        self._versions[path] = 1
        item = {"uri": path.as_uri(), "languageId": "markdown", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})

    def type(self, path: Path, text: str) -> None:
        self._versions[path] += 1
        document = {"uri": path.as_uri(), "version": self._versions[path]}
        self.notify("textDocument/didChange", {"textDocument": document, "contentChanges": [{"text": text}]})

    def close_document(self, path: Path) -> None:
        self.notify("textDocument/didClose", {"textDocument": {"uri": path.as_uri()}})

    def readings(self) -> dict[Path, Any]:
        """The folders whose reading the server keeps."""
        return dict(diagnostics._READS.get(self.server, {}))


HOME = refusing_daemon(Home(process_folder("remem-lsp-readings-") / "home"))


@pytest.fixture(scope="module")
def folders() -> list[Path]:
    """More workspace folders than readings are kept of, once their listings are older than a
    stamp is trusted at: a keystroke takes a reading again only while its folder's listing is
    known unchanged."""
    made = [workspace_folder(HOME, f"readings-{n}") for n in range(diagnostics.READINGS_KEPT + 2)]
    for folder in made:
        for name in ("alpha", "beta"):
            (folder / f"{name}.md").write_text(record(name))
    changed = max(os.stat(path).st_ctime_ns for folder in made for path in [folder, *folder.iterdir()])
    time.sleep(max(0, changed + RACY_NS - time.time_ns()) / 1e9 + 0.1)
    return made


@pytest_asyncio.fixture
async def editor() -> AsyncIterator[InProcess]:
    editor = InProcess(HOME)
    await editor.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    yield editor
    await editor.request("shutdown", None)


def typed(path: Path, n: int) -> str:
    return record(path.stem, body=f"Typed {n}.\n")


def rereads() -> Iterator[asyncio.TimerHandle]:
    """The readings again the server has scheduled, not cancelled."""
    scheduled = asyncio.get_running_loop()._scheduled  # type: ignore[attr-defined]
    for handle in scheduled:
        if not handle.cancelled() and handle._callback is diagnostics._publish_folder:
            yield handle


@pytest.mark.asyncio
async def test_a_folder_closed_keeps_no_reading(editor: InProcess, folders: list[Path]) -> None:
    folder = folders[0]
    editor.open(folder / "typed.md", record("typed"))
    editor.type(folder / "typed.md", typed(folder / "typed.md", 1))
    assert list(editor.readings()) == [folder]
    editor.close_document(folder / "typed.md")
    assert editor.readings() == {}
    assert list(rereads()) == []


@pytest.mark.asyncio
async def test_news_of_a_workspace_never_opened_keeps_no_reading(
    editor: InProcess, folders: list[Path]
) -> None:
    editor.server.link._heard("memory/changed", {"workspace": folders[1].name})
    assert editor.readings() == {}


@pytest.mark.asyncio
async def test_the_readings_kept_are_bounded(editor: InProcess, folders: list[Path]) -> None:
    for folder in folders:
        editor.open(folder / "typed.md", record("typed"))
        editor.type(folder / "typed.md", typed(folder / "typed.md", 1))
    # The folders judged last keep theirs; the others' scheduled readings went with them.
    assert list(editor.readings()) == folders[-diagnostics.READINGS_KEPT :]
    assert len(list(rereads())) == diagnostics.READINGS_KEPT


@pytest.mark.asyncio
async def test_keystrokes_within_trust_read_read_their_folder_once(
    editor: InProcess, folders: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # However slow the machine, every keystroke here falls within the time a reading is trusted.
    monkeypatch.setattr(diagnostics, "TRUST_READ", 3600.0)
    reads: list[Path] = []

    def counted(folder: Path, *args: Any) -> Any:
        reads.append(folder)
        return read_folder(folder, *args)

    read_folder = diagnostics.read_folder
    monkeypatch.setattr(diagnostics, "read_folder", counted)
    first, second = folders[:2]
    for folder in (first, second):
        editor.open(folder / "typed.md", record("typed"))
    for n in range(20):
        for folder in (first, second):
            editor.type(folder / "typed.md", typed(folder / "typed.md", n))
    assert sorted(reads) == [first, second]  # each read once: judged with the opens, then trusted
    assert sorted(handle._args[1] for handle in rereads()) == [first, second]  # one reading again each

    editor.close_document(first / "typed.md")
    assert [handle._args[1] for handle in rereads()] == [second]
    await editor.request("shutdown", None)
    assert list(rereads()) == []

"""Reading receipts makes no folder: a hover on a record, in a home no review has written to, finds
no receipts and leaves the home as it was (the store made every folder of the home as it was
built, for a read too). The first write makes the folder."""

from __future__ import annotations

import stat
from pathlib import Path

from remem.daemon.consolidation.receipts import CONSOLIDATOR_VERSION, ReceiptStore, now
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Receipt, ScopeRevisions, Source, Status, Target
from tests.lsp.editor import RECORD
from tests.lsp.piped_server import Server, initialize, server  # noqa: F401 - the fixture


def _tree(root: Path) -> set[Path]:
    return set(root.rglob("*"))


def test_a_hover_and_lenses_on_a_home_without_receipts_make_no_folder(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    home = Home(tmp_path / "home")
    folder = home.workspaces / "proj"
    folder.mkdir(parents=True)
    record = folder / "note-a.md"
    record.write_text(RECORD.format(name="note-a", description="shown", type="project", body="Body.\n"))
    before = _tree(home.root)
    initialize(server)
    document = {"uri": record.as_uri(), "languageId": "markdown", "version": 1, "text": record.read_text()}
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
    server.send({"id": 1, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": record.as_uri()}, "position": {"line": 2, "character": 3}}})  # fmt: skip
    assert "**Last review:** none" in server.answer(1)["result"]["contents"]["value"]
    server.send(
        {"id": 2, "method": "textDocument/codeLens", "params": {"textDocument": {"uri": record.as_uri()}}}
    )
    assert server.answer(2)["result"] == []
    assert _tree(home.root) == before, "the reads made no folder"


def test_a_receipts_first_write_makes_its_folder(home: Home) -> None:
    store = ReceiptStore(home)
    assert (store.all(), store.read("a" * 64)) == ([], None)
    assert not home.root.exists(), "a read makes no folder"
    revisions = ScopeRevisions(before="sha256:" + "1" * 64)
    receipt = Receipt(
        review="a" * 64,
        consolidator=CONSOLIDATOR_VERSION,
        status=Status.NO_CHANGE,
        source=Source(session="s-1", digest="sha256:" + "0" * 64, coveredSeq=1),
        target=Target(workspace="ws", workspaceRevisions=revisions, globalRevisions=revisions),
        createdAt=now(),
    )
    store.write(receipt)
    assert (store.all(), store.read(receipt.review)) == ([receipt], receipt)
    assert stat.S_IMODE(home.reviews.stat().st_mode) == 0o700

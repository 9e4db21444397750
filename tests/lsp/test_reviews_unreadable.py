"""A record's hover and lenses when the home's reviews cannot be read answer what is known.

The receipt store makes the home's folders as it is built; on a home it refuses (a file where
`memory/reviews` goes, a read-only home) every hover on a record and every lens request failed
with an internal error (-32603) and a traceback, and the record's description was not shown.
"""

from __future__ import annotations

from pathlib import Path

from remem.daemon.home import Home

from .editor import RECORD
from .piped_server import Server, initialize, server  # noqa: F401 - the fixture


def test_a_hover_and_lenses_on_a_home_whose_reviews_cannot_be_read_answer_without_them(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    home = Home(tmp_path / "home")
    folder = home.workspaces / "proj"
    folder.mkdir(parents=True)
    home.reviews.write_text("not a folder\n")  # where the receipts' folder goes
    text = RECORD.format(name="note-a", description="what the hover shows", type="project", body="Body.\n")
    uri = (folder / "note-a.md").as_uri()
    initialize(server)
    document = {"uri": uri, "languageId": "markdown", "version": 1, "text": text}
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
    server.send({"id": 1, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": uri}, "position": {"line": 2, "character": 3}}})  # fmt: skip
    server.send({"id": 2, "method": "textDocument/codeLens", "params": {"textDocument": {"uri": uri}}})

    shown = server.answer(1)["result"]["contents"]["value"]
    assert "what the hover shows" in shown
    assert "**Last review:** not known; the reviews cannot be read" in shown and str(home.reviews) in shown
    assert server.answer(2)["result"] == []

"""The cause an unjudged folder is told by is where the judgement failed, not a guess from modes.

It was the first path from the home down whose mode `os.access` refused: a `workspaces` folder
that can be passed through but not listed (`chmod 311`) took the blame for a workspace under it
that was refused, and root, whom `os.access` lets through, never met a refused folder at all.

Permissions bind root too here: run as root, the server is started without the capabilities
that let root past them (`CAP_DAC_OVERRIDE`, `CAP_DAC_READ_SEARCH`), and these tests are skipped,
saying why, only where root may not give them up or its server holds them still.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.permissions import modes

from .editor import RECORD
from .piped_server import Server, bound_server, initialize  # noqa: F401 - the fixture

TEXT = RECORD.format(name="note-a", description="a note", type="project", body="Body.\n")


def _open(talked: Server, uri: str) -> None:
    document = {"uri": uri, "languageId": "markdown", "version": 1, "text": TEXT}
    talked.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})


def _judged(talked: Server, uris: list[str]) -> dict[str, list[str]]:
    """The messages last published to each of `uris`, once every open before is judged."""
    talked.send(
        {"id": 1, "method": "textDocument/documentSymbol", "params": {"textDocument": {"uri": uris[0]}}}
    )
    talked.answer(1)
    heard = [m["params"] for m in talked.heard if m.get("method") == "textDocument/publishDiagnostics"]
    return {
        uri: [d["message"] for d in [p for p in heard if p["uri"] == uri][-1]["diagnostics"]] for uri in uris
    }


@pytest.fixture
def workspaces(tmp_path: Path) -> Path:
    """The home's `workspaces`, holding the workspaces `p1` and `p2`, each with a record."""
    folder = Home(tmp_path / "home").workspaces
    for name in ("p1", "p2"):
        (folder / name).mkdir(parents=True)
        (folder / name / "note-a.md").write_text(TEXT)
    return folder


def test_a_folder_passed_through_though_not_listed_is_not_the_cause_of_what_fails_under_it(
    bound_server: Server,  # noqa: F811
    workspaces: Path,
) -> None:
    uris = [(workspaces / name / "note-a.md").as_uri() for name in ("p1", "p2")]
    with modes((workspaces, 0o311), (workspaces / "p1", 0), (workspaces / "p2", 0)):
        initialize(bound_server)
        for uri in uris:
            _open(bound_server, uri)
        said = _judged(bound_server, uris)
    for name, uri in zip(("p1", "p2"), uris, strict=True):
        [warning] = said[uri]
        assert f"(Permission denied: {workspaces / name})" in warning, warning
    popups = bound_server.popups()  # two folders refused: two causes
    assert len(popups) == 2, popups
    for name in ("p1", "p2"):
        assert any(f"(Permission denied: {workspaces / name})" in popup for popup in popups), popups


def test_a_folder_that_cannot_be_passed_through_is_one_cause_for_everything_under_it(
    bound_server: Server,  # noqa: F811
    workspaces: Path,
) -> None:
    uris = [(workspaces / name / "note-a.md").as_uri() for name in ("p1", "p2")]
    with modes((workspaces, 0o600)):  # listed, never searched
        initialize(bound_server)
        for uri in uris:
            _open(bound_server, uri)
        said = _judged(bound_server, uris)
    for uri in uris:
        [warning] = said[uri]
        assert f"(Permission denied: {workspaces})" in warning, warning
    [popup] = bound_server.popups()
    assert f"(Permission denied: {workspaces})" in popup, popup

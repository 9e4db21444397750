"""A burst of changes on disk the editor tells of judges each folder once, not once per notification.

Each `workspace/didChangeWatchedFiles` judged every folder it concerned in full, there and
then; an editor that tells of each file of a checkout in a notification of its own (VS Code
gathers them, not every client does) made as many judgements of the folder: 200 of a folder of
400 records took 6 s, one notification of the 200 changes 0.014 s. They are judged as a burst
of opens is now. No timing is asserted: a record is opened between each two notifications,
its text made a twin of the first record's name, so each judgement finds one more twin; what
is counted is how often the first record hears, and what it hears last.
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import Any

from remem.daemon.home import Home

from .piped_server import WATCHES, Server, codes_after, initialize_with, note_text, send, server  # noqa: F401 - the fixture

TWINS = 20
CREATED = 1  # FileChangeType.Created


def _opened(path: Path) -> dict[str, Any]:
    """The `didOpen` of `path` with a record named `note-a`."""
    document = {"uri": path.as_uri(), "languageId": "markdown", "version": 1, "text": note_text("note-a")}
    return {"method": "textDocument/didOpen", "params": {"textDocument": document}}


def test_a_burst_of_changes_on_disk_judges_each_folder_once(server: Server, tmp_path: Path) -> None:  # noqa: F811
    folder = Home(tmp_path / "home").workspaces / "proj"
    folder.mkdir(parents=True)
    first = (folder / "note-a.md").as_uri()
    initialize_with(server, WATCHES)
    server.send(_opened(folder / "note-a.md"))
    assert codes_after(server, first, 1) == []
    before = len(server.heard)

    burst = io.BytesIO()  # in one write, as a client tells of a checkout file by file
    for n in range(TWINS):
        twin = folder / f"twin-{n:02d}.md"
        twin.write_text(note_text(twin.stem))  # a twin only as the editor has it: one more a judgement
        send(burst, _opened(twin))
        send(burst, {"method": "workspace/didChangeWatchedFiles", "params": {
            "changes": [{"uri": twin.as_uri(), "type": CREATED}]}})  # fmt: skip
    assert server.process.stdin is not None
    server.process.stdin.write(burst.getvalue())
    server.process.stdin.flush()

    assert codes_after(server, first, 2) == ["name-duplicate"] * TWINS
    heard = Counter(
        m["params"]["uri"]
        for m in server.heard[before:]
        if m.get("method") == "textDocument/publishDiagnostics"
    )
    # Once per notification before; a burst the server reads in pieces may be judged a few times.
    assert heard[first] < 5, heard

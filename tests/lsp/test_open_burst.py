"""A burst of opens judges each folder once, on every text opened, not once per open.

Each `didOpen` of a record judged its whole folder again: opening 400 records took 400
judgements of 400 (8 s), and a record opened first heard its diagnostics again with every
sibling opened after it, each time from a folder still missing the rest. No timing is asserted:
what is counted is how often the first record hears, and what it hears last.
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.memory.record import RECORDS_MAX

from .editor import RECORD
from .piped_server import Server, initialize, send, server  # noqa: F401 - the fixture

OPENED = 20


def _record(name: str) -> str:
    return RECORD.format(name=name, description=f"note {name}", type="project", body="Body.\n")


def test_a_burst_of_opens_is_judged_once_on_every_text(server: Server, tmp_path: Path) -> None:  # noqa: F811
    folder = Home(tmp_path / "home").workspaces / "burst"
    folder.mkdir(parents=True)
    for n in range(RECORDS_MAX):  # the limit: each record opened unsaved goes past it
        (folder / f"note-{n:03d}.md").write_text(_record(f"note-{n:03d}"))
    initialize(server)
    names = ["note-000", *(f"new-{n:02d}" for n in range(OPENED))]
    uris = [(folder / f"{name}.md").as_uri() for name in names]
    for uri, name in zip(uris, names, strict=True):  # back to back, as an editor restoring a window
        document = {"uri": uri, "languageId": "markdown", "version": 1, "text": _record(name)}
        server.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
    server.send({"id": 1, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": uris[0]}, "position": {"line": 0, "character": 0}}})  # fmt: skip
    server.answer(1)

    published = [m["params"] for m in server.heard if m.get("method") == "textDocument/publishDiagnostics"]
    heard = Counter(p["uri"] for p in published)
    assert set(heard) == set(uris), "every record opened hears its diagnostics before the answer"
    # Once per open before; a burst the server reads in pieces may be judged a few times.
    assert heard[uris[0]] < 5
    last = [p for p in published if p["uri"] == uris[0]][-1]
    assert [d["message"] for d in last["diagnostics"]] == [
        f"the workspace has {RECORDS_MAX + OPENED} records; the limit is {RECORDS_MAX}. Merge or delete some"
    ]


def test_a_folder_that_cannot_be_judged_leaves_the_next_request_answered_and_the_others_judged(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    # A name too long to stat: the judging, put off until the hover, failed in front of it, and
    # the hover was dropped unanswered (a file made by root, EACCES, did the same).
    workspaces = Home(tmp_path / "home").workspaces
    unreadable = (workspaces / ("w" * 300) / "note-a.md").as_uri()
    readable = workspaces / "zz-after-it"  # judged after it
    readable.mkdir(parents=True)
    fine = (readable / "note-b.md").as_uri()
    initialize(server)
    burst = io.BytesIO()  # in one write, as an editor restoring a window sends them
    for uri, name in ((unreadable, "note-a"), (fine, "note-b")):
        document = {"uri": uri, "languageId": "markdown", "version": 1, "text": _record(name)}
        send(burst, {"method": "textDocument/didOpen", "params": {"textDocument": document}})
    send(burst, {"id": 1, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": unreadable}, "position": {"line": 1, "character": 0}}})  # fmt: skip
    assert server.process.stdin is not None
    server.process.stdin.write(burst.getvalue())
    server.process.stdin.flush()

    assert "result" in server.answer(1)
    published = [m["params"] for m in server.heard if m.get("method") == "textDocument/publishDiagnostics"]
    # The folder that cannot be judged says so on its document (decision 0459), the other is judged.
    assert {p["uri"]: [d["code"] for d in p["diagnostics"]] for p in published} == {
        unreadable: ["unjudged"],
        fine: [],
    }
    assert [p for p in server.popups() if "File name too long" in p], server.popups()

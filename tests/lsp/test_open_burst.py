"""A burst of opens judges each folder once, on every text opened, not once per open.

Each `didOpen` of a record judged its whole folder again: opening 400 records took 400
judgements of 400 (8 s), and a record opened first heard its diagnostics again with every
sibling opened after it, each time from a folder still missing the rest. No timing is asserted:
what is counted is how often the first record hears, and what it hears last.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.memory.record import RECORDS_MAX

from .editor import RECORD
from .test_misbehaving_client import Server, _initialize, server  # noqa: F401 - the fixture

OPENED = 20


def _record(name: str) -> str:
    return RECORD.format(name=name, description=f"note {name}", type="project", body="Body.\n")


def test_a_burst_of_opens_is_judged_once_on_every_text(server: Server, tmp_path: Path) -> None:  # noqa: F811
    folder = Home(tmp_path / "home").workspaces / "burst"
    folder.mkdir(parents=True)
    for n in range(RECORDS_MAX):  # the limit: each record opened unsaved goes past it
        (folder / f"note-{n:03d}.md").write_text(_record(f"note-{n:03d}"))
    _initialize(server)
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

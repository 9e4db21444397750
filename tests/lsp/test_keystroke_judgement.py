"""A keystroke is judged with its folder's files as last read, and publishes what the whole
folder's judgement gives (decision 0481).

A keystroke re-judged a folder of 200 records from scratch: a stat and two cache look-ups per
sibling. Now it judges the typed record against what was read of its siblings: the duplicate
names it shares, the record count, `MEMORY.md` against the records' rendering. Each list a
document is sent must still be what `lint_workspace_folder` gives for the folder as it is, and
a sibling changed in place on disk, which no one tells of, is read again by itself within
`TRUST_READ` of the last reading, without a keystroke.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from remem.daemon.home import Home
from remem.daemon.memory.diagnostics import Diagnostic
from remem.daemon.memory.index import render_index
from remem.daemon.memory.lint import judge_edited, lint_workspace_folder, read_folder
from remem.daemon.memory.lint_cache import LintCache
from remem.daemon.memory.record import INDEX_FILE, RECORDS_MAX
from remem.daemon.memory.stamps import RACY_NS
from remem.daemon.memory.validation import parse_record
from tests.scratch import process_folder

from .editor import (
    begin,
    change,
    end,
    make_client,
    open_document,
    record,
    refusing_daemon,
    until,
    workspace_folder,
)

HOME = refusing_daemon(Home(process_folder("remem-lsp-keystroke-") / "home"))
SERVER = [sys.executable, "-m", "remem.daemon", "--home", str(HOME.root), "lsp"]
CONFIG = ClientServerConfig(server_command=SERVER, server_env=dict(os.environ), client_factory=make_client)


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await begin(lsp_client)  # VS Code's capabilities: asked to watch memory, it never tells here
    yield
    await end(lsp_client)


Said = tuple[str, str, str, tuple[int, int, int, int]]


def said(found: list[Diagnostic]) -> list[Said]:
    """What the full judgement's diagnostics are as the editor is sent them."""
    return [
        (
            d.code,
            d.severity.value,
            d.message,
            (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character),
        )
        for d in found
    ]


def heard(client: LanguageClient, uri: str) -> list[Said]:
    severity = {types.DiagnosticSeverity.Error: "error", types.DiagnosticSeverity.Warning: "warning"}
    return [
        (
            f"{d.source}/{d.code}",
            severity[d.severity],
            d.message,
            (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character),
        )
        for d in client.diagnostics.get(uri, [])
        if d.source == "remem"
    ]


def valid_folder(folder: Path, names: list[str]) -> None:
    """Records named `names` and the `MEMORY.md` they render to, written a while ago."""
    for name in names:
        (folder / f"{name}.md").write_text(record(name, description=f"About {name}"))
    rendered = [parse_record(record(n, description=f"About {n}"), f"{n}.md").record for n in names]
    (folder / INDEX_FILE).write_text(render_index(r for r in rendered if r is not None))
    past = 1_000_000_000  # settled: a listing and texts the caches keep
    for path in folder.iterdir():
        os.utime(path, (past, past))
    os.utime(folder, (past, past))


async def settled(client: LanguageClient, uri: str) -> None:
    """Once the server has handled what was sent before (it publishes as it handles each)."""
    at = types.Position(0, 0)
    await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri=uri), at))


@pytest.mark.asyncio
async def test_each_keystroke_publishes_the_full_judgement(client: LanguageClient) -> None:
    folder = workspace_folder(HOME, "keystrokes")
    valid_folder(folder, ["alpha", "beta", "gamma", "typed"])
    await asyncio.sleep(RACY_NS / 1e9)  # settled: what a keystroke reads, the next ones trust
    texts = {
        "typed.md": record("typed", description="About typed"),
        INDEX_FILE: (folder / INDEX_FILE).read_text(),
    }
    uris = {name: open_document(client, folder / name, text) for name, text in texts.items()}
    version = 1

    def expected() -> dict[str, list[Said]]:
        reports = lint_workspace_folder(folder, texts)
        return {name: said(reports.get(name, [])) for name in texts}

    def published() -> dict[str, list[Said]]:
        return {name: heard(client, uri) for name, uri in uris.items()}

    async def typed(text: str) -> None:
        nonlocal version
        version += 1
        texts["typed.md"] = text
        change(client, uris["typed.md"], text, version)
        await settled(client, uris["typed.md"])
        assert published() == expected(), f"after typing {text!r}"

    await until(lambda: published() == expected())
    await typed(record("typed", description="About typed", body="Body, typed.\n"))
    await typed(record("beta", description="About typed"))  # a duplicate of beta's name
    await typed(record("Beta", description="About typed"))  # still one, ignoring case
    await typed(record("typed", description="About typed"))  # none any more
    await typed("---\nname: typed\ndescription: About typed\n")  # front matter broken
    await typed(record("typed", description="About typed"))  # and fixed
    await typed(record("typed", description="About it now"))  # MEMORY.md out of sync
    await typed(record("renamed", description="About typed"))  # the name no more the file's
    await typed(record("typed", description="About typed"))

    # Changed in place on disk, the folder's own stamp unchanged, no one telling: the folder is
    # read again within `TRUST_READ` of the last keystroke, and the duplicate the sibling now
    # makes is published without another.
    await typed(record("typed", description="About typed", body="Body, again.\n"))
    listed = os.stat(folder).st_mtime_ns
    now = record("typed", description="About alpha")  # as long as it was: one write, no truncation
    assert len(now) == len((folder / "alpha.md").read_text())
    with open(folder / "alpha.md", "r+") as alpha:
        alpha.write(now)
    assert os.stat(folder).st_mtime_ns == listed
    await until(lambda: published() == expected())
    assert "remem/name-duplicate" in {code for code, *_ in published()["typed.md"]}

    # A sibling renamed on disk changes the folder's listing: the next keystroke reads it again.
    os.rename(folder / "gamma.md", folder / "delta.md")
    await typed(record("delta", description="About typed"))  # a duplicate of the renamed record's name
    await typed(record("typed", description="About typed"))


def test_judging_the_edited_alone_matches_the_full_judgement(tmp_path: Path) -> None:
    """In-process, edits of every kind, and a folder past the record limit: the edited
    documents' diagnostics of a keystroke's judgement are the full judgement's."""
    folder = tmp_path / "folder"
    folder.mkdir()
    names = [f"note-{n:03d}" for n in range(RECORDS_MAX)]
    valid_folder(folder, names)
    (folder / "note-007.md").write_text(record("note-003"))  # a duplicate among the siblings
    (folder / "note-009.md.unmerged-1").write_text("kept")
    choices = [
        record("typed"),
        record("note-005"),
        record("NOTE-005"),
        record("note-007"),
        record("note-003"),
        "---\nname: typed\n",
        "no front matter",
        record("typed", description="x" * 2000),
        record("typed", body="token ghp_" + "a" * 36 + "\n"),
        record("typed", type="nonsense"),
    ]
    cache = LintCache()
    draw = random.Random(481)
    for step in range(60):
        edited = {"typed.md": draw.choice(choices)}
        if step % 3:
            edited[INDEX_FILE] = (folder / INDEX_FILE).read_text() if step % 2 else "# hand-written\n"
        if step % 5 == 0:
            edited["note-005.md"] = draw.choice(choices)
        if step == 30:  # under the limit from here on, and the index knowable
            for name in names[100:]:
                (folder / f"{name}.md").unlink()
            (folder / "note-007.md").write_text(record("note-007"))
        files = read_folder(folder, edited, cache)
        full = lint_workspace_folder(folder, edited)
        assert judge_edited(files, edited, cache) == {n: full[n] for n in edited if n in full}, edited

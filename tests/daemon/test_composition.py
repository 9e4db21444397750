"""The one composition of the daemon's handlers, and the answers it joins for a front end's views.

Every host (the daemon, a command run without it, the MCP server in-process) composes the same
handlers for every domain method; what differs is what the host gives them. The views are
asked here in-process, through `DaemonApi`, exactly as a client asks the daemon.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest
from pydantic import ValidationError

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol import rpc
from remem.daemon.protocol.api import AsyncTransport, DaemonApi
from remem.daemon.protocol.consolidation import Receipt, ScopeRevisions, Source, Status, Target
from remem.daemon.protocol.rpc import (
    CONSOLIDATION_REFUSED,
    OverviewParams,
    ReceiptsParams,
    ReviewParams,
    RpcError,
)
from remem.daemon.server.composition import Host, InProcess, Services
from tests.memory.factory import put

T = TypeVar("T")
DOMAIN_METHODS = {name for name in rpc.METHODS if not name.startswith("daemon/")}


@pytest.mark.parametrize("host", [Host(), Host(watch=False), Host(watch=True)], ids=["files", "stat", "feed"])
def test_every_host_is_served_every_domain_method(home: Home, host: Host) -> None:
    services = Services(home, host)
    try:
        assert set(services.handlers()) == DOMAIN_METHODS
    finally:
        services.close()


def ask(home: Home, call: Callable[[DaemonApi[AsyncTransport]], Awaitable[T]]) -> T:
    async def scenario() -> T:
        link = InProcess(home, Host())
        try:
            return await call(DaemonApi(link))
        finally:
            await link.close()

    return asyncio.run(scenario())


def receipt(home: Home, cwd: Path, session: str, created: str) -> Receipt:
    """A committed review of `session` in the workspace of `cwd`, written as the runner writes it."""
    revisions = ScopeRevisions(before="r0", planned="r1", after="r1")
    written = Receipt(
        review=f"{abs(hash((session, created))):064x}"[-64:],
        consolidator=1,
        status=Status.COMMITTED,
        source=Source(session=session, digest="d" * 64, coveredSeq=3),
        target=Target(
            workspace=WorkspaceId.from_cwd(cwd).key, workspaceRevisions=revisions, globalRevisions=revisions
        ),
        createdAt=created,
        completedAt=created,
    )
    ReceiptStore(home).write(written)
    return written


def test_receipts_are_filtered_to_one_workspace(home: Home, tmp_path: Path) -> None:
    mine = receipt(home, tmp_path / "a", "s-1", "2026-12-01T10:00:00Z")
    receipt(home, tmp_path / "b", "s-2", "2026-12-01T11:00:00Z")
    found = ask(home, lambda api: api.receipts(ReceiptsParams(cwd=str(tmp_path / "a"))))
    assert [r.review for r in found.receipts] == [mine.review]
    with pytest.raises(ValidationError, match="absolute"):
        ReceiptsParams(cwd="relative/folder")


def test_a_receipt_is_given_as_written_with_what_is_known_of_its_session(home: Home, tmp_path: Path) -> None:
    written = receipt(home, tmp_path / "a", "gone-session", "2026-12-01T10:00:00Z")
    path = ReceiptStore(home).path(written.review)
    view = ask(home, lambda api: api.receipt(ReviewParams(review=written.review)))
    assert (view.receipt, view.path, view.text) == (written, str(path), path.read_text(encoding="utf-8"))
    assert (view.title, view.turns) == (None, [])  # no root lists the session any more

    with pytest.raises(RpcError) as refused:
        ask(home, lambda api: api.receipt(ReviewParams(review="0" * 64)))
    assert refused.value.code == CONSOLIDATION_REFUSED and refused.value.data == {"code": "NOT_FOUND"}
    assert f"no review {'0' * 64}" in refused.value.message
    with pytest.raises(ValidationError, match="pattern"):
        ReviewParams(review=f"../{written.review}")


def test_a_receipt_file_that_is_not_a_receipt_is_refused_by_name(home: Home, tmp_path: Path) -> None:
    written = receipt(home, tmp_path / "a", "s-1", "2026-12-01T10:00:00Z")
    path = ReceiptStore(home).path(written.review)
    path.write_text("---\nreview: [unclosed\n---\n", encoding="utf-8")
    with pytest.raises(RpcError) as refused:
        ask(home, lambda api: api.receipt(ReviewParams(review=written.review)))
    assert refused.value.data == {"code": "UNREADABLE"}
    assert str(path) in refused.value.message and "not a valid receipt" in refused.value.message


def test_the_overview_judges_unsaved_texts_in_place_of_their_files(home: Home, tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    workspace = WorkspaceId.from_cwd(cwd)
    store = MemoryStore(home)
    store.commit_workspace(workspace, store.read_workspace(workspace).revision, [put("kept"), put("other")])
    older = receipt(home, cwd, "s-1", "2026-12-01T10:00:00Z")
    newer = receipt(home, cwd, "s-2", "2026-12-01T12:00:00Z")
    receipt(home, tmp_path / "elsewhere", "s-3", "2026-12-01T13:00:00Z")

    saved = ask(home, lambda api: api.memory_overview(OverviewParams(cwd=str(cwd))))
    assert [(r.name, r.valid, r.problems) for r in saved.records] == [("kept", True, 0), ("other", True, 0)]
    assert saved.global_.valid and saved.workspace.key == workspace.key
    assert [r.review for r in saved.receipts] == [newer.review, older.review]  # newest first, this workspace

    unsaved = OverviewParams(
        cwd=str(cwd), globalText="\ufeffa byte-order mark\n", workspaceTexts={"kept.md": "no front matter\n"}
    )
    edited = ask(home, lambda api: api.memory_overview(unsaved))
    assert [(r.name, r.valid) for r in edited.records] == [("kept", False), ("other", True)]
    assert (saved.global_.problems, edited.global_.problems) == (0, 1)  # the unsaved text was judged
    assert (home.workspaces / workspace.key / "kept.md").read_text().startswith("---\n")  # never written


@pytest.mark.parametrize("name", ["../kept.md", "sub/kept.md", "..", ""])
def test_unsaved_texts_are_named_by_a_plain_file_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValidationError, match="file name in the memory folder"):
        OverviewParams(cwd=str(tmp_path), workspaceTexts={name: "text"})

"""The commit barrier checks and reports only what the plan changes, and a receipt tells what
its review left in memory, even when it ends in a conflict between its two commits."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from remem.daemon.consolidation import barrier
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.consolidation.settle import settle_committing
from remem.daemon.home import Home
from remem.daemon.memory.history import History
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import ConsolidationResult, Receipt, Status
from remem.daemon.protocol.memory import PutChange, Record
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import Source, both_scopes, proposal, put

UV = "Use uv for everything.\n"
TERSE = "Prefers terse answers.\n"  # the Global both_scopes commits
MINE = "---\nname: mine\ndescription: Mine\ntype: project\n---\nMine.\n"


def consolidate(home: Home, session_id: str) -> ConsolidationResult:
    return asyncio.run(Consolidator(home).consolidate(session_id, lambda phase, data: None))


def receipt_of(home: Home, result: ConsolidationResult) -> Receipt:
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None
    return receipt


def replace_global(source: Source, content: str = TERSE) -> dict[str, Any]:
    return {"action": "replace-global", "content": content, "evidence": source.evidence(1)}


def save_a_record(home: Home, source: Source) -> None:
    """The user saves a record of the review's workspace, unless saved already."""
    mine = MemoryStore(home).folder(WorkspaceId.from_cwd(source.cwd)) / "mine.md"
    if not mine.exists():
        mine.parent.mkdir(parents=True, exist_ok=True)
        mine.write_text(MINE)


def save_a_record_at(monkeypatch: pytest.MonkeyPatch, home: Home, source: Source, point: str) -> None:
    """The user saves a record of the review's workspace the first time the barrier reaches `point`."""
    real = barrier.faultpoint

    def then_save(name: str) -> None:
        real(name)
        if name == point:
            save_a_record(home, source)

    monkeypatch.setattr(barrier, "faultpoint", then_save)


# -- what a committed receipt reports -----------------------------------------------------------


def test_a_record_the_review_left_as_it_was_is_not_reported_added(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    store = MemoryStore(home)
    workspace = WorkspaceId.from_cwd(source.cwd)
    mine = Record(name="prefer-uv", description="About prefer-uv", type="feedback", content=UV)
    store.commit_workspace(
        workspace, store.read_workspace(workspace).revision, [PutChange(action="put", record=mine)]
    )
    users_entry = store.history.log(workspace.key)[0].id
    # The model proposes the very record the user already has, and a new Global.
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence(), UV), replace_global(source))))
    result = consolidate(home, source.id)
    assert result.status is Status.COMMITTED
    assert store.history.log(workspace.key)[0].id == users_entry, "the workspace was not touched"
    link = receipt_of(home, result).history
    assert link is not None and link.globalChanged
    assert (link.workspaceEntry, link.added) == (None, [])


def test_a_global_the_review_left_as_it_was_is_not_reported_changed(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    store = MemoryStore(home)
    store.replace_global(store.read_global().revision, TERSE)  # the user's own
    fake.reply(tool_call(both_scopes(source)))
    result = consolidate(home, source.id)
    link = receipt_of(home, result).history
    assert link is not None and link.added == ["prefer-uv"]
    assert (link.globalChanged, link.globalEntry) == (False, None)


def test_an_entry_of_the_same_content_by_someone_else_is_not_the_reviews(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore(home)
    store.replace_global(store.read_global().revision, TERSE)  # the user's entry ends at the planned text
    store.replace_global(store.read_global().revision, "Something else.\n")
    monkeypatch.setattr(History, "record", lambda *args, **kwargs: None)  # the review's entries fail
    fake.reply(tool_call(proposal(replace_global(source))))
    result = consolidate(home, source.id)
    assert result.status is Status.COMMITTED and store.read_global().content == TERSE
    assert receipt_of(home, result).history is None


# -- what the barrier checks --------------------------------------------------------------------


def test_a_workspace_only_review_is_not_a_conflict_for_a_global_edit(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    def edit_global_then_propose(request: dict[str, Any]) -> Any:
        store = MemoryStore(home)
        store.replace_global(store.read_global().revision, "Edited by hand.\n")
        return tool_call(proposal(put("prefer-uv", source.evidence())))

    fake.reply_with(edit_global_then_propose)
    result = consolidate(home, source.id)
    assert result.status is Status.COMMITTED, receipt_of(home, result).attempts[-1].error
    assert MemoryStore(home).read_global().content == "Edited by hand.\n"


def test_a_global_only_review_is_not_a_conflict_for_a_workspace_edit(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    folder = MemoryStore(home).folder(WorkspaceId.from_cwd(source.cwd))

    def save_a_record_then_propose(request: dict[str, Any]) -> Any:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "mine.md").write_text(MINE)
        return tool_call(proposal(replace_global(source)))

    fake.reply_with(save_a_record_then_propose)
    result = consolidate(home, source.id)
    assert result.status is Status.COMMITTED, receipt_of(home, result).attempts[-1].error
    assert (folder / "mine.md").read_text() == MINE


# -- a conflict between the two commits ---------------------------------------------------------


def assert_receipts_the_global_commit(home: Home, receipt: Receipt) -> None:
    store = MemoryStore(home)
    now_global = store.read_global()
    assert receipt.status is Status.TARGET_CONFLICT and now_global.content == TERSE
    assert receipt.target.globalRevisions.after == now_global.revision
    assert receipt.target.workspaceRevisions.after is None
    assert receipt.attempts[-1].error == (
        "Global was committed; the workspace changed meanwhile (another review or an edit committed "
        "first), so this review's changes to it were not made: run "
        f"`remem consolidate {receipt.source.session}` again to review the session against memory "
        "as it is now"
    )
    [entry] = store.history.log(None)
    # Also when the commit's entry was cut off: its intent names the review (decision 0442).
    assert (entry.actor.kind, entry.actor.review) == ("consolidation", receipt.review)
    assert receipt.history is not None
    assert (receipt.history.globalEntry, receipt.history.globalChanged) == (entry.id, True)
    assert (receipt.history.workspaceEntry, receipt.history.added) == (None, [])
    assert "Global memory changed" in ReceiptStore(home).path(receipt.review).read_text()


def test_a_conflict_after_the_global_commit_still_receipts_the_global_commit(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_a_record_at(monkeypatch, home, source, "consolidation.after-global-commit")
    fake.reply(tool_call(both_scopes(source)))
    result = consolidate(home, source.id)
    assert_receipts_the_global_commit(home, receipt_of(home, result))


class _Crash(Exception):
    """The process dying at a fault point, as far as the barrier can tell."""


@pytest.mark.parametrize("entry_cut_off", [False, True])
def test_a_settle_that_finds_the_workspace_changed_receipts_the_global_commit(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch, entry_cut_off: bool
) -> None:
    real, record = barrier.faultpoint, History.record

    def crash_once(name: str) -> None:
        real(name)
        if name == "consolidation.after-global-commit":
            monkeypatch.setattr(barrier, "faultpoint", real)
            monkeypatch.setattr(History, "record", record)
            raise _Crash(name)

    monkeypatch.setattr(barrier, "faultpoint", crash_once)
    if entry_cut_off:  # as a crash between the Global commit and its entry leaves it
        monkeypatch.setattr(History, "record", lambda *args, **kwargs: None)
    fake.reply(tool_call(both_scopes(source)))
    with pytest.raises(_Crash):
        consolidate(home, source.id)
    save_a_record(home, source)  # before anyone settled the review
    [settled] = settle_committing(home)
    assert_receipts_the_global_commit(home, settled)


def test_a_retry_after_that_conflict_keeps_the_global_commit_in_its_receipt(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_a_record_at(monkeypatch, home, source, "consolidation.after-global-commit")
    fake.reply(tool_call(both_scopes(source)))
    first = consolidate(home, source.id)
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))  # Global holds its text now
    again = consolidate(home, source.id)
    assert (first.status, again.status, again.attempt) == (Status.TARGET_CONFLICT, Status.COMMITTED, 2)
    history = MemoryStore(home).history
    [global_entry] = history.log(None)
    link = receipt_of(home, again).history
    assert link is not None
    assert (link.globalEntry, link.globalChanged, link.added) == (global_entry.id, True, ["prefer-uv"])

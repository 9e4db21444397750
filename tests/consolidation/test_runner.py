"""Consolidation end to end in-process, against a fake model server driven by the real SDK."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.consolidation import runner
from remem.daemon.consolidation.debug import DebugLog
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator, Refused
from remem.daemon.consolidation.settle import mark, marks
from remem.daemon.consolidation.worker_log import (
    WorkerLog,
    read_back,
    worker_cwd,
    worker_dir,
    worker_log_path,
    worker_session_id,
)
from remem.daemon.home import Home, HomeUnusable
from remem.daemon.memory.batch import CHANGES
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import ConsolidationResult, Status
from remem.daemon.protocol.rpc import ListParams
from remem.daemon.server.session_methods import SessionMethods
from remem.daemon.sessions.catalog import Entry, SessionCatalog
from remem.daemon.sessions.errors import SessionLogError
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.paths import Encoding, session_log_path
from remem.daemon.sessions.reader import read_session
from tests.fake_openai import FakeOpenAI, hang, slow, status, text, tool_call

from .conftest import KEY_ENV, Source, configure, proposal, put, write_source

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def consolidate(home: Home, session_id: str) -> ConsolidationResult:
    phases: list[str] = []
    return asyncio.run(Consolidator(home).consolidate(session_id, lambda phase, data: phases.append(phase)))


def records(home: Home, source: Source) -> list[str]:
    return [r.name for r in MemoryStore(home).read_workspace(WorkspaceId.from_cwd(source.cwd)).records]


def test_a_proposal_is_committed_receipted_and_never_asked_again(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    glob = {"action": "replace-global", "content": "Prefers terse answers.\n", "evidence": source.evidence(1)}
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()), glob), reasoning="Evidence is clear."))
    result = consolidate(home, source.id)
    assert (result.status, result.changes, result.attempt, result.recovered) == (
        Status.COMMITTED,
        2,
        1,
        False,
    )
    assert records(home, source) == ["prefer-uv"]
    assert MemoryStore(home).read_global().content == "Prefers terse answers.\n"
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and receipt.source.session == source.id
    assert [(c.action, c.name) for c in receipt.changes] == [("replace-global", None), ("put", "prefer-uv")]
    text_on_disk = ReceiptStore(home).path(result.review).read_text()
    assert "Use uv for everything" not in text_on_disk and "**committed**" in text_on_disk
    assert receipt.target.workspaceRevisions.after == receipt.target.workspaceRevisions.planned
    history = MemoryStore(home).history
    [global_entry], [workspace_entry] = (history.log(k) for k in (None, WorkspaceId.from_cwd(source.cwd).key))
    for entry in (global_entry, workspace_entry):
        assert entry.actor.kind == "consolidation" and entry.actor.review == result.review
    # The receipt names both entries and says what changed, with a diff stat.
    assert receipt.history is not None
    assert (receipt.history.globalEntry, receipt.history.workspaceEntry) == (
        global_entry.id,
        workspace_entry.id,
    )
    assert (receipt.history.added, receipt.history.changed, receipt.history.globalChanged) == (
        ["prefer-uv"],
        [],
        True,
    )
    assert "Changed: 1 record(s) added (`prefer-uv`); Global memory changed; " in text_on_disk
    assert f"History: workspace {workspace_entry.id[:12]}, Global {global_entry.id[:12]}" in text_on_disk
    # What the model was sent: rules, then the evidence, Global and records; no paths, no keys.
    sent = fake.requests[0]
    assert [m["role"] for m in sent["messages"]] == ["system", "user"] and sent["tools"][0]["function"][
        "name"
    ]
    assert source.cwd not in json.dumps(sent) and WorkspaceId.from_cwd(source.cwd).key not in json.dumps(sent)
    again = consolidate(home, source.id)
    assert again == result and fake.count == 1, "a successful review is returned, not redone"


def test_drafts_and_broken_calls_are_answered_until_a_valid_final(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    bad_range = [{"fromSeq": 10_000, "toSeq": 10_001}]
    fake.reply(
        tool_call('{"final": true, "outcome": "changes", "changes": ['),  # malformed JSON
        tool_call(proposal(put("Not A Name", source.evidence()))),
        tool_call(proposal(put("prefer-uv", bad_range))),
        tool_call(proposal(put("prefer-uv", source.evidence()), final=False), reasoning="draft first"),
        tool_call(proposal(put("prefer-uv", source.evidence()))),
    )
    result = consolidate(home, source.id)
    assert result.status is Status.COMMITTED and fake.count == 5
    answers = [m for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert [a["content"].split(":")[0].split(";")[0] for a in answers] == [
        "rejected", "rejected", "rejected", "valid draft"]  # fmt: skip
    assert "10000-10001 is not one of the turn ranges shown" in answers[2]["content"]
    assistant = [m for m in fake.requests[-1]["messages"] if m["role"] == "assistant"]
    assert assistant[3]["reasoning_content"] == "draft first", "raw assistant messages go back unchanged"
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and receipt.attempt is not None
    worker = worker_log_path(home, receipt.attempt.workerSession or "")
    assert worker is not None
    logged, recorded = read_session(worker), read_back(worker)
    assert logged.header.cwd == worker_cwd(home) and recorded is not None
    assert json.loads(recorded.final or "{}")["changes"][0]["record"]["name"] == "prefer-uv"
    assert [e.type for e in logged.events].count("tool/call") == 5


def test_no_change_by_the_model_or_by_an_empty_session(home: Home, fake: FakeOpenAI, source: Source) -> None:
    fake.reply(text("Let me think."), tool_call(proposal()))
    result = consolidate(home, source.id)
    assert result.status is Status.NO_CHANGE and fake.count == 2 and records(home, source) == []


def test_failures_are_receipted_and_retried_as_new_attempts(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    fake.reply(status(500, "upstream down"), status(500), status(500))  # the SDK retries twice
    failed = consolidate(home, source.id)
    assert failed.status is Status.PROVIDER_FAILED and failed.attempt == 1 and fake.count == 3
    receipt = ReceiptStore(home).read(failed.review)
    assert receipt is not None and "500" in (receipt.attempts[0].error or "")
    assert f"(HTTP 500 internal server error, asked {fake.base_url})" in (receipt.attempts[0].error or "")
    fake.reply(*[tool_call(proposal(put("x", [{"fromSeq": -1, "toSeq": 0}])))] * 6)
    invalid = consolidate(home, source.id)
    assert invalid.status is Status.INVALID_PROPOSAL and invalid.attempt == 2
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    done = consolidate(home, source.id)
    assert (done.status, done.attempt, done.review) == (Status.COMMITTED, 3, failed.review)
    history = ReceiptStore(home).read(done.review)
    assert history is not None
    assert [a.status for a in history.attempts] == [
        Status.PROVIDER_FAILED,
        Status.INVALID_PROPOSAL,
        Status.COMMITTED,
    ]


def test_a_retry_answers_the_memory_frozen_for_it(home: Home, fake: FakeOpenAI, source: Source) -> None:
    fake.reply(status(500), status(500), status(500))
    failed = consolidate(home, source.id)
    store = MemoryStore(home)
    edited = store.replace_global(store.read_global().revision, "Edited by hand between attempts.\n")
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    done = consolidate(home, source.id)
    assert (failed.status, done.status, done.review) == (
        Status.PROVIDER_FAILED,
        Status.COMMITTED,
        failed.review,
    )
    receipt = ReceiptStore(home).read(done.review)
    assert receipt is not None and receipt.target.globalRevisions.before == edited.revision
    assert store.read_global().content == "Edited by hand between attempts.\n"


def test_a_worker_session_nobody_recorded_is_closed_even_unreadable(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    fake.reply(status(500), status(500), status(500))
    failed = consolidate(home, source.id)
    orphan = worker_dir(home, worker_session_id(failed.review, 2))
    orphan.mkdir(parents=True)
    (orphan / Encoding.ZSTD.file_name).write_bytes(b"not a log")
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    done = consolidate(home, source.id)
    assert (done.status, done.attempt, fake.count) == (Status.COMMITTED, 3, 4)
    receipt = ReceiptStore(home).read(done.review)
    assert receipt is not None
    assert [(a.status, a.provider, a.workerSession) for a in receipt.attempts[1:]] == [
        (Status.INTERNAL_ERROR, "unknown", worker_session_id(failed.review, 2)),
        (Status.COMMITTED, "fake", worker_session_id(failed.review, 3)),
    ]


def test_a_hand_edit_during_the_model_call_wins(home: Home, fake: FakeOpenAI, source: Source) -> None:
    folder = MemoryStore(home).folder(WorkspaceId.from_cwd(source.cwd))

    def edit_then_propose(request: dict[str, Any]) -> Any:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "mine.md").write_text("---\nname: mine\ndescription: Mine\ntype: project\n---\nMine.\n")
        return tool_call(proposal(put("prefer-uv", source.evidence())))

    fake.reply_with(edit_then_propose)
    result = consolidate(home, source.id)
    assert result.status is Status.TARGET_CONFLICT
    assert records(home, source) == ["mine"], "the user's edit stays and nothing was overwritten"


def test_input_over_the_budget_never_reaches_the_model(home: Home, fake: FakeOpenAI, tmp_path: Path) -> None:
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, max_input_bytes=200)
    source = write_source(root, str(tmp_path / "project"))
    result = consolidate(home, source.id)
    assert result.status is Status.EVIDENCE_TOO_LARGE and fake.count == 0


def test_refusals_come_before_any_review(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(Refused) as missing:
        consolidate(home, source.id)
    assert missing.value.code == "NO_ROUTE" and KEY_ENV in missing.value.message
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with pytest.raises(Refused) as unknown:
        consolidate(home, "session-nope")
    assert unknown.value.code == "NOT_FOUND"
    fake.reply(tool_call(proposal()))
    worker = ReceiptStore(home).read(consolidate(home, source.id).review)
    assert worker is not None and worker.attempt is not None and worker.attempt.workerSession
    with pytest.raises(Refused) as own:
        consolidate(home, worker.attempt.workerSession)
    assert own.value.code == "WORKER_SESSION"
    copy = home.sessions / source.path.relative_to(source.path.parents[2])  # the same log in another root
    copy.parent.mkdir(parents=True)
    copy.write_bytes(source.path.read_bytes())
    with pytest.raises(Refused) as twice:
        consolidate(home, source.id)
    assert twice.value.code == "AMBIGUOUS" and str(copy) in twice.value.message
    copy.unlink()
    source.path.touch()  # just written to: it may still be going on
    with pytest.raises(Refused) as live:
        consolidate(home, source.id)
    assert live.value.code == "LIVE"
    assert fake.count == 1 and len(ReceiptStore(home).all()) == 1, "refusals leave no receipt"


def test_two_requests_for_one_session_hold_one_conversation(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    fake.reply(slow(0.5, tool_call(proposal(put("prefer-uv", source.evidence())))))

    async def both() -> list[ConsolidationResult]:
        consolidator = Consolidator(home)
        return list(
            await asyncio.gather(*(consolidator.consolidate(source.id, lambda p, d: None) for _ in range(2)))
        )

    first, second = asyncio.run(both())
    assert first == second and first.status is Status.COMMITTED and fake.count == 1


def test_a_session_that_grew_is_a_new_review(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path
) -> None:
    fake.reply(tool_call(proposal()))
    first = consolidate(home, source.id)
    grown = write_source(tmp_path / "other-root", source.cwd, seed=1, turns=4)  # same id, one more turn
    source.path.write_bytes(grown.path.read_bytes())
    os.utime(source.path, (1_600_000_000, 1_600_000_000))
    fake.reply(tool_call(proposal()))
    second = consolidate(home, source.id)
    assert second.review != first.review and fake.count == 2


def test_cancelling_ends_as_a_cancelled_receipt(home: Home, fake: FakeOpenAI, source: Source) -> None:
    fake.reply(hang())

    async def cancel_midway() -> ConsolidationResult:
        consolidator = Consolidator(home)
        running = asyncio.create_task(consolidator.consolidate(source.id, lambda p, d: None))
        while fake.count == 0:
            await asyncio.sleep(0.02)
        running.cancel()
        return await running

    result = asyncio.run(cancel_midway())
    assert result.status is Status.CANCELLED and records(home, source) == []


def test_a_cancel_while_the_attempt_is_prepared_ends_it_cancelled(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The preparation runs in a thread, which a cancel cannot stop: hold it until the cancel
    # has landed, then let it start the attempt (write the `running` receipt) anyway.
    entered, go = threading.Event(), threading.Event()
    context = runner.runtime_context

    def held(*args: Any) -> str:
        entered.set()
        go.wait(10)
        return context(*args)

    monkeypatch.setattr(runner, "runtime_context", held)

    async def cancel_while_preparing() -> ConsolidationResult:
        running = asyncio.create_task(Consolidator(home).consolidate(source.id, lambda p, d: None))
        await asyncio.to_thread(entered.wait, 10)
        running.cancel()
        await asyncio.sleep(0)
        go.set()
        return await running

    result = asyncio.run(cancel_while_preparing())
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and fake.count == 0
    assert (result.status, receipt.status, receipt.attempt.status) == (Status.CANCELLED,) * 3
    worker_log = session_log_path(
        home.sessions, worker_cwd(home), receipt.attempt.workerSession, Encoding.ZSTD
    )
    assert read_session(worker_log).events[-1].data["reason"]["kind"] == "aborted"


def test_listing_and_tree_show_each_sessions_review_state(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path
) -> None:
    def states(command: str, *extra: str) -> dict[str, dict[str, Any]]:
        out = (
            CliRunner().invoke(cli, ["--home", str(home.root), "sessions", command, *extra, "--json"]).stdout
        )
        rows = json.loads(out)["sessions" if command == "list" else "nodes"]
        return {row["id"]: row["review"] for row in rows}

    other = write_source(source.path.parents[2], source.cwd, seed=2)
    fake.reply(status(400, "bad request"))
    consolidate(home, other.id)
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    consolidate(home, source.id)
    assert states("list") == {source.id: {"state": "consolidated", "status": None},
                              other.id: {"state": "failed", "status": "provider-failed"}}  # fmt: skip
    assert states("tree", "--cwd", source.cwd) == states("list")
    grown = write_source(tmp_path / "elsewhere", source.cwd, seed=1, turns=4)
    source.path.write_bytes(grown.path.read_bytes())
    assert states("list")[source.id] == {"state": "changed", "status": None}


def test_a_reviewed_session_whose_digest_cannot_be_taken_shows_changed_until_it_can(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that changed between the listing and its hash, or could not be opened, is not
    "never reviewed"; nor is that answer kept for the next listing."""
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    consolidate(home, source.id)
    methods = SessionMethods(home, memo=ListingMemo(lambda: False))

    def state() -> str | None:
        listing = asyncio.run(methods.listing(ListParams()))
        review = {s.id: s.review for s in listing.sessions}[source.id]
        return None if review is None else review.state

    taken = SessionCatalog.digest_of

    def unreadable(catalog: SessionCatalog, entry: Entry) -> str | None:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(SessionCatalog, "digest_of", unreadable)
    assert state() == "changed"
    monkeypatch.setattr(SessionCatalog, "digest_of", taken)
    assert state() == "consolidated"


def test_the_debug_log_has_phases_and_counts_but_no_content(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, debug="true")
    source = write_source(root, str(tmp_path / "project"))
    secret_body = "The deploy key lives in vault path kv/deploy.\n"
    fake.reply(
        tool_call(proposal(put("Bad Name", source.evidence(), content=secret_body))),
        tool_call(proposal(put("deploy-key", source.evidence(), content=secret_body))),
    )
    result = consolidate(home, source.id)
    log = home.memory / "debug" / result.review / "attempt-1.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["phase"] for line in lines] == [
        "input", "model", "model-step", "model-answer", "tool-result", "model-step", "model-answer",
        "tool-result", "committing", "finished"]  # fmt: skip
    assert lines[0]["provider"] == "fake" and lines[0]["inputBytes"] > 0 and lines[0]["evidenceTurns"] == 3
    assert [line.get("accepted") for line in lines if line["phase"] == "tool-result"] == [False, True]
    text = log.read_text()
    assert "vault" not in text and "deploy-key" not in text and "## Turn" not in text
    assert oct(log.stat().st_mode & 0o777) == "0o600"


def test_the_worker_session_replays_exactly_what_the_model_saw(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    fake.reply(
        status(429, "slow down", retry_after=0.01), tool_call(proposal(put("prefer-uv", source.evidence())))
    )
    result = consolidate(home, source.id)
    assert result.status is Status.COMMITTED and fake.count == 2, "a 429 is retried by the client"
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and receipt.attempt is not None and receipt.attempt.workerSession
    path = worker_log_path(home, receipt.attempt.workerSession)
    assert path is not None
    events = read_session(path).events
    header = next(e for e in events if e.type == "request/header").data["header"]
    context = next(e for e in events if e.type == "user/message").data["content"][0]["text"]
    sent = fake.requests[-1]
    assert header["system"] == sent["messages"][0]["content"] and header["tools"] == sent["tools"]
    assert [t["function"]["name"] for t in header["tools"]] == ["memory_review_propose"], "its only tool"
    assert context == sent["messages"][1]["content"]
    recorded = read_back(path)
    assert recorded is not None and recorded.context == context
    assert (recorded.provider, recorded.model) == ("fake", "fake-model")


def test_an_attempt_that_outlives_its_timeout_fails_cleanly(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, timeout_seconds=0.5)
    source = write_source(root, str(tmp_path / "project"))
    fake.reply(hang())
    result = consolidate(home, source.id)
    receipt = ReceiptStore(home).read(result.review)
    assert result.status is Status.PROVIDER_FAILED and receipt is not None
    assert (receipt.attempts[0].error or "").startswith(
        f"no final proposal within 0.5 s from {fake.base_url}: no answer came; "
    )


def test_a_session_that_changes_during_the_review_is_source_changed(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path
) -> None:
    grown = write_source(tmp_path / "elsewhere", source.cwd, seed=1, turns=4)

    def grow_then_propose(request: dict[str, Any]) -> Any:
        source.path.write_bytes(grown.path.read_bytes())  # the agent went on meanwhile
        os.utime(source.path, (1_600_000_000, 1_600_000_000))
        return tool_call(proposal(put("prefer-uv", source.evidence())))

    fake.reply_with(grow_then_propose)
    result = consolidate(home, source.id)
    assert result.status is Status.SOURCE_CHANGED and records(home, source) == []
    assert result.reason == (
        f"session {source.id} changed while it was reviewed (its file was written, moved or removed, "
        "or its harness took it up again), so the proposal, made for what it was before, was not "
        f"committed; run `remem consolidate {source.id}` again to review it as it is now"
    )


def test_a_session_written_while_the_review_reads_it_is_refused_saying_to_run_it_again(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grown = write_source(tmp_path / "elsewhere", source.cwd, seed=1, turns=4)

    def written_as_read(path: Path, **kwargs: Any) -> Any:
        # The agent goes on between the listing and the review's read of the log.
        source.path.write_bytes(grown.path.read_bytes())
        os.utime(source.path, (1_600_000_000, 1_600_000_000))
        return read_session(path, **kwargs)

    monkeypatch.setattr(runner, "read_session", written_as_read)
    with pytest.raises(Refused) as refused:
        consolidate(home, source.id)
    assert (refused.value.code, refused.value.message) == (
        "SOURCE_CHANGED",
        f"session {source.id} changed while it was read for this review, so nothing was reviewed; "
        f"run `remem consolidate {source.id}` again to review it as it is now",
    )
    assert fake.count == 0


def test_a_delete_and_a_put_commit_as_one_workspace_generation(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    workspace = WorkspaceId.from_cwd(source.cwd)
    old = {"name": "old-fact", "description": "Old", "type": "project", "content": "Old.\n"}
    MemoryStore(home).commit_workspace(
        workspace, EMPTY, CHANGES.validate_python([{"action": "put", "record": old}])
    )
    delete = {"action": "delete", "name": "old-fact", "evidence": source.evidence(2)}
    fake.reply(tool_call(proposal(put("new-fact", source.evidence()), delete)))
    result = consolidate(home, source.id)
    assert result.status is Status.COMMITTED and records(home, source) == ["new-fact"]
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and [(c.action, c.name) for c in receipt.changes] == [
        ("delete", "old-fact"), ("put", "new-fact")]  # fmt: skip
    assert receipt.changes[0].contentHash is None and receipt.changes[1].contentHash


def test_a_proposal_holding_a_credential_is_refused_draft_and_final(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    leaky = put(
        "deploy-token",
        source.evidence(),
        content="Deploy with token=ghp_0123456789abcdefghijABCDEFGHIJ012345\n",
    )
    fake.reply(tool_call(proposal(leaky, final=False)), *[tool_call(proposal(leaky))] * 5)
    result = consolidate(home, source.id)
    assert result.status is Status.INVALID_PROPOSAL and records(home, source) == []
    answers = [m["content"] for r in fake.requests[1:] for m in r["messages"] if m["role"] == "tool"]
    assert answers and all("looks like a credential (github-token)" in a for a in answers)
    assert not any("ghp_0123456789" in a for a in answers)  # the refusal never repeats the secret


def _link_out(path: Path, outside: Path) -> Path:
    """`path` made a link to the empty folder `outside` (or, for a file name, a file in it)."""
    outside.mkdir()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside if path.suffix != ".jsonl" else outside / path.name)
    return path


def _linked(home: Home, path: Path, kind: str) -> str:
    return (
        f"remem's home {home.root} cannot be used: {path} is a symbolic link, and remem reads and writes "
        f"only inside its home; move the {kind} it points to into the home"
    )


@pytest.mark.parametrize(
    "linked", ["memory/debug", "memory/debug/review-x", "memory/debug/review-x/attempt-1.jsonl"]
)
def test_a_debug_log_linked_out_of_the_home_is_refused_untouched(
    home: Home, tmp_path: Path, linked: str
) -> None:
    link = _link_out(home.ensure_layout().root / linked, tmp_path / "outside")
    with pytest.raises(HomeUnusable) as refused:
        DebugLog(home, "review-x", 1).record("input", {"inputBytes": 1})
    assert str(refused.value).startswith(_linked(home, link, "folder" if link.is_dir() else "file"))
    assert list((tmp_path / "outside").iterdir()) == [], "nothing written through it"


@pytest.mark.parametrize("level", ["project", "session"])
def test_a_worker_session_folder_linked_out_of_the_home_is_refused_untouched(
    home: Home, tmp_path: Path, level: str
) -> None:
    """Refused as the writer's own refusal, which ends the attempt in its receipt, saying why."""
    folder = worker_dir(home.ensure_layout(), worker_session_id("review-x", 1))
    link = _link_out(folder if level == "session" else folder.parent, tmp_path / "outside")
    with pytest.raises(SessionLogError) as refused:
        WorkerLog(home, "review-x", 1).start("system", [], "fake", "fake-model", "context")
    assert refused.value.reason == (
        f"{link} is a symbolic link, and remem writes its worker sessions only inside its home, "
        "never through a link: remove the link, then retry"
    )
    assert list((tmp_path / "outside").iterdir()) == [], "nothing written through it"


def test_the_committing_marks_linked_out_of_the_home_are_refused_untouched(
    home: Home, tmp_path: Path
) -> None:
    link = _link_out(marks(home.ensure_layout()), tmp_path / "outside")
    with pytest.raises(HomeUnusable) as refused:
        mark(home, "review-x", WorkspaceId.from_cwd(tmp_path))
    assert str(refused.value).startswith(_linked(home, link, "folder"))
    assert list((tmp_path / "outside").iterdir()) == [], "nothing written through it"

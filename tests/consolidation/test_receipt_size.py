"""A receipt remem writes, it reads back: it lists each change's evidence, so a range cited many
times is kept once, and a proposal whose receipt would still be past what remem parses is
refused before anything is committed (it once committed memory, then failed every later run
on a receipt of 1.1 MB, over the 1024 KiB remem parses)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.consolidation.evidence import shown_turns
from remem.daemon.consolidation.proposal import canonical_order, parse_arguments, proposal_hash
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.consolidation.settle import pending, settle_committing
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import ConsolidationResult, Status
from tests.daemon.helpers import crash_at, remem
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import Source, configure, proposal, put, write_source


def _consolidate(home: Home, source: Source) -> ConsolidationResult:
    return asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))


def _records(home: Home, source: Source) -> list[str]:
    return [r.name for r in MemoryStore(home).read_workspace(WorkspaceId.from_cwd(source.cwd)).records]


def test_a_turn_cited_forty_thousand_times_is_kept_once_and_the_receipt_reads_back(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence() * 40_000))))
    result = _consolidate(home, source)
    assert result.status is Status.COMMITTED and _records(home, source) == ["prefer-uv"]
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and [c.evidence for c in receipt.changes] == [[source.ranges[0]]]
    again = _consolidate(home, source)  # was UNREADABLE: every later run read that receipt
    assert again.status is Status.COMMITTED and fake.count == 1


def test_a_proposal_whose_receipt_would_be_past_what_remem_reads_is_refused_before_its_commit(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    """200 records each citing every one of 150 turns: 30 000 distinct ranges, over 1 MB listed."""
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, timeout_seconds=60, max_input_bytes=4 << 20)
    source = write_source(root, str(tmp_path / "project"), turns=150)

    def every_turn_cited(body: dict[str, Any]) -> Any:
        shown = [r.model_dump() for r, _ in shown_turns(body["messages"][1]["content"])]
        assert len(shown) >= 140
        return tool_call(proposal(*(put(f"fact-{n:03}", shown, content=f"Fact {n}.\n") for n in range(200))))

    fake.reply_with(every_turn_cited)
    result = _consolidate(home, source)
    assert result.status is Status.INVALID_PROPOSAL and _records(home, source) == []
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and receipt.changes == []
    error = receipt.attempts[-1].error or ""
    assert error.startswith("the proposal's 200 changes cite ") and "nothing was committed" in error


def _crash_committing(home: Home, source: Source, monkeypatch: pytest.MonkeyPatch) -> str:
    """Consolidate in a CLI process killed once its `committing` receipt is written; the review."""
    monkeypatch.setenv(NO_DAEMON_ENV, "1")
    crash_at("consolidation.after-committing-receipt", home, monkeypatch, "consolidate", source.id, "--json")
    [review] = pending(home)
    receipt = ReceiptStore(home).read(review)
    assert receipt is not None and receipt.status is Status.COMMITTING
    return review


def test_a_crash_after_the_committing_receipt_of_a_range_cited_twice_is_settled_without_the_model(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The receipt's hash is of the proposal with each range once; the settle re-reads the
    worker session's raw proposal, and hashed it as sent: it ended `target-conflict` and billed
    a second model call."""
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence() * 2))))
    _crash_committing(home, source, monkeypatch)
    done = remem(home, "consolidate", source.id, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "committed" and fake.count == 1
    assert _records(home, source) == ["prefer-uv"]
    receipt = ReceiptStore(home).read(result["review"])
    assert receipt is not None and [(a.status.value, a.error) for a in receipt.attempts] == [
        ("committed", None)
    ]


def test_a_committing_receipt_written_before_ranges_were_kept_once_is_settled_too(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A receipt written by the version before holds the hash of the proposal as sent, each range
    as often as cited, and its changes list them so."""
    sent = proposal(put("prefer-uv", source.evidence() * 2))
    fake.reply(tool_call(sent))
    review = _crash_committing(home, source, monkeypatch)
    receipts = ReceiptStore(home)
    receipt = receipts.read(review)
    assert receipt is not None
    raw = canonical_order(parse_arguments(json.dumps(sent)).changes)
    older = receipt.model_copy(
        update={
            "proposalHash": proposal_hash(raw),
            "changes": [c.model_copy(update={"evidence": c.evidence * 2}) for c in receipt.changes],
        }
    )
    assert older.proposalHash != receipt.proposalHash
    receipts.write(older)
    [settled] = settle_committing(home)
    assert settled.status is Status.COMMITTED and fake.count == 1
    assert _records(home, source) == ["prefer-uv"]

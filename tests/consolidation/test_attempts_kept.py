"""A receipt keeps the first attempt and the newest ones (decision 0446): a review retried
forever grew its receipt by an attempt each time, without bound. Attempt numbers go on past what
was dropped, so each still names its own worker session, and a crash past the cap is settled
from the right one."""

from __future__ import annotations

import asyncio
import json

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.consolidation.receipts import NEWEST_ATTEMPTS_KEPT, ReceiptStore, summary
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.consolidation.worker_log import worker_session_id
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from tests.daemon.helpers import crash_at, remem
from tests.fake_openai import FakeOpenAI, status, tool_call

from .conftest import Source, proposal, put

RETRIES = NEWEST_ATTEMPTS_KEPT + 5


def _failed_retries(home: Home, fake: FakeOpenAI, source: Source) -> str:
    """`RETRIES` attempts, each refused by the provider; the review."""
    fake.reply(*[status(400, "bad request")] * RETRIES)
    for number in range(1, RETRIES + 1):
        result = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
        assert (result.status, result.attempt) == (Status.PROVIDER_FAILED, number)
    return result.review


def test_a_review_retried_past_the_cap_keeps_the_first_and_the_newest_attempts(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    review = _failed_retries(home, fake, source)
    receipt = ReceiptStore(home).read(review)
    assert receipt is not None
    kept = [*range(RETRIES - NEWEST_ATTEMPTS_KEPT + 1, RETRIES + 1)]
    assert [a.number for a in receipt.attempts] == [1, *kept]
    assert all(a.workerSession == worker_session_id(review, a.number) for a in receipt.attempts)
    text = ReceiptStore(home).path(review).read_text()
    assert f"\n{RETRIES - 1 - NEWEST_ATTEMPTS_KEPT} attempt(s) after the first are not listed" in text


def test_sessions_an_older_remem_listed_twice_are_not_counted_as_listed(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    # A remem from before the cap numbers its next attempt by the count listed, so it lists the
    # newest worker sessions again (closed as interrupted) before its own attempt.
    review = _failed_retries(home, fake, source)
    receipt = ReceiptStore(home).read(review)
    assert receipt is not None
    again = [a for a in receipt.attempts if a.number > len(receipt.attempts)]
    own = receipt.attempts[-1].model_copy(update={"number": RETRIES + 1})
    shared = receipt.model_copy(update={"attempts": [*receipt.attempts, *again, own]})
    assert f"\n{RETRIES - 1 - NEWEST_ATTEMPTS_KEPT} attempt(s) after the first are not listed" in summary(
        shared
    )


def test_attempts_past_the_cap_cut_short_by_crashes_are_settled_from_their_own_worker_sessions(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    review = _failed_retries(home, fake, source)
    monkeypatch.setenv(NO_DAEMON_ENV, "1")
    # One attempt dies before its worker session exists; the next dies committing its proposal.
    crash_at("consolidation.after-attempt-receipt", home, monkeypatch, "consolidate", source.id)
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    crash_at("consolidation.after-committing-receipt", home, monkeypatch, "consolidate", source.id)
    done = remem(home, "consolidate", source.id, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["status"], result["attempt"]) == ("committed", RETRIES + 2)
    assert fake.count == RETRIES + 1, "the committing proposal is replayed, not asked again"
    receipt = ReceiptStore(home).read(review)
    assert receipt is not None and len(receipt.attempts) == NEWEST_ATTEMPTS_KEPT + 1
    interrupted, committed = receipt.attempts[-2:]
    assert (interrupted.number, interrupted.status, interrupted.error) == (
        RETRIES + 1,
        Status.INTERNAL_ERROR,
        "interrupted",
    )
    assert (committed.number, committed.status) == (RETRIES + 2, Status.COMMITTED)
    assert committed.workerSession == worker_session_id(review, RETRIES + 2)

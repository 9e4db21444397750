"""A remem from before the receipt's cap numbers its attempt by how many the receipt lists; past
the cap, with an attempt that made no worker session among the listed ones, that is a number
already used. This remem goes on from the highest number listed, never from that one: it
records none of the listed worker sessions a second time (decision 0458)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.consolidation.receipts import NEWEST_ATTEMPTS_KEPT, ReceiptStore, summary
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.consolidation.worker_log import WorkerLog, worker_session_id
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Receipt, Status
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI, status

from .conftest import Source, configure

RETRIES = NEWEST_ATTEMPTS_KEPT + 5
TOO_LARGE = NEWEST_ATTEMPTS_KEPT + 2  # what an older remem numbers its attempt after RETRIES


def _retried(home: Home, fake: FakeOpenAI, source: Source, root: Path) -> str:
    """`RETRIES` failed attempts, attempt `TOO_LARGE` refused before any worker session."""
    fake.reply(*[status(400, "bad request")] * (RETRIES + 1))
    for number in range(1, RETRIES + 1):
        configure(home, fake, root, **({"max_input_bytes": 10} if number == TOO_LARGE else {}))
        result = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
        assert result.attempt == number
    return result.review


def _older_remems_attempt(home: Home, receipt: Receipt) -> Receipt:
    """`receipt` as a remem from before the cap leaves it: its own attempt, numbered by the count
    listed, and its worker session (the evidence-too-large attempt of that number made none)."""
    log = WorkerLog(home, receipt.review, TOO_LARGE)
    log.start("rules", [], "fake", "fake-model", "the review input")
    log.end("error")
    own = receipt.attempts[-1].model_copy(
        update={"number": TOO_LARGE, "workerSession": worker_session_id(receipt.review, TOO_LARGE)}
    )
    return receipt.model_copy(update={"attempts": [*receipt.attempts, own]})


def test_attempts_go_on_past_the_highest_number_an_older_remem_left(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    review = _retried(home, fake, source, tmp_path / "dsh-sessions")
    store = ReceiptStore(home)
    receipt = store.read(review)
    assert receipt is not None
    assert [(a.status, a.workerSession) for a in receipt.attempts if a.number == TOO_LARGE] == [
        (Status.EVIDENCE_TOO_LARGE, None)
    ]
    shared = _older_remems_attempt(home, receipt)
    store.write(shared)
    dropped = RETRIES - 1 - NEWEST_ATTEMPTS_KEPT
    assert f"\n{dropped} attempt(s) after the first are not listed" in summary(shared)
    monkeypatch.setenv(NO_DAEMON_ENV, "1")
    done = remem(home, "consolidate", source.id, "--json")
    assert json.loads(done.stdout)["attempt"] == RETRIES + 1, done.stderr
    after = store.read(review)
    assert after is not None
    twice = [n for n, times in Counter(a.number for a in after.attempts).items() if times > 1]
    assert twice == [TOO_LARGE], "only the number the older remem used again is listed twice"
    assert [a.workerSession for a in after.attempts if a.number == TOO_LARGE] == [
        None,
        worker_session_id(review, TOO_LARGE),
    ]
    assert after.attempts[-1].status is Status.PROVIDER_FAILED

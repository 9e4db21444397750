"""A review whose receipt was removed finds its own worker sessions again, and only its own
(decision 0458): they are looked for by the ids the review's attempt numbers derive, and only
those the new receipt lists are read back; a crashed writer's temp goes from the others too."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.cli.output import EXIT_PROBLEMS
from remem.daemon.consolidation import attempts
from remem.daemon.consolidation.receipts import NEWEST_ATTEMPTS_KEPT, ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.consolidation.worker_log import worker_log_path, worker_session_id
from remem.daemon.fsutil import temp_path_for
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI, status

from .conftest import Source, write_source

REFUSED = status(400, "bad request")


def _failed(home: Home, session: str, times: int) -> str:
    """`times` attempts of `session`'s review, each refused by the provider; the review."""
    for _ in range(times):
        result = asyncio.run(Consolidator(home).consolidate(session, lambda phase, data: None))
        assert result.status is Status.PROVIDER_FAILED
    return result.review


def _again(home: Home, session: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.setenv(NO_DAEMON_ENV, "1")
    done = remem(home, "consolidate", session, "--json")
    assert done.returncode == EXIT_PROBLEMS, done.stderr  # provider-failed, said as JSON
    return json.loads(done.stdout)


def _stale_temp(home: Home, review: str, number: int) -> Path:
    """A temp a writer of attempt `number`'s worker session left when its process died."""
    log = worker_log_path(home, worker_session_id(review, number))
    assert log is not None
    temp = temp_path_for(log)
    temp.write_bytes(b"half a log")
    return temp


def test_another_sessions_worker_sessions_are_not_taken_for_this_ones_attempts(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = write_source(tmp_path / "dsh-sessions", str(tmp_path / "other-project"), seed=2)
    fake.reply(*[REFUSED] * 6)
    review = _failed(home, source.id, 1)
    others = _failed(home, other.id, 4)
    store = ReceiptStore(home)
    store.path(review).unlink()
    result = _again(home, source.id, monkeypatch)
    assert (result["review"], result["status"], result["attempt"]) == (review, "provider-failed", 2)
    receipt = store.read(review)
    assert receipt is not None
    assert [(a.number, a.status, a.error, a.provider, a.model) for a in receipt.attempts[:1]] == [
        (1, Status.INTERNAL_ERROR, "interrupted", "fake", "fake-model")
    ]
    assert [a.workerSession for a in receipt.attempts] == [worker_session_id(review, n) for n in (1, 2)]
    other_receipt = store.read(others)
    assert other_receipt is not None and [a.number for a in other_receipt.attempts] == [1, 2, 3, 4]


def test_a_removed_receipt_past_the_cap_lists_what_its_worker_sessions_recorded(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    retries = NEWEST_ATTEMPTS_KEPT + 5
    fake.reply(*[REFUSED] * (retries + 1))
    review = _failed(home, source.id, retries)
    store = ReceiptStore(home)
    store.path(review).unlink()
    dropped, listed = _stale_temp(home, review, 2), _stale_temp(home, review, retries)
    result = _again(home, source.id, monkeypatch)
    assert (result["review"], result["attempt"]) == (review, retries + 1)
    receipt = store.read(review)
    assert receipt is not None
    newest = range(retries + 2 - NEWEST_ATTEMPTS_KEPT, retries + 2)
    assert [a.number for a in receipt.attempts] == [1, *newest]
    assert [a.workerSession for a in receipt.attempts] == [
        worker_session_id(review, a.number) for a in receipt.attempts
    ]
    found = receipt.attempts[:-1]  # read back from their worker sessions, closed as interrupted
    assert {(a.status, a.error, a.provider, a.model) for a in found} == {
        (Status.INTERNAL_ERROR, "interrupted", "fake", "fake-model")
    }
    assert not dropped.exists() and not listed.exists(), "a crashed writer's temps go, listed or not"


def test_only_the_attempts_the_receipt_goes_on_listing_are_read_back(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each worker session holds a whole review input: a removed receipt's many retries are
    not all read back, only the first and newest the new receipt lists (and the last again,
    to see whether its proposal can be adopted)."""
    retries = NEWEST_ATTEMPTS_KEPT + 5
    fake.reply(*[REFUSED] * (retries + 1))
    review = _failed(home, source.id, retries)
    ReceiptStore(home).path(review).unlink()
    read_back, read = attempts.read_back, []
    monkeypatch.setattr(attempts, "read_back", lambda path: read.append(path) or read_back(path))
    _failed(home, source.id, 1)
    assert 0 < len(read) <= NEWEST_ATTEMPTS_KEPT + 2

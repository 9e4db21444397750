"""A crash at every fault point of a consolidation or a fork never blocks the next request.

Each test kills the process doing the work (the CLI with `--no-daemon`, else the daemon) at one
fault point, then asks again in the same mode: the answer is terminal, the model was asked at
most once per attempt, and the receipt keeps every attempt. The list of points is checked
against the points a real consolidation reaches (each time it reaches them), so a new one
cannot be left untested.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.daemon import faults
from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.consolidation.worker_log import worker_log_path
from remem.daemon.forks.child import child_id
from remem.daemon.fsutil import is_temp_name
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.consolidation.conftest import Source, both_scopes
from tests.fake_openai import FakeOpenAI, tool_call
from tests.forks.points import BEFORE_PUBLISH

from .helpers import Reached, crash_at, remem

pytestmark = pytest.mark.slow

# Where a crash leaves the review, and so how the next request finishes it.
NEW_ATTEMPT = "the attempt is closed as interrupted and a new one asks the model"
ADOPTED = "the attempt's final proposal is committed without the model"
SETTLED = "the committing receipt is settled without the model, before the request reads memory"
COMPLETE = "the receipt is final; only its mark is left, and dropped"
FRESH = "no receipt was written, only its temp: the next request reviews from the start"
CONSOLIDATION_POINTS: dict[str, str] = {
    "consolidation.receipt.after-temp-write": FRESH,  # the running receipt's
    "consolidation.after-attempt-receipt": NEW_ATTEMPT,
    "sessions.writer.after-temp-write": NEW_ATTEMPT,
    "sessions.writer.after-link": NEW_ATTEMPT,
    "sessions.writer.after-publish": NEW_ATTEMPT,
    "sessions.writer.mid-append": NEW_ATTEMPT,  # the step holding the proposal is torn
    "sessions.writer.after-append": ADOPTED,
    "sessions.writer.mid-append@2": ADOPTED,  # the attempt's turn/end is torn
    "sessions.writer.after-append@2": ADOPTED,
    "consolidation.after-committing-mark": ADOPTED,
    "consolidation.receipt.after-temp-write@2": ADOPTED,  # the committing receipt's
    "consolidation.after-committing-receipt": SETTLED,
    "memory.global.after-temp-write": SETTLED,
    "memory.global.after-exchange": SETTLED,
    "consolidation.after-global-commit": SETTLED,
    "memory.workspace.after-temp-files": SETTLED,
    "memory.workspace.after-journal": SETTLED,
    "memory.workspace.mid-rename": SETTLED,
    "memory.workspace.before-journal-removal": SETTLED,
    "consolidation.after-workspace-commit": SETTLED,
    "consolidation.before-committed-receipt": SETTLED,
    "history.before-entry": SETTLED,  # Global's entry (its memory is committed)
    "history.after-objects": SETTLED,
    "history.after-ref": SETTLED,
    "history.before-entry@2": SETTLED,  # the workspace's entry
    "history.after-objects@2": SETTLED,
    "history.after-ref@2": SETTLED,
    "consolidation.receipt.after-temp-write@3": SETTLED,  # the committed receipt's
    "consolidation.after-final-receipt": COMPLETE,
}
MODES = ["no-daemon", "daemon"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> str:
    """The CLI in-process or through the daemon (set after `fake`, which routes to the daemon)."""
    if request.param == "no-daemon":
        monkeypatch.setenv(NO_DAEMON_ENV, "1")
    return str(request.param)


@pytest.fixture
def reached(monkeypatch: pytest.MonkeyPatch) -> Iterator[Reached]:
    recorder = Reached()
    monkeypatch.setattr(faults, "_ARMED", (recorder, 0))
    yield recorder


def consolidate(home: Home, session: str) -> dict[str, Any]:
    done = remem(home, "consolidate", session, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def attempts(home: Home, review: str) -> list[tuple[int, str, str | None]]:
    receipt = ReceiptStore(home).read(review)
    assert receipt is not None
    return [(a.number, a.status.value, a.error) for a in receipt.attempts]


def test_the_points_are_those_a_consolidation_reaches(
    home: Home, fake: FakeOpenAI, source: Source, reached: Reached
) -> None:
    fake.reply(tool_call(both_scopes(source)))
    result = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
    assert result.status.value == "committed"
    # A merge of the small packs follows one history entry in PACK_EVERY, chosen by its commit
    # id (which holds its time): housekeeping after the entry is written, no consolidation's own
    # point, and killed in tests/memory/test_histfix_merge_kill.py. Reached one run in 16 here.
    own = {point for point in reached.crashes() if not point.startswith("history.merge.")}
    assert own == set(CONSOLIDATION_POINTS)
    registered = {p for p in faults.POINTS if p.startswith("consolidation.")}
    assert registered <= set(reached.points), "every consolidation point is on this path"


@pytest.mark.parametrize("point", sorted(CONSOLIDATION_POINTS))
def test_a_crash_at_any_point_of_a_consolidation_never_blocks_the_next(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch, mode: str, point: str
) -> None:
    fake.reply(tool_call(both_scopes(source)), tool_call(both_scopes(source)))
    crash_at(point, home, monkeypatch, "consolidate", source.id, "--json")
    asked = fake.count
    result = consolidate(home, source.id)
    assert result["status"] == "committed"
    history = attempts(home, result["review"])
    if CONSOLIDATION_POINTS[point] == NEW_ATTEMPT:
        assert history == [(1, "internal-error", "interrupted"), (2, "committed", None)]
        assert (result["recovered"], fake.count) == (False, asked + 1)
        leftovers = [p for p in home.sessions.rglob("*") if is_temp_name(p.name)]
        assert leftovers == [], "the crashed writer's temp file is removed"
    else:
        assert history == [(1, "committed", None)]
        # A settled review was finished by the process (or daemon) start, before the request.
        recovered = CONSOLIDATION_POINTS[point] == ADOPTED
        assert (result["recovered"], fake.count) == (recovered, 1), "no second model call"
    assert asked <= 1 and fake.count <= len(history), "at most one model call per attempt"
    store = MemoryStore(home)
    assert store.read_global().content == "Prefers terse answers.\n"
    assert [r.name for r in store.read_workspace(WorkspaceId.from_cwd(source.cwd)).records] == ["prefer-uv"]
    receipt = ReceiptStore(home).read(result["review"])
    assert receipt is not None and receipt.history is not None
    for key, named in (
        (None, receipt.history.globalEntry),
        (WorkspaceId.from_cwd(source.cwd).key, receipt.history.workspaceEntry),
    ):
        [entry] = store.history.log(key)  # one entry per scope, crash or not, named by the receipt
        assert named == entry.id
        if entry.actor.kind == "recovered":  # the crash fell between a commit point and its entry
            assert CONSOLIDATION_POINTS[point] == SETTLED, point
        else:
            assert (entry.actor.kind, entry.actor.review, entry.actor.session) == (
                "consolidation",
                result["review"],
                source.id,
            )
    asked = fake.count
    again = consolidate(home, source.id)
    assert (again["status"], again["recovered"], fake.count) == ("committed", False, asked)


@pytest.mark.parametrize("point", ["sessions.writer.after-publish", "sessions.writer.after-append"])
def test_a_worker_session_its_receipt_never_named_is_adopted(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """What remem before receipt-first attempts left: a worker session and no trace of it."""
    monkeypatch.setenv(NO_DAEMON_ENV, "1")
    fake.reply(tool_call(both_scopes(source)), tool_call(both_scopes(source)))
    crash_at(point, home, monkeypatch, "consolidate", source.id, "--json")
    [crashed] = ReceiptStore(home).all()
    review = crashed.review
    ReceiptStore(home).path(review).unlink()
    result = consolidate(home, source.id)
    assert result["status"] == "committed" and result["review"] == review
    receipt = ReceiptStore(home).read(review)
    assert receipt is not None and receipt.attempts[0].provider == "fake"
    assert receipt.attempts[0].workerSession is not None
    assert worker_log_path(home, receipt.attempts[0].workerSession) is not None
    assert fake.count == 1, "asked once: before the crash with the proposal, else after it"
    if point == "sessions.writer.after-append":  # it holds the final proposal
        assert attempts(home, review) == [(1, "committed", None)]
    else:
        assert attempts(home, review) == [(1, "internal-error", "interrupted"), (2, "committed", None)]


def test_a_proposal_made_on_other_memory_is_not_adopted(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(NO_DAEMON_ENV, "1")
    fake.reply(tool_call(both_scopes(source)), tool_call(both_scopes(source)))
    crash_at("sessions.writer.after-append", home, monkeypatch, "consolidate", source.id, "--json")
    home.global_file.write_text("Written by hand after the crash.\n")
    result = consolidate(home, source.id)
    assert result["status"] == "committed" and result["recovered"] is False and fake.count == 2
    assert "Written by hand after the crash." in fake.requests[-1]["messages"][1]["content"]
    assert attempts(home, result["review"]) == [(1, "internal-error", "interrupted"), (2, "committed", None)]


FORK_POINTS = sorted(p for p in faults.POINTS if p.startswith("fork."))


@pytest.mark.parametrize("point", FORK_POINTS)
def test_a_crash_at_any_point_of_a_fork_never_blocks_the_retry(
    home: Home, source: Source, monkeypatch: pytest.MonkeyPatch, mode: str, point: str, tmp_path: Path
) -> None:
    fork = ("sessions", "fork", source.id, "--op-id", "op-1", "--json")
    crash_at(point, home, monkeypatch, *fork)
    retried = remem(home, *fork)
    assert retried.returncode == 0, retried.stderr
    result = json.loads(retried.stdout)
    assert result["child"] == child_id("op-1")
    assert result["created"] is (point in BEFORE_PUBLISH)
    logs = sorted(source.path.parent.parent.rglob("session.jsonl*"))
    assert len(logs) == 2 and [p for p in tmp_path.rglob("*") if is_temp_name(p.name)] == []
    other = json.loads(remem(home, "sessions", "fork", source.id, "--op-id", "op-2", "--json").stdout)
    assert other["created"] is True and other["child"] == child_id("op-2")
